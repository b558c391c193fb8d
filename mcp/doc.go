// Package mcp knows the Model Context Protocol's JSON-RPC 2.0 messages as
// llmproxy carries them: it reads a message far enough to classify it
// (request, notification, response) and to find its id and progress token,
// refuses what MCP does not allow (batches, bodies that are not one JSON-RPC
// object), names the body paths matching leaves out (IgnorePaths), rewrites
// a recorded answer for the live request (its id and progress token, in a
// JSON body or in each SSE event), reads a recorded answer for pages (the
// response in it, a tool result, the tools listed), reads and sets the
// output of a tools/call answer (for scrub), and writes JSON-RPC errors.
//
// It also carries stdio MCP traffic over HTTP, so that the proxy records and
// replays a stdio server as it does a streamable HTTP one: Bridge turns the
// newline-delimited messages an MCP client writes into HTTP requests to a
// handler, and Child is an http.RoundTripper that sends such requests to a
// server process over its stdin and stdout.
//
// It is the one package that reads or writes MCP message bodies, as wire is
// for the model APIs (whose JSON-RPC error writer, wire.JSONRPCError, it
// uses); it imports nothing else of llmproxy.
package mcp
