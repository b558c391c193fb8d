// The application code under test: one question to OpenAI Chat Completions
// and one streamed question to Anthropic Messages, through the npm SDKs with
// no base URL or key in code (the test helper points them at llmproxy).
// EXAMPLE_CITY changes the OpenAI question, to show what a test whose
// request changed reports.

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export const city = process.env.EXAMPLE_CITY || 'Paris';

/** Asks OpenAI about the weather in city; returns the answer's text. */
export async function askOpenAI() {
  const client = new OpenAI({ maxRetries: 0 });
  const r = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: `What is the weather in ${city}?` }],
  });
  return r.choices[0].message.content;
}

/** Asks Anthropic about the weather in Tokyo, streamed; returns the answer's text. */
export async function askAnthropic() {
  const client = new Anthropic({ maxRetries: 0 });
  const stream = client.messages.stream({
    model: 'claude-3-opus-20240229',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'What is the weather in Tokyo?' }],
  });
  const msg = await stream.finalMessage();
  return msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

/**
 * With EXAMPLE_TRACE_DIR set, writes which worker and proxy ran the test
 * named id, so the Go test can see that the files ran in different workers,
 * each with its own proxy.
 * @param {string} id
 */
export function trace(id) {
  const dir = process.env.EXAMPLE_TRACE_DIR;
  if (!dir) return;
  const worker = process.env.VITEST_POOL_ID ?? process.env.JEST_WORKER_ID ?? String(process.pid);
  writeFileSync(path.join(dir, id.replaceAll('/', '_') + '.json'), JSON.stringify({ id, worker, proxy: process.env.LLMPROXY_URL }));
}
