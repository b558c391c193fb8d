// vitest setupFiles entry: in each worker, points the SDKs at the worker's
// proxy before the test file is imported, and gives each test its own
// cassette session: cassettes/<test file without extension>/<full test
// name>.cassette. A request that missed fails its test with the proxy's
// difference.

import { afterEach, beforeEach, inject } from 'vitest';
import { poolFromEnv, workerSessions } from '../src/pool.js';
import { cassettePath } from '../src/session.js';

/** @type {import('../src/pool.js').PoolInfo} */
let info;
try {
  info = /** @type {any} */ (inject)('llmproxy');
} catch {
  // vitest without provide/inject: the environment carries the pool.
}
info ??= poolFromEnv();
const sessions = workerSessions(info, process.env.VITEST_POOL_ID, 'VITEST_POOL_ID');

/**
 * The test's name with the names of its suites, "suite > test".
 * @param {any} task
 */
function fullName(task) {
  const names = [];
  for (let t = task; t && t !== task.file && t.type !== undefined && !('filepath' in t); t = t.suite) names.unshift(t.name);
  return names.join(' > ');
}

beforeEach(async (ctx) => {
  const file = ctx.task.file?.filepath ?? ctx.task.file?.name;
  const name = fullName(ctx.task);
  await sessions.begin(cassettePath(info.root, file, name), `${ctx.task.file?.name} > ${name}`);
});

afterEach(async () => {
  const failure = await sessions.end();
  if (failure) throw new Error(failure);
});
