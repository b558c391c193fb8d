#!/usr/bin/env node
// A stand-in for the llmproxy binary in the package's own tests: it prints
// the listening line and keeps one session as the control API does
// (docs/api.md), and every request outside /_llmproxy/ is a miss of the open
// session; GET /_fake/argv answers its arguments. FAKE_LLMPROXY=exit makes it exit 2 before listening, =silent
// makes it never print the line.

import http from 'node:http';

const how = process.env.FAKE_LLMPROXY ?? '';
if (how === 'exit') {
  process.stderr.write('fake llmproxy: told to fail\n');
  process.exit(2);
}
const mode = process.argv[2];
let session = null;
let n = 0;

function summary() {
  return session && { ...session, ended: new Date().toISOString() };
}

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/_llmproxy/session') {
      if (req.method === 'GET') return send(res, 200, { session });
      if (req.method === 'DELETE') {
        const ended = summary();
        session = null;
        return send(res, 200, { ended });
      }
      if (req.method === 'PUT') {
        if (req.headers['content-type'] !== 'application/json') return send(res, 415, { error: { type: 'unsupported_media_type', message: 'want application/json' } });
        let body;
        try {
          body = JSON.parse(raw);
        } catch {
          return send(res, 400, { error: { type: 'bad_json', message: 'not JSON' } });
        }
        if (String(body.cassette).includes('..')) return send(res, 400, { error: { type: 'bad_cassette_path', message: `${body.cassette} escapes the cassette directory` } });
        const ended = summary();
        session = { id: `s${++n}`, name: body.name, cassette: '/nonexistent/' + body.cassette, mode: body.mode ?? mode, interactions: 1, started: new Date().toISOString(), served: 0, recorded: 0, missed: [], unused: [] };
        return send(res, 200, { session, ended });
      }
    }
    if (url.pathname === '/_fake/argv') return send(res, 200, process.argv.slice(2));
    if (url.pathname === '/_llmproxy/verify') {
      if (url.searchParams.get('count') === 'x') return send(res, 400, { error: { type: 'bad_query', message: 'count is not a number' } });
      return send(res, 200, { ok: true, tool: url.searchParams.get('tool'), want: null, got: 1, calls: [], args: url.searchParams.get('args') });
    }
    if (session) session.missed.push({ method: req.method, path: url.pathname, message: `no recording matches\nfirst difference at messages.0.content: "Paris" != ${JSON.stringify(raw)}` });
    send(res, 500, { error: { type: 'llmproxy_miss', message: 'miss' } });
  });
});

server.listen(0, '127.0.0.1', () => {
  if (how !== 'silent') process.stdout.write(`llmproxy listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
