// jest setupFilesAfterEnv entry: points the SDKs at this worker's proxy
// before the test file is loaded, and gives each test its own cassette
// session: cassettes/<test file without extension>/<full test
// name>.cassette. A request that missed fails its test with the proxy's
// difference. Jest loads this ESM file with --experimental-vm-modules (as
// it does ESM test files).

import { poolFromEnv, workerSessions } from '../src/pool.js';
import { cassettePath } from '../src/session.js';

const info = poolFromEnv();
const sessions = workerSessions(info, process.env.JEST_WORKER_ID, 'JEST_WORKER_ID');
const g = /** @type {any} */ (globalThis);

g.beforeEach(async () => {
  const { testPath, currentTestName } = g.expect.getState();
  await sessions.begin(cassettePath(info.root, testPath, currentTestName), currentTestName);
});

g.afterEach(async () => {
  const failure = await sessions.end();
  if (failure) throw new Error(failure);
});
