// @llmproxy/test: per-test llmproxy cassettes for vitest, jest and
// node:test. This entry is the library the runner entries are built from:
// the control client, starting a proxy, and the cassette names.
//
//   vitest:    @llmproxy/test/vitest/global-setup + @llmproxy/test/vitest/setup
//   jest:      @llmproxy/test/jest/global-setup, /jest/global-teardown, /jest/setup
//   node:test: import '@llmproxy/test/node'

export { ControlClient, ControlError } from './src/control.js';
export { findBinary, modeFromEnv, placeholderKey, sdkEnv, startProxy } from './src/proxy.js';
export { cassettePath, missText, sanitize, TestSessions, unusedText } from './src/session.js';

import { ControlClient as Client } from './src/control.js';

/**
 * The control client of the proxy this worker's SDKs point at: the URL the
 * runner's setup put in LLMPROXY_URL. For verify, scenarios, or sessions by hand.
 * @returns {Client}
 */
export function control() {
  const url = process.env.LLMPROXY_URL;
  if (!url) throw new Error('llmproxy: LLMPROXY_URL is not set: no @llmproxy/test setup ran in this process');
  return new Client(url);
}
