// Starting and stopping an llmproxy process for a test process, and the
// environment that points the common SDKs at it (the same variables
// `llmproxy replay -- CMD` sets: cmd/llmproxy/run.go sdkEnv).

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ControlClient } from './control.js';

/** The API key SDKs get in replay and mock where none is set: no provider accepts it (run.go placeholderKey). */
export const placeholderKey = 'llmproxy-placeholder-key';

/** The modes a proxy command and a session take. */
export const modes = ['replay', 'record', 'auto'];

/** How long a starting proxy has to print its listening line, by default. */
const defaultStartTimeoutMs = 30_000;

/** How much of the proxy's stderr is kept to explain a failure. */
const logTail = 64 * 1024;

/**
 * The test mode: env LLMPROXY_MODE, replay when unset.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {'replay' | 'record' | 'auto'}
 */
export function modeFromEnv(env = process.env) {
  const mode = env.LLMPROXY_MODE || 'replay';
  if (!modes.includes(mode)) {
    throw new Error(`llmproxy: LLMPROXY_MODE=${JSON.stringify(mode)} is not one of ${modes.join(', ')}`);
  }
  return /** @type {'replay' | 'record' | 'auto'} */ (mode);
}

/**
 * The variables that point the common SDKs at the proxy at url, as
 * `llmproxy CMD -- ...` sets them: base URLs always, and with placeholders
 * an API key for each provider whose key env lacks.
 * @param {string} url http://HOST:PORT
 * @param {{placeholders?: boolean, env?: NodeJS.ProcessEnv}} [options]
 * @returns {Record<string, string>}
 */
export function sdkEnv(url, { placeholders = false, env = process.env } = {}) {
  /** @type {Record<string, string>} */
  const out = {
    LLMPROXY_URL: url,
    OPENAI_BASE_URL: url + '/v1',
    ANTHROPIC_BASE_URL: url + '/anthropic',
    GOOGLE_GEMINI_BASE_URL: url + '/gemini',
    OLLAMA_HOST: url + '/ollama',
  };
  if (placeholders) {
    for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY']) {
      if (!env[key]) out[key] = placeholderKey;
    }
  }
  return out;
}

/**
 * Where the llmproxy binary is: LLMPROXY_BIN; else the npm package
 * `llmproxy` resolvable from cwd (its exported binaryPath/getBinaryPath, else
 * its bin script run by this node); else `llmproxy` on PATH.
 * @param {{env?: NodeJS.ProcessEnv, cwd?: string}} [options]
 * @returns {Promise<{command: string, args: string[], from: string}>}
 */
export async function findBinary({ env = process.env, cwd = process.cwd() } = {}) {
  if (env.LLMPROXY_BIN) return { command: env.LLMPROXY_BIN, args: [], from: 'LLMPROXY_BIN' };
  const require = createRequire(path.join(cwd, 'noop.js'));
  let pkgFile;
  try {
    pkgFile = require.resolve('llmproxy/package.json');
  } catch {
    return { command: 'llmproxy', args: [], from: 'PATH' };
  }
  const pkg = require(pkgFile);
  try {
    const mod = await import(pathToFileURL(require.resolve('llmproxy')).href);
    const bin = typeof mod.getBinaryPath === 'function' ? await mod.getBinaryPath() : mod.binaryPath;
    if (typeof bin === 'string' && bin) return { command: bin, args: [], from: `npm package llmproxy (${pkgFile})` };
  } catch {
    // No importable main: fall back to its bin script.
  }
  const script = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.llmproxy;
  if (!script) throw new Error(`llmproxy: the npm package llmproxy at ${pkgFile} has no bin named llmproxy`);
  return { command: process.execPath, args: [path.resolve(path.dirname(pkgFile), script)], from: `npm package llmproxy (${pkgFile})` };
}

/**
 * A running llmproxy started by startProxy.
 * @typedef {object} Proxy
 * @property {string} url http://127.0.0.1:PORT
 * @property {ControlClient} control its control API
 * @property {() => string} log the tail of its stderr
 * @property {() => Promise<void>} stop ends it (SIGTERM, then SIGKILL after 10 s) and waits for it
 * @property {import('node:child_process').ChildProcess} child
 */

/**
 * Starts `llmproxy MODE --cassette-dir DIR --listen 127.0.0.1:0` and waits
 * for its listening line. The child does not keep this process alive, and
 * is killed if this process exits without stopping it.
 * @param {{mode?: string, cassetteDir: string, args?: string[], env?: NodeJS.ProcessEnv, cwd?: string, startTimeoutMs?: number}} options
 *   mode: replay, record, auto or mock (default: LLMPROXY_MODE); args: extra flags;
 *   startTimeoutMs: how long it has to print its listening line (default 30 s)
 * @returns {Promise<Proxy>}
 */
export async function startProxy({ mode, cassetteDir, args = [], env = process.env, cwd = process.cwd(), startTimeoutMs = defaultStartTimeoutMs }) {
  mode ??= modeFromEnv(env);
  const bin = await findBinary({ env, cwd });
  const argv = [...bin.args, mode];
  if (mode !== 'mock') argv.push('--cassette-dir', cassetteDir);
  argv.push('--listen', '127.0.0.1:0');
  if (!env.LLMPROXY_LOG_LEVEL) argv.push('--log-level', 'warn');
  argv.push(...args);
  // A listen address from the environment would be taken over ours only
  // when ours is missing; it never is, but the variable would confuse the
  // reader of a failure, so the child does not get it.
  const childEnv = { ...env };
  delete childEnv.LLMPROXY_LISTEN;
  const child = spawn(bin.command, argv, { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (s) => {
    tail = (tail + s).slice(-logTail);
    if (env.LLMPROXY_DEBUG) process.stderr.write(s);
  });
  const describe = `${bin.command} ${argv.join(' ')} (binary from ${bin.from})`;
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`did not print its listening line within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
    /** @param {Error} err */
    function fail(err) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      const hint = /** @type {any} */ (err).code === 'ENOENT'
        ? '\nSet LLMPROXY_BIN to the binary, install the npm package llmproxy, or put llmproxy on PATH.'
        : '';
      reject(new Error(`llmproxy: starting ${describe}: ${err.message}${hint}${tail ? '\nstderr:\n' + tail : ''}`));
    }
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`exited (${signal ?? 'status ' + code}) before listening`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', function onData(s) {
      out += s;
      const m = /llmproxy listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.removeListener('error', fail);
        child.stdout.removeListener('data', onData);
        child.stdout.resume();
        resolve(m[1].replace(/\/+$/, ''));
      } else if (out.length > logTail) {
        fail(new Error(`printed ${out.length} bytes without a listening line`));
      }
    });
  });
  const exited = new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(undefined);
    else child.once('exit', () => resolve(undefined));
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.unref();
  /** @type {any} */ (child.stdout).unref?.();
  /** @type {any} */ (child.stderr).unref?.();
  return {
    url,
    child,
    control: new ControlClient(url, { token: env.LLMPROXY_ADMIN_TOKEN }),
    log: () => tail,
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.ref(); // this process waits for it now
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
