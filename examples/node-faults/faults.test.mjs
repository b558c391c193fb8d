// The npm openai client against faults llmproxy injects into mock's
// answers (llmproxy mock --allow-header-faults -- npm test): one fault per
// request, named by the X-Llmproxy-Fault header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const fault = (spec) => ({ headers: { 'X-Llmproxy-Fault': spec } });

const greet = (client, prompt, options) => client.chat.completions.create({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: prompt }],
}, options);

const story = (client, prompt, options) => client.chat.completions.create({
  model: 'gpt-4o-mini',
  stream: true,
  messages: [{ role: 'user', content: prompt }],
}, options);

// The proxy's log (GET /_llmproxy/log) after entry seq: LLMPROXY_URL is set
// by llmproxy for `-- npm test`.
const logSince = async (seq) => {
  const res = await fetch(`${process.env.LLMPROXY_URL}/_llmproxy/log?after=${seq}&limit=1000`);
  assert.equal(res.status, 200);
  return (await res.json()).entries;
};
const lastSeq = async () => (await logSince(0)).reduce((n, e) => Math.max(n, e.seq), 0);

// The log shows the faulted request, then the retry that got the answer.
const assertRetried = (entries, spec) => {
  assert.deepEqual(entries.map((e) => [e.status, e.fault ?? '', e.fault_request ?? 0]), [[429, spec, 1], [200, '', 0]]);
};

test('a 429 with Retry-After is met by the default retry', async () => {
  const client = new OpenAI(); // maxRetries: 2
  const seq = await lastSeq();
  const answer = await greet(client, 'hello, retry me', fault('429@request=1,retry-after=10ms'));
  assert.equal(answer.choices[0].message.content, 'Hello! How can I help?');
  assertRetried(await logSince(seq), '429@request=1,retry-after=10ms');
});

test('a 429 on a stream is met by the default retry', async () => {
  const client = new OpenAI();
  const seq = await lastSeq();
  let text = '';
  for await (const chunk of await story(client, 'a story, retried', fault('429@request=1,retry-after=10ms'))) {
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'Once upon a time there was a proxy that failed on purpose.');
  assertRetried(await logSince(seq), '429@request=1,retry-after=10ms');
});

test('a 503 without retries is the SDK error of its status', async () => {
  const client = new OpenAI({ maxRetries: 0 });
  await assert.rejects(greet(client, 'hello, unavailable', fault('503')), (err) => err.status === 503);
});

test('a stream cut after its third event is an error after three chunks', async () => {
  const client = new OpenAI({ maxRetries: 0 });
  let chunks = 0;
  await assert.rejects(async () => {
    for await (const _ of await story(client, 'a story, cut', fault('cut@event=3'))) {
      chunks++;
    }
  });
  assert.equal(chunks, 3);
});

test('a first byte later than the timeout is a timeout', async () => {
  const client = new OpenAI({ maxRetries: 0, timeout: 300 });
  await assert.rejects(greet(client, 'hello, slow', fault('slow@ttfb=1m')), OpenAI.APIConnectionTimeoutError);
});

test('a stall after the headers outlasts the timeout: an AbortSignal ends it', async () => {
  // The client's timeout covers the wait for the response headers, not the
  // body: a stall after them needs a signal of the application's own.
  const client = new OpenAI({ maxRetries: 0, timeout: 300 });
  const signal = AbortSignal.timeout(500);
  await assert.rejects(greet(client, 'hello, stalled', { ...fault('stall@for=1m'), signal }),
    (err) => err.name === 'AbortError' || err instanceof OpenAI.APIUserAbortError);
});

test('a stream stalled after its second event: an AbortSignal ends the loop, without an error', async () => {
  // The SDK's stream iterator takes an abort as the end of the stream: the
  // loop ends quietly after the events that came, so the application must
  // check the signal (or the finish_reason it never got), not wait for a throw.
  const client = new OpenAI({ maxRetries: 0, timeout: 300 });
  const signal = AbortSignal.timeout(500);
  let chunks = 0;
  let finished = false;
  for await (const chunk of await story(client, 'a story, stalled', { ...fault('stall@event=2,for=1m'), signal })) {
    chunks++;
    finished ||= Boolean(chunk.choices[0]?.finish_reason);
  }
  assert.equal(chunks, 2);
  assert.equal(finished, false);
  assert.ok(signal.aborted);
});

test('a malformed event is an error', async () => {
  const client = new OpenAI({ maxRetries: 0 });
  await assert.rejects(async () => {
    for await (const _ of await story(client, 'a story, malformed', fault('malformed@event=2'))) { /* breaks */ }
  });
});

test('a malformed body is an error', async () => {
  const client = new OpenAI({ maxRetries: 0 });
  await assert.rejects(greet(client, 'hello, malformed', fault('malformed')), (err) => !(err instanceof OpenAI.APIError));
});
