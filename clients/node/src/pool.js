// One proxy per test worker. A proxy serves one session at a time, and the
// workers of vitest and jest run test files at the same time, so the
// runner's global setup starts one proxy per worker slot (vitest's
// VITEST_POOL_ID and jest's JEST_WORKER_ID number the workers running at
// once from 1, and a new worker takes the number of one that ended), and
// each worker's setup file points its SDKs at the proxy of its slot. The
// proxies live as long as the run, so a worker that ends leaves nothing
// running, and the global teardown stops them all.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { modeFromEnv, sdkEnv, startProxy } from './proxy.js';
import { ControlClient } from './control.js';
import { TestSessions } from './session.js';

/** The variable that carries the pool from the global setup to the workers. */
export const poolVar = 'LLMPROXY_TEST_POOL';

/**
 * What the workers need to know about the pool.
 * @typedef {{urls: string[], root: string, mode: string}} PoolInfo
 */

/**
 * Starts count proxies for a run whose project root is root.
 * @param {{count: number, root: string, env?: NodeJS.ProcessEnv}} options
 * @returns {Promise<{info: PoolInfo, stop: () => Promise<void>}>}
 */
export async function startPool({ count, root, env = process.env }) {
  if (!Number.isInteger(count) || count < 1) throw new Error(`llmproxy: a pool of ${count} proxies`);
  const mode = modeFromEnv(env);
  const cassetteDir = path.resolve(root, env.LLMPROXY_CASSETTE_DIR || '.');
  await mkdir(cassetteDir, { recursive: true });
  /** @type {import('./proxy.js').Proxy[]} */
  const proxies = [];
  const stop = async () => {
    await Promise.all(proxies.map((p) => p.stop()));
  };
  try {
    for (let i = 0; i < count; i++) proxies.push(await startProxy({ mode, cassetteDir, env, cwd: root }));
  } catch (err) {
    await stop();
    throw err;
  }
  return { info: { urls: proxies.map((p) => p.url), root, mode }, stop };
}

/**
 * The pool carried in env by poolVar.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {PoolInfo}
 */
export function poolFromEnv(env = process.env) {
  const raw = env[poolVar];
  if (!raw) {
    throw new Error(`llmproxy: ${poolVar} is not set: the runner's global setup (@llmproxy/test/vitest/global-setup or /jest/global-setup) did not run`);
  }
  return JSON.parse(raw);
}

/**
 * Points this worker's SDKs at the proxy of its slot (setting process.env)
 * and returns the worker's sessions.
 * @param {PoolInfo} info
 * @param {string | undefined} slot the worker's number, 1-based ("1" when unset: a run in band)
 * @param {string} slotVar the variable slot came from, for the error
 * @returns {TestSessions}
 */
export function workerSessions(info, slot, slotVar) {
  const n = Number(slot ?? '1');
  const url = info.urls[n - 1];
  if (!url) {
    throw new Error(`llmproxy: this worker is ${slotVar}=${slot} but the global setup started ${info.urls.length} proxies; ` +
      'set the runner\'s maximum number of workers in its config so the global setup sees it');
  }
  Object.assign(process.env, sdkEnv(url, { placeholders: info.mode === 'replay' }));
  return new TestSessions({
    control: new ControlClient(url),
    mode: info.mode,
    failOnUnused: process.env.LLMPROXY_FAIL_ON_UNUSED === '1',
  });
}
