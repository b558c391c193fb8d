// The weather round: the model calls the weather tool, the test sends its
// result, the model answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

test('the weather round', async () => {
  const client = new OpenAI();
  const tools = [{
    type: 'function',
    function: {
      name: 'weather',
      parameters: { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string' } } },
    },
  }];
  const messages = [{ role: 'user', content: "What's the weather in Paris?" }];
  const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
  const msg = first.choices[0].message;
  assert.equal(msg.tool_calls?.[0]?.function.name, 'weather');
  assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), { location: 'Paris', unit: 'celsius' });
  messages.push(msg, {
    role: 'tool',
    tool_call_id: msg.tool_calls[0].id,
    content: JSON.stringify({ location: 'Paris', temperature: 21, unit: 'celsius', condition: 'sunny' }),
  });
  const second = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
  assert.equal(second.choices[0].message.content, 'Paris is sunny, 21 °C.');
});
