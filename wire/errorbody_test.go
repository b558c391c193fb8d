package wire_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const missMessage = `cassette "demo.cassette": no recorded interaction matches; closest is #3, differing at messages.2.content: "London" vs "Paris <b>é</b>"`

func TestErrorBody(t *testing.T) {
	tests := []struct {
		golden  string
		kind    wire.Kind
		status  int
		errType string
		check   map[string]string // gjson path → raw value
	}{
		{"openai-chat-400.json", wire.KindOpenAIChat, 400, "cassette_miss",
			map[string]string{"error.type": `"cassette_miss"`, "error.code": `"cassette_miss"`, "error.param": "null"}},
		{"openai-responses-400.json", wire.KindOpenAIResponses, 400, "cassette_miss", map[string]string{"error.type": `"cassette_miss"`}},
		{"embeddings-413.json", wire.KindEmbeddings, 413, "request_too_large", map[string]string{"error.type": `"request_too_large"`}},
		{"generic-400.json", wire.KindGeneric, 400, "cassette_miss", map[string]string{"error.type": `"cassette_miss"`}},
		{"anthropic-messages-400.json", wire.KindAnthropicMessages, 400, "cassette_miss",
			map[string]string{"type": `"error"`, "error.type": `"cassette_miss"`}},
		{"gemini-400.json", wire.KindGemini, 400, "cassette_miss",
			map[string]string{"error.code": "400", "error.status": `"INVALID_ARGUMENT"`, "error.details.0.reason": `"cassette_miss"`}},
		{"gemini-404.json", wire.KindGemini, 404, "not_found", map[string]string{"error.code": "404", "error.status": `"NOT_FOUND"`}},
		{"gemini-413.json", wire.KindGemini, 413, "request_too_large", map[string]string{"error.status": `"INVALID_ARGUMENT"`}},
		{"gemini-429.json", wire.KindGemini, 429, "rate_limited", map[string]string{"error.status": `"RESOURCE_EXHAUSTED"`}},
		{"gemini-502.json", wire.KindGemini, 502, "upstream_failed", map[string]string{"error.status": `"UNAVAILABLE"`}},
		{"gemini-500.json", wire.KindGemini, 500, "internal", map[string]string{"error.status": `"INTERNAL"`}},
		{"gemini-503.json", wire.KindGemini, 503, "upstream_failed", map[string]string{"error.status": `"UNAVAILABLE"`}},
		{"ollama-400.json", wire.KindOllama, 400, "cassette_miss", nil},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			ct, body := wire.ErrorBody(tt.kind, tt.status, tt.errType, missMessage)
			if ct != "application/json" {
				t.Errorf("content type = %q", ct)
			}
			if !gjson.ValidBytes(body) {
				t.Fatalf("not JSON: %s", body)
			}
			for path, want := range tt.check {
				if got := gjson.GetBytes(body, path).Raw; got != want {
					t.Errorf("%s = %s, want %s", path, got, want)
				}
			}
			// Each provider's SDK reads the message from its own place.
			msgPath := map[wire.Kind]string{wire.KindAnthropicMessages: "error.message", wire.KindOllama: "error"}[tt.kind]
			if msgPath == "" {
				msgPath = "error.message"
			}
			if got := gjson.GetBytes(body, msgPath).String(); got != missMessage {
				t.Errorf("%s = %q, want the message", msgPath, got)
			}
			r, err := wire.ParseResponse(tt.kind, wire.FramingNone, body)
			if err != nil || !strings.HasSuffix(r.Error, missMessage) {
				t.Errorf("ParseResponse reads error %q (%v), want it to end with the message", r.Error, err)
			}
			golden := filepath.Join("testdata", "errorbody", tt.golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("golden file (run with -update to create): %v", err)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("body differs from %s:\n got %s\nwant %s", golden, body, want)
			}
		})
	}
}
