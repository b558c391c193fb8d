// One tool round through each Node SDK: the model asks for the weather, the
// test answers with the weather tool, the model replies. Run it under
// llmproxy, which points the SDKs at itself through the environment:
//
//   llmproxy record --cassette node.cassette -- npm test   # once, against the provider
//   llmproxy scrub  --cassette node.cassette               # tool results become fixtures
//   llmproxy replay --cassette node.cassette -- npm test   # in CI: no network, no key
//
// The project's CI records through fake providers that always answer the
// weather call with ANSWER.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { openai } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';

const ANSWER = 'It is sunny in Paris.';
const OPENAI_MODEL = 'gpt-4o-mini';
const ANTHROPIC_MODEL = 'claude-sonnet-4-5';

const weatherDescription = 'Report the current weather at a location.';
const weatherParameters = {
  type: 'object',
  properties: {
    location: { type: 'string' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['location'],
  additionalProperties: false,
};

// weather is the application's tool. Under llmproxy, a scrubbed cassette
// holds the recorded result of each call as a fixture, served at
// $LLMPROXY_URL/_llmproxy/fixtures/CALL_ID: the tool answers with it and
// runs nothing. Otherwise it "measures" a temperature that changes from run
// to run, so a replay can only match through the fixture.
async function weather(callId, args) {
  const fixture = await fetchFixture(callId);
  if (fixture !== undefined) {
    return fixture;
  }
  return {
    location: args.location,
    temperature: 15 + Math.floor(Math.random() * 10),
    unit: args.unit ?? 'celsius',
    condition: 'sunny',
  };
}

async function fetchFixture(callId) {
  const base = process.env.LLMPROXY_URL;
  if (!base) {
    return undefined;
  }
  const resp = await fetch(`${base}/_llmproxy/fixtures/${encodeURIComponent(callId)}`);
  if (resp.status === 404) {
    return undefined;
  }
  if (!resp.ok) {
    throw new Error(`fixture ${callId}: HTTP ${resp.status}: ${await resp.text()}`);
  }
  return resp.json();
}

// openaiChat: Chat Completions with the openai package.
async function openaiChat(prompt, stream) {
  const client = new OpenAI();
  const tools = [{ type: 'function', function: { name: 'weather', description: weatherDescription, parameters: weatherParameters } }];
  const messages = [{ role: 'user', content: prompt }];
  const ask = (body) => (stream ? client.chat.completions.stream(body).finalChatCompletion() : client.chat.completions.create(body));

  const first = (await ask({ model: OPENAI_MODEL, messages, tools })).choices[0].message;
  assert.equal(first.tool_calls?.length, 1, 'one tool call');
  const call = first.tool_calls[0];
  assert.equal(call.function.name, 'weather');
  const result = await weather(call.id, JSON.parse(call.function.arguments));
  messages.push(
    { role: 'assistant', content: first.content, tool_calls: [{ id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] },
    { role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) },
  );
  return (await ask({ model: OPENAI_MODEL, messages, tools })).choices[0].message.content;
}

// openaiResponses: the Responses API with the openai package.
async function openaiResponses(prompt, stream) {
  const client = new OpenAI();
  const tools = [{ type: 'function', name: 'weather', description: weatherDescription, parameters: weatherParameters, strict: false }];
  const ask = (body) => (stream ? client.responses.stream(body).finalResponse() : client.responses.create(body));

  let input = [{ role: 'user', content: prompt }];
  const first = await ask({ model: OPENAI_MODEL, input, tools });
  const calls = first.output.filter((item) => item.type === 'function_call');
  assert.equal(calls.length, 1, 'one function call');
  const call = calls[0];
  const result = await weather(call.call_id, JSON.parse(call.arguments));
  input = [
    ...input,
    { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
    { type: 'function_call_output', call_id: call.call_id, output: JSON.stringify(result) },
  ];
  const second = await ask({ model: OPENAI_MODEL, input, tools });
  return second.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content)
    .filter((part) => part.type === 'output_text')
    .map((part) => part.text)
    .join('');
}

// anthropicMessages: the Messages API with the @anthropic-ai/sdk package.
async function anthropicMessages(prompt, stream) {
  const client = new Anthropic();
  const tools = [{ name: 'weather', description: weatherDescription, input_schema: weatherParameters }];
  const messages = [{ role: 'user', content: prompt }];
  const ask = (body) => (stream ? client.messages.stream(body).finalMessage() : client.messages.create(body));

  const first = await ask({ model: ANTHROPIC_MODEL, max_tokens: 1024, messages, tools });
  const uses = first.content.filter((block) => block.type === 'tool_use');
  assert.equal(uses.length, 1, 'one tool_use block');
  const use = uses[0];
  const result = await weather(use.id, use.input);
  messages.push(
    { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: JSON.stringify(result) }] },
  );
  const second = await ask({ model: ANTHROPIC_MODEL, max_tokens: 1024, messages, tools });
  return second.content.filter((block) => block.type === 'text').map((block) => block.text).join('');
}

// aiSDK: the ai package's generateText or streamText with a tool, two steps.
async function aiSDK(model, prompt, stream) {
  const tools = {
    weather: tool({
      description: weatherDescription,
      inputSchema: jsonSchema(weatherParameters),
      execute: (args, { toolCallId }) => weather(toolCallId, args),
    }),
  };
  const options = { model, tools, prompt, stopWhen: stepCountIs(2), maxRetries: 0 };
  if (stream) {
    const result = streamText({ ...options, onError: ({ error }) => { throw error; } });
    return await result.text;
  }
  return (await generateText(options)).text;
}

// @ai-sdk/anthropic reads ANTHROPIC_BASE_URL as the versioned API root
// (it posts to BASE/messages), while @anthropic-ai/sdk adds /v1 itself.
const aiAnthropic = createAnthropic(
  process.env.ANTHROPIC_BASE_URL ? { baseURL: `${process.env.ANTHROPIC_BASE_URL}/v1` } : {},
);

const clients = {
  'openai chat': openaiChat,
  'openai responses': openaiResponses,
  'anthropic messages': anthropicMessages,
  'ai-sdk openai responses': (prompt, stream) => aiSDK(openai(OPENAI_MODEL), prompt, stream),
  'ai-sdk openai chat': (prompt, stream) => aiSDK(openai.chat(OPENAI_MODEL), prompt, stream),
  'ai-sdk anthropic': (prompt, stream) => aiSDK(aiAnthropic(ANTHROPIC_MODEL), prompt, stream),
};

for (const [name, run] of Object.entries(clients)) {
  for (const stream of [false, true]) {
    const label = `${name}${stream ? ', streamed' : ''}`;
    test(label, async () => {
      // Each test asks its own question, so no two tests send the same request.
      const text = await run(`What is the weather in Paris? (${label})`, stream);
      assert.equal(text, ANSWER);
    });
  }
}
