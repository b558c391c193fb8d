export default {
  testMatch: ['<rootDir>/jest/**/*.test.js'],
  transform: {},
  globalSetup: '@llmproxy/test/jest/global-setup',
  globalTeardown: '@llmproxy/test/jest/global-teardown',
  setupFilesAfterEnv: ['@llmproxy/test/jest/setup'],
};
