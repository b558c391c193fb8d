// A fake OpenAI and Anthropic for recording the example's cassettes without
// a key or a network: `node fake-upstream.js` prints
// "fake upstream listening on http://127.0.0.1:PORT" and answers
//   POST /v1/chat/completions  a chat.completion, not streamed
//   POST /v1/messages          a Messages stream (SSE)
// until it is killed. The answer repeats the request's last user message so
// a recording shows which question it answered.
//
// The bytes follow real captures (/work/shared/wire, see its SOURCES.md):
// the chat.completion is laid out as openai-chat-toolcalls.response.json
// (simonw/llm test cassette, gpt-4o-mini, 2025-05): OpenAI's 2-space
// pretty-printed JSON with a trailing newline and its field order, with a
// text message in place of the tool call; the headers are a subset of
// openai-chat-toolcalls.response.headers.txt. The Messages stream is laid
// out as anthropic-messages-stream-tooluse.sse (DataDog/dd-trace-py test
// cassette, claude-3-opus, 2024-06): `event:`/`data:` frames, the padding
// spaces inside the JSON objects, and `{"type": "ping"}` with its space,
// with text deltas only; its headers follow
// anthropic-messages-tooluse.response.headers.txt.

import http from 'node:http';

/** @param {any} body */
function lastUser(body) {
  const msgs = (body.messages ?? []).filter((m) => m.role === 'user');
  const c = msgs.at(-1)?.content ?? '';
  return typeof c === 'string' ? c : c.map((p) => p.text ?? '').join('');
}

function chatCompletion(body) {
  const answer = `You asked: ${lastUser(body)} It is sunny.`;
  return JSON.stringify({
    id: 'chatcmpl-BWpGNGdPONTwxHkZVxbqctQSBDmTn',
    object: 'chat.completion',
    created: 1747163251,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{
      index: 0,
      message: { role: 'assistant', content: answer, refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: 'stop',
    }],
    usage: {
      prompt_tokens: 92,
      completion_tokens: 17,
      total_tokens: 109,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_0392822090',
  }, null, 2) + '\n';
}

function messagesStream(body) {
  const words = `You asked: ${lastUser(body)} It is sunny.`.split(/(?= )/);
  // Anthropic pads its JSON objects with spaces before the closing brace.
  const frame = (event, json, pad) => `event: ${event}\ndata: ${json.slice(0, -1)}${' '.repeat(pad)}}\n\n`;
  let out = frame('message_start', `{"type":"message_start","message":{"id":"msg_01RQXWh4UaLp6wsR9R8i8RZ3","type":"message","role":"assistant","model":"claude-3-opus-20240229","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":599,"output_tokens":2}}}`, 2);
  out += frame('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}', 2);
  out += frame('ping', '{"type": "ping"}', 0);
  words.forEach((w, i) => {
    out += frame('content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(w)}}}`, 4 + (i % 7));
  });
  out += frame('content_block_stop', '{"type":"content_block_stop","index":0}', 14);
  out += frame('message_delta', '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":' + (words.length + 2) + '}}', 3);
  out += frame('message_stop', '{"type":"message_stop"}', 3);
  return out;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"body is not JSON","type":"invalid_request_error"}}');
      return;
    }
    if (req.method === 'POST' && req.url.endsWith('/chat/completions')) {
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'openai-processing-ms': '574',
        'openai-version': '2020-10-01',
        'x-ratelimit-limit-requests': '30000',
        'x-ratelimit-remaining-requests': '29999',
        'x-ratelimit-reset-requests': '2ms',
        'x-request-id': 'req_1e7dabaf1f0dba1ec89a134d3bde8476',
      });
      res.end(chatCompletion(body));
    } else if (req.method === 'POST' && req.url.endsWith('/messages') && body.stream) {
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache',
        'anthropic-ratelimit-requests-limit': '20000',
        'anthropic-ratelimit-requests-remaining': '19998',
        'anthropic-ratelimit-requests-reset': '2026-04-06T19:03:54Z',
        'request-id': 'req_011CZo38VY8yqUd8mH92SEhh',
      });
      res.end(messagesStream(body));
    } else {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `the fake upstream has no ${req.method} ${req.url}`, type: 'not_found' } }));
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  console.log(`fake upstream listening on http://127.0.0.1:${server.address().port}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
