package wire_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestWriteBytes pins every byte Write gives one answer (reasoning, text
// and a tool call) in every form: status, headers and body, streams with
// their padding, ids and signatures. The same answer must give the same
// bytes in every run and every build; a change of what Write writes shows
// here, and is made on purpose with -update (testdata/write/; AWS
// eventstream frames, binary, in .bin files).
func TestWriteBytes(t *testing.T) {
	a := answers["reasoning and call"]
	invoke := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}]}`
	cases := append(forms(),
		form{"bedrock-invoke/json", wire.KindBedrockInvoke, wire.WriteOptions{Request: []byte(invoke)}},
		form{"bedrock-invoke/stream", wire.KindBedrockInvoke, wire.WriteOptions{Stream: true, Request: []byte(invoke)}},
		// What an OpenAI chat stream is by default: padded, without the
		// usage chunk; and with neither.
		form{"openai-chat/stream-default", wire.KindOpenAIChat, wire.WriteOptions{Stream: true, Obfuscation: true}},
		form{"openai-chat/stream-plain", wire.KindOpenAIChat, wire.WriteOptions{Stream: true}},
		form{"openai-responses/stream-plain", wire.KindOpenAIResponses, wire.WriteOptions{Stream: true}})
	for _, f := range cases {
		t.Run(f.name, func(t *testing.T) {
			w, err := wire.Write(f.kind, a, f.opts)
			if err != nil {
				t.Fatal(err)
			}
			again, err := wire.Write(f.kind, a, f.opts)
			if err != nil || !bytes.Equal(again.Bytes(), w.Bytes()) {
				t.Fatalf("a second Write of the same answer differs (%v)", err)
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "%d\n", w.Status)
			names := make([]string, 0, len(w.Header))
			for name := range w.Header {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(w.Header[name], ", "))
			}
			b.WriteString("\n")
			b.Write(w.Bytes())
			ext := ".txt"
			if strings.Contains(w.Header.Get("Content-Type"), "eventstream") {
				ext = ".bin" // AWS eventstream frames: binary
			}
			golden := filepath.Join("testdata", "write", strings.ReplaceAll(f.name, "/", "_")+ext)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./wire -run TestWriteBytes -update writes it)", err)
			}
			if got := b.Bytes(); !bytes.Equal(got, want) {
				at := 0
				for at < min(len(got), len(want)) && got[at] == want[at] {
					at++
				}
				t.Errorf("%s differs from byte %d: got %.120q, want %.120q", golden, at, got[at:], want[at:])
			}
		})
	}
}
