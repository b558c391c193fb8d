// One round of the weather conversation through OPENAI_BASE_URL with
// fetch, as an application would make it: the model calls the weather
// tool, gets its result and answers. It prints the answer, and fails on
// anything else.
const base = process.env.OPENAI_BASE_URL;
if (!base) throw new Error('OPENAI_BASE_URL is not set');

const tools = [{
  type: 'function',
  function: {
    name: 'weather',
    description: 'Current weather for a location.',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
}];

async function chat(messages) {
  const res = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages, tools }),
  });
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
  return (await res.json()).choices[0].message;
}

const user = { role: 'user', content: "What's the weather in Paris?" };
const first = await chat([user]);
const call = first.tool_calls?.[0];
if (call?.function?.name !== 'weather') throw new Error(`no weather call: ${JSON.stringify(first)}`);
const args = JSON.parse(call.function.arguments);
if (args.location !== 'Paris') throw new Error(`weather called for ${call.function.arguments}`);
const answer = await chat([user, first, { role: 'tool', tool_call_id: call.id, content: '{"condition":"sunny"}' }]);
console.log(answer.content);
