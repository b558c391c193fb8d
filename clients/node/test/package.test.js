// The package's own tests, against test/fake-llmproxy.js: names, the
// control client, starting and stopping a proxy, and the per-test sessions.
// Run with `node --test` in clients/node (no dependencies).

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { test } from 'node:test';
import {
  cassettePath, ControlClient, ControlError, findBinary, missText, modeFromEnv, placeholderKey, sanitize, sdkEnv,
  startProxy, TestSessions, unusedText,
} from '../index.js';

const fake = fileURLToPath(new URL('./fake-llmproxy.js', import.meta.url));

/** @param {Record<string, string>} [extra] */
function fakeEnv(extra = {}) {
  return { ...process.env, LLMPROXY_BIN: fake, ...extra };
}

test('sanitize', () => {
  const cases = [
    ['answers the weather', 'answers_the_weather'],
    ['suite > test: "quoted"/slash\\back', 'suite_test_quoted_slash_back'],
    ['..', 'unnamed'],
    ['../../etc/passwd', 'etc_passwd'],
    ['.hidden', 'hidden'],
    ['', 'unnamed'],
    ['météo à Paris', 'm_t_o_Paris'],
  ];
  for (const [name, want] of cases) assert.equal(sanitize(name), want, `sanitize(${JSON.stringify(name)})`);
  const long = 'x'.repeat(300);
  const a = sanitize(long), b = sanitize(long.slice(0, 299) + 'y');
  assert.equal(a.length, 109);
  assert.notEqual(a, b, 'two long names that differ only at the end stay apart');
});

test('cassettePath', () => {
  const root = path.resolve('/proj');
  const cases = [
    [path.join(root, 'test/chat.test.ts'), 'chat > answers', 'cassettes/test/chat.test/chat_answers.cassette'],
    [path.join(root, 'a.spec.js'), 'x', 'cassettes/a.spec/x.cassette'],
    ['test/rel.test.mjs', 'y', 'cassettes/test/rel.test/y.cassette'],
    [path.resolve('/elsewhere/out.test.js'), 'z', 'cassettes/out.test/z.cassette'],
  ];
  for (const [file, name, want] of cases) assert.equal(cassettePath(root, file, name), want, `${file} ${name}`);
});

test('modeFromEnv', () => {
  assert.equal(modeFromEnv({}), 'replay');
  assert.equal(modeFromEnv({ LLMPROXY_MODE: 'record' }), 'record');
  assert.throws(() => modeFromEnv({ LLMPROXY_MODE: 'recrod' }), /LLMPROXY_MODE="recrod" is not one of replay, record, auto/);
});

test('sdkEnv', () => {
  const got = sdkEnv('http://127.0.0.1:9', { placeholders: true, env: { OPENAI_API_KEY: 'sk-mine' } });
  assert.equal(got.OPENAI_BASE_URL, 'http://127.0.0.1:9/v1');
  assert.equal(got.ANTHROPIC_BASE_URL, 'http://127.0.0.1:9/anthropic');
  assert.equal(got.OPENAI_API_KEY, undefined, 'a key the environment has is kept');
  assert.equal(got.ANTHROPIC_API_KEY, placeholderKey);
  assert.equal(sdkEnv('http://h:1').ANTHROPIC_API_KEY, undefined, 'no placeholders unless asked');
});

test('unusedText names a scenario\'s steps', () => {
  const text = unusedText({ mode: 'mock', scenario: 'quiz.yaml', interactions: 2, unused: [{ step: 'never', summary: 'step never never reached' }], unused_total: 3 });
  assert.match(text, /1 recorded interaction\(s\) or step\(s\) of quiz\.yaml were not used by this test \(3 in all\):\n  step never: step never never reached/);
});

test('missText lists each miss with its message', () => {
  assert.equal(missText({ mode: 'replay', cassette: '/c', missed: [] }), '');
  const text = missText({ mode: 'replay', cassette: '/p/c.cassette', missed: [
    { method: 'POST', path: '/v1/chat/completions', message: 'closest: #1\nfirst difference at messages.0.content' },
  ] });
  assert.match(text, /1 request of this test missed its cassette \/p\/c\.cassette \(mode replay\)/);
  assert.match(text, /POST \/v1\/chat\/completions\nclosest: #1\nfirst difference at messages\.0\.content/);
});

test('ControlClient refuses a URL that is not a base URL', () => {
  assert.throws(() => new ControlClient('127.0.0.1:80'), /not http:\/\/HOST:PORT/);
  assert.throws(() => new ControlClient('http://h:1/v1'), /not http:\/\/HOST:PORT/);
});

test('ControlClient names the route when nothing listens', async () => {
  const c = new ControlClient('http://127.0.0.1:1');
  await assert.rejects(c.getSession(), /GET \/_llmproxy\/session at http:\/\/127\.0\.0\.1:1/);
});

test('findBinary: LLMPROXY_BIN first, else PATH', async () => {
  assert.equal((await findBinary({ env: { LLMPROXY_BIN: '/x/llmproxy' } })).command, '/x/llmproxy');
  const got = await findBinary({ env: {}, cwd: path.resolve('/') });
  assert.deepEqual([got.command, got.from], ['llmproxy', 'PATH']);
});

test('startProxy and the control routes', async (t) => {
  const p = await startProxy({ mode: 'replay', cassetteDir: '/tmp/cd', env: fakeEnv() });
  t.after(() => p.stop());
  assert.match(p.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(await p.control.getSession(), null);
  const { session, ended } = await p.control.putSession({ cassette: 'cassettes/a.cassette', mode: 'replay', name: 'a' });
  assert.equal(session.name, 'a');
  assert.equal(ended, null);
  assert.equal((await p.control.putSession({ cassette: 'cassettes/b.cassette' })).ended.name, 'a');
  const err = await p.control.putSession({ cassette: '../out.cassette' }).catch((e) => e);
  assert.ok(err instanceof ControlError, String(err));
  assert.equal(err.status, 400);
  assert.equal(err.type, 'bad_cassette_path');
  assert.match(err.message, /PUT \/_llmproxy\/session: 400 bad_cassette_path: \.\.\/out\.cassette escapes/);
  const v = await p.control.verify('weather', { args: { city: 'Paris' }, count: 1 });
  assert.equal(v.ok, true);
  assert.equal(v.args, '{"city":"Paris"}');
  await assert.rejects(p.control.verify('weather', { count: /** @type {any} */ ('x') }), /400 bad_query/);
  assert.equal((await p.control.deleteSession()).name, undefined);
  assert.equal(await p.control.deleteSession(), null);
});

test('startProxy passes the mode, the cassette directory and a free port', async (t) => {
  const p = await startProxy({ mode: 'record', cassetteDir: '/tmp/cd', env: fakeEnv({ LLMPROXY_LOG_LEVEL: 'debug' }) });
  t.after(() => p.stop());
  const argv = await (await fetch(p.url + '/_fake/argv')).json();
  assert.deepEqual(argv, ['record', '--cassette-dir', '/tmp/cd', '--listen', '127.0.0.1:0']);
});

test('startProxy: a binary that fails, that is missing, that never listens', async () => {
  await assert.rejects(startProxy({ mode: 'replay', cassetteDir: '/tmp', env: fakeEnv({ FAKE_LLMPROXY: 'exit' }) }),
    /exited \(status 2\) before listening\nstderr:\nfake llmproxy: told to fail/);
  await assert.rejects(startProxy({ mode: 'replay', cassetteDir: '/tmp', env: { LLMPROXY_BIN: '/nonexistent/llmproxy' } }),
    /ENOENT[\s\S]*Set LLMPROXY_BIN/);
  await assert.rejects(startProxy({ mode: 'replay', cassetteDir: '/tmp', env: fakeEnv({ FAKE_LLMPROXY: 'silent' }), startTimeoutMs: 200 }),
    /did not print its listening line/);
});

test('TestSessions: a miss fails the test with its difference; overlapping tests are refused', async (t) => {
  const p = await startProxy({ mode: 'replay', cassetteDir: '/tmp/cd', env: fakeEnv() });
  t.after(() => p.stop());
  const warned = [];
  const s = new TestSessions({ control: p.control, mode: 'replay', warn: (w) => warned.push(w) });
  await s.begin('cassettes/t/one.cassette', 'one');
  await assert.rejects(s.begin('cassettes/t/two.cassette', 'two'), /test "two" began while test "one" holds this worker's proxy session/);
  await fetch(p.url + '/v1/chat/completions', { method: 'POST', body: '{"city":"Lyon"}' });
  const failure = await s.end();
  assert.match(failure, /1 request of this test missed its cassette \/nonexistent\/cassettes\/t\/one\.cassette/);
  assert.match(failure, /first difference at messages\.0\.content: "Paris" != "\{\\"city\\":\\"Lyon\\"\}"/);
  await s.begin('cassettes/t/two.cassette', 'two');
  assert.equal(await s.end(), '', 'a test with no request passes');
  assert.equal(await s.end(), '', 'end without begin is nothing');
});

test('node:test helper: a swallowed miss fails its test, a test without requests passes', async () => {
  const { spawnSync } = await import('node:child_process');
  const file = fileURLToPath(new URL('./nodefixture/swallowed.js', import.meta.url));
  const env = fakeEnv({ LLMPROXY_MODE: 'replay' });
  delete env.NODE_TEST_CONTEXT; // a run of its own, not a subtest of this one
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /not ok 1 - swallows a miss/);
  assert.match(r.stdout, /1 request of this test missed its cassette \/nonexistent\/cassettes\/test\/nodefixture\/swallowed\/swallows_a_miss\.cassette/);
  assert.match(r.stdout, /ok 2 - makes no request/);
  assert.doesNotMatch(r.stdout, /not ok 2/);
});

test('the pool: a worker beyond the proxies started, and no global setup', async () => {
  const { poolFromEnv, workerSessions } = await import('../src/pool.js');
  assert.throws(() => poolFromEnv({}), /LLMPROXY_TEST_POOL is not set: the runner's global setup/);
  const info = { urls: ['http://127.0.0.1:9'], root: '/p', mode: 'replay' };
  assert.throws(() => workerSessions(info, '3', 'VITEST_POOL_ID'),
    /this worker is VITEST_POOL_ID=3 but the global setup started 1 proxies/);
});

test('vitest workerCount follows the pool options, maxWorkers and file parallelism', async () => {
  const { workerCount } = await import('../vitest/global-setup.js');
  assert.equal(workerCount({ pool: 'threads', maxWorkers: 3 }), 3);
  assert.equal(workerCount({ pool: 'threads', maxWorkers: 3, poolOptions: { threads: { maxThreads: 5 } } }), 5);
  assert.equal(workerCount({ pool: 'forks', maxWorkers: 3, fileParallelism: false }), 1);
  assert.equal(workerCount({ pool: 'threads', poolOptions: { threads: { singleThread: true } } }), 1);
  assert.ok(workerCount({}) >= 1);
});

test('TestSessions: unused interactions warn or fail; an empty cassette is removed, a full one kept', async () => {
  const { mkdtemp, writeFile, access } = await import('node:fs/promises');
  const os = await import('node:os');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'llmproxy-test-'));
  let summary;
  const control = /** @type {any} */ ({
    putSession: async () => ({ session: {}, ended: null }),
    deleteSession: async () => summary,
  });
  const unused = [{ id: 1, method: 'POST', path: '/v1/messages', summary: 'interaction 1' }, { id: 2, method: 'POST', path: '/v1/messages', summary: 'recorded now' }];
  const warned = [];
  const warn = (w) => warned.push(w);

  summary = { mode: 'auto', cassette: path.join(dir, 'full.cassette'), interactions: 1, recorded: 1, missed: [], unused };
  await writeFile(summary.cassette, 'x');
  const s = new TestSessions({ control, mode: 'auto', warn });
  await s.begin('c', 't');
  assert.equal(await s.end(), '');
  assert.equal(warned.length, 1);
  assert.match(warned[0], /1 recorded interaction\(s\) or step\(s\) of .*full\.cassette were not used by this test:\n  #1 POST \/v1\/messages: interaction 1$/);
  await access(summary.cassette);

  const strict = new TestSessions({ control, mode: 'auto', warn, failOnUnused: true });
  await strict.begin('c', 't');
  assert.match(await strict.end(), /were not used by this test/);
  assert.equal(warned.length, 1, 'failOnUnused fails instead of warning');

  summary = { mode: 'record', cassette: path.join(dir, 'sub', 'empty.cassette'), interactions: 0, recorded: 0, missed: [], unused: [] };
  const { mkdir } = await import('node:fs/promises');
  await mkdir(path.dirname(summary.cassette));
  await writeFile(summary.cassette, 'x');
  await s.begin('c', 't');
  assert.equal(await s.end(), '');
  await assert.rejects(access(summary.cassette), /ENOENT/, 'the empty cassette is gone');
  await assert.rejects(access(path.dirname(summary.cassette)), /ENOENT/, 'and its emptied directory');
});
