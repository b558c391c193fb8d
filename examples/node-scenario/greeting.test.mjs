// The greeting: one question, one answer. Run under `llmproxy mock
// --scenario scenario.yaml -- npm test`, which points the SDK at the mock
// through OPENAI_BASE_URL: no baseURL here, no header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

test('the model greets back', async () => {
  const client = new OpenAI();
  const c = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello there' }],
  });
  assert.equal(c.choices[0].message.content, 'Hello! How can I help?');
});
