// jest globalTeardown: stops the proxies @llmproxy/test/jest/global-setup started.

import { stopKey } from './global-setup.js';

export default async function globalTeardown() {
  const stop = /** @type {any} */ (globalThis)[stopKey];
  delete (/** @type {any} */ (globalThis)[stopKey]);
  await stop?.();
}
