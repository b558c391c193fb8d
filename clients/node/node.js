// node:test helper: loading it starts one llmproxy for this test file's
// process (node --test runs each file in its own process), points the SDKs
// at it, and gives each test of the file its own cassette session:
// cassettes/<test file without extension>/<test name>.cassette. A request
// that missed fails its test with the proxy's difference.
//
//   node --import @llmproxy/test/node --test      // every test file, before it loads
//
// or, in a test file whose modules build no SDK client while they load:
//
//   import '@llmproxy/test/node';
//
// (An ES module's imports are evaluated in order, but one does not wait for
// an earlier one's top-level await: the variables are set in time for code
// that runs in a test, not for a sibling module's top level. --import waits.)
//
// The proxy's cassette directory is LLMPROXY_CASSETTE_DIR, else the working
// directory (where `node --test` runs); the mode is LLMPROXY_MODE (replay
// unless set). The proxy is stopped when the process exits.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach } from 'node:test';
import { modeFromEnv, sdkEnv, startProxy } from './src/proxy.js';
import { cassettePath, TestSessions } from './src/session.js';

const root = process.cwd();
const mode = modeFromEnv();

const cassetteDir = path.resolve(root, process.env.LLMPROXY_CASSETTE_DIR || '.');
await mkdir(cassetteDir, { recursive: true });

/** The proxy of this test process. */
export const proxy = await startProxy({ mode, cassetteDir });

/** Its control client: verify, scenarios and sessions by hand. */
export const control = proxy.control;

Object.assign(process.env, sdkEnv(proxy.url, { placeholders: mode === 'replay' }));

const sessions = new TestSessions({ control, mode, failOnUnused: process.env.LLMPROXY_FAIL_ON_UNUSED === '1' });

beforeEach(async (t) => {
  const c = /** @type {any} */ (t);
  const file = c.filePath ?? process.argv[1];
  const name = c.fullName ?? t.name;
  await sessions.begin(cassettePath(root, file, name), name);
});

afterEach(async (t) => {
  const failure = await sessions.end();
  if (!failure) return;
  // node:test reports one error a test: when the test failed already (the
  // SDK's error on the miss), this hook's error is dropped, so the misses
  // go to the test's diagnostics too.
  t.diagnostic(failure);
  throw new Error(failure);
});
