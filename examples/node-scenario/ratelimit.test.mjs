// A 429: the SDK retries it (as it does by default) and meets the next step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

test('a 429 is retried by the SDK', async () => {
  const client = new OpenAI();
  const c = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'are you busy?' }],
  });
  assert.equal(c.choices[0].message.content, 'Done after a retry.');
});
