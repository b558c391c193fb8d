package wire_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// transcriptText renders a transcript for a golden file.
func transcriptText(msgs []wire.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%s @%s\n", m.Role, m.Path)
		if m.Text != "" {
			fmt.Fprintf(&b, "  text: %q\n", m.Text)
		}
		if m.Reasoning != "" {
			fmt.Fprintf(&b, "  reasoning: %q\n", m.Reasoning)
		}
		if len(m.Other) > 0 {
			fmt.Fprintf(&b, "  other: %v\n", m.Other)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "  call %s %s(%s)\n", c.ID, c.Name, compact(c.Arguments))
		}
		for _, r := range m.ToolResults {
			fmt.Fprintf(&b, "  result %s %s error=%v: %s\n", r.CallID, r.Name, r.IsError, compact(r.Content))
		}
	}
	return b.String()
}

// requestPath is the upstream-relative path a captured request was sent to.
func requestPath(name string) (wire.Kind, string) {
	switch {
	case strings.HasPrefix(name, "openai-chat"):
		return wire.KindOpenAIChat, "/v1/chat/completions"
	case strings.HasPrefix(name, "openai-responses"):
		return wire.KindOpenAIResponses, "/v1/responses"
	case strings.HasPrefix(name, "anthropic"):
		return wire.KindAnthropicMessages, "/v1/messages"
	case strings.HasPrefix(name, "gemini-stream"):
		return wire.KindGemini, "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	case strings.HasPrefix(name, "gemini"):
		return wire.KindGemini, "/v1beta/models/gemini-2.5-flash:generateContent"
	case strings.HasPrefix(name, "ollama"):
		return wire.KindOllama, "/api/chat"
	}
	return wire.KindGeneric, "/"
}

func TestTranscriptCaptured(t *testing.T) {
	for _, name := range capturedFiles(t, "*.request.json") {
		if strings.HasPrefix(name, "aimock/") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			kind, path := requestPath(name)
			msgs, err := wire.Transcript(kind, path, mustRead(t, name))
			if err != nil {
				t.Fatalf("Transcript: %v", err)
			}
			golden(t, filepath.Join("testdata", "transcript", strings.TrimSuffix(name, ".request.json")+".txt"), transcriptText(msgs))
		})
	}
}

func TestTranscriptShapes(t *testing.T) {
	tests := []struct {
		name string
		kind wire.Kind
		path string
		body string
		want string
	}{
		{
			"chat parts and refusal", wire.KindOpenAIChat, "/v1/chat/completions",
			`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"at this"}]},{"role":"assistant","content":null,"refusal":"no"}]}`,
			"system @messages.0\n  text: \"Be brief.\"\nuser @messages.1\n  text: \"look\\nat this\"\n  other: [image_url]\nassistant @messages.2\n  text: \"no\"\n",
		},
		{
			"responses instructions, string input", wire.KindOpenAIResponses, "/v1/responses",
			`{"instructions":"Answer in French.","input":"Hello"}`,
			"system @instructions\n  text: \"Answer in French.\"\nuser @input\n  text: \"Hello\"\n",
		},
		{
			"responses message parts and reasoning", wire.KindOpenAIResponses, "/v1/responses",
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}]},{"role":"assistant","content":[{"type":"output_text","text":"hello"}]}]}`,
			"user @input.0\n  text: \"hi\"\nreasoning @input.1\n  reasoning: \"think\"\nassistant @input.2\n  text: \"hello\"\n",
		},
		{
			"anthropic system blocks, thinking", wire.KindAnthropicMessages, "/v1/messages",
			`{"system":[{"type":"text","text":"A"},{"type":"text","text":"B"}],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"a"},{"type":"image","source":{}}]}]}`,
			"system @system\n  text: \"A\\nB\"\nuser @messages.0\n  text: \"q\"\nassistant @messages.1\n  text: \"a\"\n  reasoning: \"hmm\"\n  other: [image]\n",
		},
		{
			"gemini system instruction, thought, inline data", wire.KindGemini, "/v1beta/models/m:generateContent",
			`{"systemInstruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"text":"q"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]},{"role":"model","parts":[{"text":"t","thought":true},{"text":"a"}]}]}`,
			"system @systemInstruction\n  text: \"S\"\nuser @contents.0\n  text: \"q\"\n  other: [inlineData]\nmodel @contents.1\n  text: \"a\"\n  reasoning: \"t\"\n",
		},
		{
			"ollama generate", wire.KindOllama, "/api/generate",
			`{"model":"llama3","system":"S","prompt":"P"}`,
			"system @system\n  text: \"S\"\nuser @prompt\n  text: \"P\"\n",
		},
		{
			"ollama thinking and images", wire.KindOllama, "/api/chat",
			`{"messages":[{"role":"user","content":"see","images":["AA=="]},{"role":"assistant","content":"ok","thinking":"th"}]}`,
			"user @messages.0\n  text: \"see\"\n  other: [images]\nassistant @messages.1\n  text: \"ok\"\n  reasoning: \"th\"\n",
		},
		{
			"embeddings", wire.KindEmbeddings, "/v1/embeddings",
			`{"model":"e","input":["a","b"]}`,
			"user @input\n  text: \"a\\nb\"\n",
		},
		{"generic", wire.KindGeneric, "/x", `not json`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := wire.Transcript(tc.kind, tc.path, []byte(tc.body))
			if err != nil {
				t.Fatalf("Transcript: %v", err)
			}
			if got := transcriptText(msgs); got != tc.want {
				t.Errorf("Transcript =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if _, err := wire.Transcript(wire.KindOpenAIChat, "/v1/chat/completions", []byte(`{"messages":`)); err == nil {
		t.Error("Transcript of malformed JSON succeeded")
	}
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs:\ngot\n%s\nwant\n%s", path, got, want)
	}
}

// FuzzTranscript checks that no request body panics Transcript, and that a
// body it reads puts every tool call and result ParseRequest finds in some
// message.
func FuzzTranscript(f *testing.F) {
	for _, name := range capturedFiles(f, "*.request.json") {
		f.Add(kindOf(name), mustRead(f, name))
	}
	f.Fuzz(func(t *testing.T, k uint8, body []byte) {
		kind := fuzzKinds[int(k)%len(fuzzKinds)]
		msgs, err := wire.Transcript(kind, "/v1beta/models/m:generateContent", body)
		if err != nil {
			return
		}
		req, _ := wire.ParseRequest(kind, "/v1beta/models/m:generateContent", body)
		var calls, results int
		for _, m := range msgs {
			calls += len(m.ToolCalls)
			results += len(m.ToolResults)
		}
		if calls != len(req.ToolCalls) || results != len(req.ToolResults) {
			t.Errorf("Transcript placed %d calls and %d results; ParseRequest found %d and %d", calls, results, len(req.ToolCalls), len(req.ToolResults))
		}
	})
}
