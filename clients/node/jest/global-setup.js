// jest globalSetup: starts one llmproxy per jest worker (see src/pool.js
// for why one per worker) and hands them to the workers through the
// environment; @llmproxy/test/jest/global-teardown stops them.
//
//   // jest.config.js
//   export default {
//     globalSetup: '@llmproxy/test/jest/global-setup',
//     globalTeardown: '@llmproxy/test/jest/global-teardown',
//     setupFilesAfterEnv: ['@llmproxy/test/jest/setup'],
//   };

import { poolVar, startPool } from '../src/pool.js';

/** The key under which the teardown finds the pool's stop function. */
export const stopKey = Symbol.for('@llmproxy/test/jest/stop');

/**
 * @param {{maxWorkers: number, rootDir: string}} globalConfig
 */
export default async function globalSetup(globalConfig) {
  // With several jest projects each runs this: the first pool serves all.
  if (/** @type {any} */ (globalThis)[stopKey]) return;
  const { info, stop } = await startPool({ count: Math.max(1, globalConfig.maxWorkers || 1), root: globalConfig.rootDir });
  // jest runs globalSetup and globalTeardown in one context, and starts its
  // workers after this with this process's environment.
  /** @type {any} */ (globalThis)[stopKey] = stop;
  process.env[poolVar] = JSON.stringify(info);
}
