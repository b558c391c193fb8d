import { expect, test } from 'vitest';
import { askOpenAI, city, trace } from '../clients.js';

test('answers the weather in a city', async () => {
  trace('vitest/openai');
  expect(await askOpenAI()).toBe(`You asked: What is the weather in ${city}? It is sunny.`);
});
