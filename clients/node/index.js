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
