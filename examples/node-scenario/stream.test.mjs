// A stream cut short: the SDK reports the broken stream; asked again, the
// model tells the story whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const ask = (client) => client.chat.completions.create({
  model: 'gpt-4o-mini',
  stream: true,
  messages: [{ role: 'user', content: 'tell me a story' }],
});

test('a cut stream, then the story whole', async () => {
  const client = new OpenAI({ maxRetries: 0 });
  await assert.rejects(async () => {
    for await (const _ of await ask(client)) { /* the stream breaks */ }
  });
  let text = '';
  for await (const chunk of await ask(client)) {
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'Once upon a time.');
});
