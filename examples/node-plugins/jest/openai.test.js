import { expect, test } from '@jest/globals';
import { askOpenAI, city, trace } from '../clients.js';

test('answers the weather in a city', async () => {
  trace('jest/openai');
  expect(await askOpenAI()).toBe(`You asked: What is the weather in ${city}? It is sunny.`);
});
