// Package wire is the one package that knows the provider APIs llmproxy
// carries: OpenAI Chat Completions and Responses, Anthropic Messages, Gemini
// generateContent, Ollama, OpenAI-shaped embeddings, and "generic" for the
// rest. The proxy, the matcher, the presets and the fixtures ask it; nothing
// else in llmproxy reads or writes a provider's body by a provider path.
//
// It answers seven questions:
//
//   - Which API is this? Detect maps a method and path to a Kind, stored with
//     each interaction; DetectFraming maps a Content-Type to a Framing.
//   - Where are the events? Split and the incremental Splitter cut SSE and
//     NDJSON bodies into events whose Raw bytes concatenate back to the body,
//     whatever the chunking of the reads.
//   - What does it say? ParseRequest reads model, stream flag, turns, offered
//     tools, echoed tool calls and tool results; Request.Answers pairs each
//     result with the echoed call it answers; ToolResult.Output finds the
//     tool's own output inside a result; ParseResponse reassembles a
//     streamed or whole answer into text, tool calls and stop reason;
//     Transcript reads a request as messages a person can follow (system
//     prompt, text, reasoning, tool traffic per turn); DescribePath names a
//     JSON path in conversation terms for diagnostics.
//   - How do I change it? RewriteCallIDs renames tool call ids (and can give
//     id-less Gemini and Ollama calls one, and id-less Gemini results, see
//     SyntheticID); SetOutput replaces a tool's output, carried as it was.
//   - How does this provider say no? ErrorBody builds an error body each
//     official SDK surfaces with its message.
//   - How does a request offer a tool? ToolDef writes a function tool as
//     each provider declares one.
//   - How would the provider answer? Write turns a provider-neutral Answer
//     into the body or the stream of events the provider of a Kind sends
//     (OptionsFor reads from a request how it asks to be answered);
//     WriteError and StreamError write its errors, before or during a
//     stream. ParseResponse reads a written answer back as it was written.
//
// # Rules
//
// Bytes in, bytes out. Bodies are read with gjson and edited with sjson or
// by splicing at gjson's byte offsets; a body that will be served is never
// unmarshalled and re-marshalled. An edit changes only the values it is
// about: key order, whitespace (Anthropic pads its stream JSON with spaces),
// number spelling, SSE framing and line endings all survive.
//
// No input panics. Bodies are hostile: every body is validated (including a
// nesting bound, since gjson's validator recurses) before it is walked, and
// a malformed one is an error wrapping ErrMalformed that names the byte,
// event or JSON path at fault. Unknown fields are ignored and fields the
// package does not understand are carried untouched; an operation that has no
// meaning for a kind is ErrUnsupported, and a missing call or turn is
// ErrNotFound.
//
// The package imports nothing from llmproxy but internal/jsonvalue (for the
// nesting bound, which JSON equality shares) and keeps no state: every
// function is safe for concurrent use, except that a Splitter belongs to one
// stream.
package wire
