// Package cassettes holds llmproxy's committed example cassettes; the demo
// cassette is embedded so that `llmproxy demo` runs from anywhere.
package cassettes

import _ "embed"

// Demo is cassettes/demo.cassette: a streamed OpenAI Chat Completions weather
// tool loop. How it is made: see the README, "The demo cassette".
//
//go:embed demo.cassette
var Demo []byte
