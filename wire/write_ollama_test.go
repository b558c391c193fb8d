package wire_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

// generateKeys is the layout of Ollama's /api/generate answer (api.GenerateResponse:
// model, created_at, response, thinking, done, done_reason, then the metrics).
var (
	generatePiece = []string{".model", ".created_at", ".response", ".done"}
	generateLast  = []string{".model", ".created_at", ".response", ".done", ".done_reason",
		".total_duration", ".load_duration", ".prompt_eval_count", ".prompt_eval_duration", ".eval_count", ".eval_duration"}
)

// TestWriteOllamaGenerate: an answer to /api/generate is written in its own
// shape (the text in "response" at the top level, no "message"), whole and
// as NDJSON, and reads back as the same answer.
func TestWriteOllamaGenerate(t *testing.T) {
	a := wire.Answer{Model: "llama3.2", Text: "Paris is sunny.", Reasoning: "Look it up.", Usage: wire.Usage{Input: 7, Output: 4}}
	for _, tt := range []struct {
		name, body string
		stream     bool
	}{
		{"whole", `{"model":"llama3.2","prompt":"Weather?","stream":false}`, false},
		{"streamed", `{"model":"llama3.2","prompt":"Weather?"}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := wire.OptionsFor(wire.KindOllama, "/api/generate", []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			w, err := wire.Write(wire.KindOllama, a, o)
			if err != nil {
				t.Fatal(err)
			}
			if w.Streamed() != tt.stream {
				t.Fatalf("streamed %v, want %v", w.Streamed(), tt.stream)
			}
			lines := [][]byte{w.Body}
			if tt.stream {
				lines = nil
				for _, e := range w.Events {
					lines = append(lines, e.Data)
				}
			}
			var text, thinking strings.Builder
			for i, doc := range lines {
				want := generatePiece
				if i == len(lines)-1 {
					want = generateLast
				}
				got := shape(t, doc, []string{".thinking"})
				if !reflect.DeepEqual(got, want) {
					t.Errorf("line %d %s: keys %v, want %v", i, doc, got, want)
				}
				text.WriteString(gjson.GetBytes(doc, "response").String())
				thinking.WriteString(gjson.GetBytes(doc, "thinking").String())
			}
			if text.String() != a.Text || thinking.String() != a.Reasoning {
				t.Errorf("response %q thinking %q, want %q %q", text.String(), thinking.String(), a.Text, a.Reasoning)
			}
			f := wire.FramingNone
			if tt.stream {
				f = wire.FramingNDJSON
			}
			r, err := wire.ParseResponse(wire.KindOllama, f, w.Bytes())
			if err != nil || r.Text != a.Text || r.Reasoning != a.Reasoning || r.Usage.Output != 4 {
				t.Errorf("read back: %+v %v", r, err)
			}
		})
	}
}
