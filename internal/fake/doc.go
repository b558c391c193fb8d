// Package fake runs in-process stand-ins for the LLM provider APIs that
// llmproxy sits in front of. The project's tests, benchmarks and the demo
// cassette generator point llmproxy (or an official SDK) at a fake instead of
// at OpenAI, Anthropic, Google or Ollama, and get back the bytes those
// providers really send.
//
// # Captured bytes
//
// The directory captured/ holds real provider traffic (see captured/SOURCES.md
// for where each file comes from and how faithful it is). It is embedded in the
// test binary: [Captured] returns a file, [CapturedHeaders] and [CapturedHTTP]
// parse the *.headers.txt and *.http files, and [ServeCaptured] serves one as
// it is.
//
// # Upstreams and scripts
//
// [New] starts an [Upstream] for a test ([Start] for other code): an httptest
// server on loopback that counts and records every request and lets a
// [Script] choose each answer. The ready
// scripts [OpenAIChat], [OpenAIResponses], [AnthropicMessages], [Gemini] and
// [Ollama] play a two-turn tool loop described by a [ToolLoop]: a request that
// carries no tool result yet gets a tool call, one that does gets the final
// text. Whether to stream is read from the request, as the provider would.
// [Verbatim], [ServeCaptured] and [Sequence] serve fixed answers.
//
// # Rules
//
//   - No network: an upstream listens on 127.0.0.1 only and never dials out.
//   - Authentic framing: generated bodies follow the captured files field for
//     field (key order, extra fields, null fields, whitespace quirks, SSE and
//     NDJSON separators), and response headers come from the captured header
//     files where one exists. Content-Encoding is sent only when the body
//     really is encoded ([Gzip]).
//   - Reproducible: ids, timestamps, obfuscation padding and usage counts are
//     derived from the script's parameters, never from a clock or a random
//     source, so the same script answers the same request with the same bytes.
//   - Streams are written one event at a time with a flush after each, so a
//     test can watch them arrive incrementally ([EventDelay]) or break them
//     on purpose ([FailAfterEvents]).
package fake
