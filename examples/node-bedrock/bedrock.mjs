// The AWS SDK for JavaScript's Bedrock Runtime client through llmproxy:
// Converse, then a ConverseStream tool round (the model asks for the
// weather, the script answers with the weather tool, the model replies).
// It prints one JSON line per answer: what the application saw.
//
// Where it sends, from the environment:
//
//   BEDROCK_ENDPOINT  llmproxy's Bedrock route, e.g. http://127.0.0.1:7878/bedrock
//   BEDROCK_SIGN_FOR  (record) the upstream the requests are signed for, e.g.
//                     https://bedrock-runtime.us-east-1.amazonaws.com: the SDK
//                     signs for it as usual and each signed request is then
//                     sent to BEDROCK_ENDPOINT with its signed Host, as AWS
//                     checks the signature against host and path. Unset
//                     (replay, mock), the endpoint override alone is enough.
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN  static credentials
//   BEDROCK_MODEL, BEDROCK_PROMPT  the model id and the question
//
// llmproxy's own tests (proxy/bedrock_node_test.go) run it against a fake
// Bedrock in record, replay with other credentials, and mock.

import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const endpoint = required('BEDROCK_ENDPOINT');
const signFor = process.env.BEDROCK_SIGN_FOR;
const model = process.env.BEDROCK_MODEL ?? 'anthropic.claude-3-5-haiku-20241022-v1:0';
const prompt = process.env.BEDROCK_PROMPT ?? "What's the weather in Paris?";

function required(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
}

const client = new BedrockRuntimeClient({
  region: process.env.AWS_REGION ?? 'us-east-1',
  endpoint: signFor ?? endpoint,
  credentials: {
    accessKeyId: required('AWS_ACCESS_KEY_ID'),
    secretAccessKey: required('AWS_SECRET_ACCESS_KEY'),
    sessionToken: process.env.AWS_SESSION_TOKEN,
  },
  maxAttempts: 1,
  // The client's default handler speaks HTTP/2, which llmproxy's plain
  // http:// listener does not: HTTP/1.1 carries the event streams as well.
  requestHandler: new NodeHttpHandler(),
});

if (signFor) {
  // After signing: send the request to llmproxy, keeping the signed Host
  // header and path (under llmproxy's route prefix).
  const to = new URL(endpoint);
  client.middlewareStack.addRelativeTo(
    (next) => async (args) => {
      const req = args.request;
      req.headers.host = req.headers.host ?? req.hostname;
      req.protocol = to.protocol;
      req.hostname = to.hostname;
      req.port = to.port ? Number(to.port) : undefined;
      req.path = to.pathname.replace(/\/$/, '') + req.path;
      return next(args);
    },
    { relation: 'after', toMiddleware: 'httpSigningMiddleware', name: 'viaLlmproxy' },
  );
}

const weatherTool = {
  toolSpec: {
    name: 'weather',
    description: 'Report the current weather at a location.',
    inputSchema: {
      json: {
        type: 'object',
        properties: { location: { type: 'string' }, unit: { type: 'string' } },
        required: ['location'],
      },
    },
  },
};

// weather is the application's tool.
function weather(args) {
  return { location: args.location, temperature: 21, unit: args.unit ?? 'celsius', condition: 'sunny' };
}

function user(text) {
  return { role: 'user', content: [{ text }] };
}

async function converse() {
  const out = await client.send(new ConverseCommand({ modelId: model, messages: [user(prompt)] }));
  const content = out.output?.message?.content ?? [];
  return {
    op: 'Converse',
    text: content.map((b) => b.text ?? '').join(''),
    calls: content.filter((b) => b.toolUse).map((b) => `${b.toolUse.toolUseId}/${b.toolUse.name}/${JSON.stringify(b.toolUse.input)}`),
    stop: out.stopReason,
    usage: out.usage?.totalTokens,
  };
}

// streamTurn runs one ConverseStream request and gathers its events.
async function streamTurn(messages) {
  const out = await client.send(
    new ConverseStreamCommand({ modelId: model, messages, toolConfig: { tools: [weatherTool] } }),
  );
  const seen = { op: 'ConverseStream', text: '', call: null, input: '', stop: '', usage: 0, events: 0 };
  for await (const ev of out.stream) {
    seen.events++;
    if (ev.contentBlockStart?.start?.toolUse) {
      const tu = ev.contentBlockStart.start.toolUse;
      seen.call = { id: tu.toolUseId, name: tu.name };
    }
    if (ev.contentBlockDelta?.delta) {
      const d = ev.contentBlockDelta.delta;
      seen.text += d.text ?? '';
      seen.input += d.toolUse?.input ?? '';
    }
    if (ev.messageStop) {
      seen.stop = ev.messageStop.stopReason;
    }
    if (ev.metadata) {
      seen.usage = ev.metadata.usage?.totalTokens ?? 0;
    }
  }
  return seen;
}

// toolRound asks, runs the tool the model calls, and sends its result back.
async function toolRound() {
  const messages = [user(prompt)];
  const turns = [];
  for (let i = 0; i < 3; i++) {
    const seen = await streamTurn(messages);
    turns.push(seen);
    if (!seen.call) {
      break;
    }
    const input = JSON.parse(seen.input);
    messages.push(
      { role: 'assistant', content: [{ toolUse: { toolUseId: seen.call.id, name: seen.call.name, input } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: seen.call.id, content: [{ json: weather(input) }] } }] },
    );
  }
  return turns;
}

try {
  console.log(JSON.stringify(await converse()));
  for (const t of await toolRound()) {
    console.log(JSON.stringify(t));
  }
} catch (err) {
  console.error(err);
  process.exit(1);
}
