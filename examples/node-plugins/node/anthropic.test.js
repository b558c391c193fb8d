// No import of @llmproxy/test/node: `node --import @llmproxy/test/node --test`
// (the test:node script) loads it before this file.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { askAnthropic, trace } from '../clients.js';

test('streams the weather in Tokyo', async () => {
  trace('node/anthropic');
  assert.equal(await askAnthropic(), 'You asked: What is the weather in Tokyo? It is sunny.');
});
