import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['vitest/**/*.test.js'],
    globalSetup: ['@llmproxy/test/vitest/global-setup'],
    setupFiles: ['@llmproxy/test/vitest/setup'],
  },
});
