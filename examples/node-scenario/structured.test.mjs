// Structured output: the schema comes from a zod object through npm
// openai's zodResponseFormat, and chat.completions.parse checks and parses
// the answer. One step makes a value from the schema (json: {generate:
// true}); the other answers a given value, and the conversation goes on
// after it with no header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

const Weather = z.object({
  city: z.string(),
  temperature: z.number(),
  unit: z.enum(['celsius', 'fahrenheit']),
});
const response_format = zodResponseFormat(Weather, 'weather');

test('a value made from the schema parses', async () => {
  const client = new OpenAI();
  const c = await client.chat.completions.parse({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'The forecast for Paris, please.' }],
    response_format,
  });
  // The minimal valid value: empty string, zero, the enum's first value.
  assert.deepEqual(c.choices[0].message.parsed, { city: '', temperature: 0, unit: 'celsius' });
});

test('a given value parses, and the conversation goes on after it', async () => {
  const client = new OpenAI();
  const messages = [{ role: 'user', content: 'A report on Paris, please.' }];
  const c = await client.chat.completions.parse({ model: 'gpt-4o-mini', messages, response_format });
  const msg = c.choices[0].message;
  assert.deepEqual(msg.parsed, { city: 'Paris', temperature: 21, unit: 'celsius' });
  messages.push({ role: 'assistant', content: msg.content }, { role: 'user', content: 'Thanks!' });
  const next = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, response_format });
  assert.equal(next.choices[0].message.content, 'Glad it helps.');
});
