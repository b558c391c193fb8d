// Run by package.test.js under `node --test` with the fake binary: the
// first test's request misses and the test swallows the SDK's error, so only
// the helper's afterEach can fail it; the second makes no request.
import { proxy } from '../../node.js';
import { test } from 'node:test';

test('swallows a miss', async () => {
  await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', { method: 'POST', body: '{"q":"Lyon"}' }).catch(() => {});
});

test('makes no request', () => {
  if (!proxy.url) throw new Error('no proxy');
});
