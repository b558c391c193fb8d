// An MCP client made with the npm @modelcontextprotocol/sdk package, for
// cmd/llmproxy's TestMCPNodeSDK: over streamable HTTP to the MCP server
// "notes" behind llmproxy ($LLMPROXY_URL/mcp/notes) it runs initialize,
// tools/list and tools/call write_note(PATH, TEXT), ends the session, and
// writes what it saw to OUT as JSON. A failed step is written as
// {"error": ..., "code": ...} and the script still exits 0, so that the
// test reads the error (a cassette miss) from OUT.
//
//   node client.mjs OUT PATH TEXT
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [out, path, text] = process.argv.slice(2);
if (!out || !path || text === undefined) {
  console.error('usage: node client.mjs OUT PATH TEXT');
  process.exit(2);
}
const base = process.env.LLMPROXY_URL;
if (!base) {
  console.error('client.mjs: LLMPROXY_URL is not set (run it under llmproxy record|replay -- ...)');
  process.exit(2);
}

const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/notes`));
const client = new Client({ name: 'node-mcp-example', version: '1.0.0' });
const seen = {};
try {
  await client.connect(transport);
  seen.server = client.getServerVersion();
  seen.sessionId = transport.sessionId ? 'set' : 'none';
  const { tools } = await client.listTools();
  seen.tools = tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema }));
  seen.result = await client.callTool({ name: 'write_note', arguments: { path, text } });
  await transport.terminateSession();
} catch (err) {
  seen.error = String(err?.message ?? err);
  seen.code = err?.code ?? null;
} finally {
  await client.close();
}
writeFileSync(out, JSON.stringify(seen, null, 2) + '\n');
