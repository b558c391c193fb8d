// vitest globalSetup: starts one llmproxy per worker slot of the run (see
// src/pool.js for why one per worker) and hands them to the workers; the
// returned teardown stops them.
//
//   // vitest.config.js
//   export default defineConfig({ test: {
//     globalSetup: ['@llmproxy/test/vitest/global-setup'],
//     setupFiles: ['@llmproxy/test/vitest/setup'],
//   } });

import os from 'node:os';
import { poolVar, startPool } from '../src/pool.js';

/**
 * The most test files vitest runs at once with config: the worker count its
 * pools use (vitest 2 and 3: poolOptions, then maxWorkers, then the CPUs
 * less one; one without file parallelism).
 * @param {any} config vitest's resolved config
 * @returns {number}
 */
export function workerCount(config) {
  const pool = config.pool ?? 'forks';
  const options = config.poolOptions?.[pool] ?? {};
  if (config.fileParallelism === false || options.singleThread || options.singleFork) return 1;
  const cpus = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const fallback = config.watch ? Math.max(Math.floor(cpus / 2), 1) : Math.max(cpus - 1, 1);
  const n = options.maxThreads ?? options.maxForks ?? config.maxWorkers ?? fallback;
  return typeof n === 'number' && n >= 1 ? Math.floor(n) : fallback;
}

/** @param {{config: any, provide?: (key: string, value: unknown) => void}} project */
export default async function setup(project) {
  const { info, stop } = await startPool({ count: workerCount(project.config), root: project.config.root });
  project.provide?.('llmproxy', info);
  process.env[poolVar] = JSON.stringify(info);
  return stop;
}
