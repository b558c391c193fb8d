import '@llmproxy/test/node';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { askOpenAI, city, trace } from '../clients.js';

test('answers the weather in a city', async () => {
  trace('node/openai');
  assert.equal(await askOpenAI(), `You asked: What is the weather in ${city}? It is sunny.`);
});
