// Package proxy is llmproxy's HTTP server: it routes each request to a named
// upstream, records interactions into a cassette (teeing streamed responses
// to the client event by event), replays them byte for byte, or does both in
// auto mode, and serves the proxy's own API under /_llmproxy/.
//
// # Rules
//
// The client never chooses the upstream host: only the first path segment
// picks a configured upstream, and Host, X-Forwarded-* and absolute request
// URIs are ignored. An interaction is written only when its response
// completed; an upstream that fails mid-way is passed on to the client as it
// failed and leaves nothing behind. In replay no connection to any upstream
// is ever opened. A miss changes no state and is answered with HTTP 400, the
// header X-Llmproxy-Miss: 1 and the provider's own error shape, whose message
// names the cassette, the closest interaction and the first difference. An
// interaction is consumed only once its whole response was delivered.
package proxy
