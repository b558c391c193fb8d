package wire_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

var fuzzKinds = []wire.Kind{
	wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages,
	wire.KindGemini, wire.KindOllama, wire.KindEmbeddings, wire.KindGeneric,
}

// addCaptured seeds a fuzz target with every captured body.
func addCaptured(f *testing.F, add func(name string, body []byte)) {
	for _, name := range capturedFiles(f, "*.sse", "*.ndjson", "*.json", "*.http") {
		add(name, capturedBody(f, name))
	}
}

func framingOf(name string) wire.Framing {
	switch {
	case strings.HasSuffix(name, ".sse"):
		return wire.FramingSSE
	case strings.HasSuffix(name, ".ndjson"):
		return wire.FramingNDJSON
	}
	return wire.FramingNone
}

func kindOf(name string) uint8 {
	base := name[strings.LastIndexByte(name, '/')+1:]
	for i, k := range []string{"openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "openai-error", "openrouter"} {
		if strings.HasPrefix(base, k) {
			return [...]uint8{0, 1, 2, 3, 4, 0, 0}[i]
		}
	}
	return 6
}

// FuzzSplit checks that any chunking of any input gives the events of Split,
// whose Raw concatenate back to the input.
func FuzzSplit(f *testing.F) {
	addCaptured(f, func(name string, body []byte) {
		f.Add(body, uint8(framingOf(name)), uint64(len(body)))
	})
	f.Fuzz(func(t *testing.T, body []byte, framing uint8, seed uint64) {
		fr := wire.Framing(framing % 3)
		want := wire.Split(fr, body)
		if got := concatRaw(want); !bytes.Equal(got, body) {
			t.Fatalf("Raw concatenation %q != input %q", got, body)
		}
		for _, e := range want {
			if len(e.Raw) == 0 {
				t.Fatal("empty event")
			}
		}
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		s := wire.NewSplitter(fr)
		var got []wire.Event
		rest, emitted := body, 0
		for len(rest) > 0 {
			n := 1 + rng.IntN(min(len(rest), 1+int(seed%64)))
			chunk := bytes.Clone(rest[:n])
			evs := s.Push(chunk)
			clear(chunk)
			got = append(got, evs...)
			for _, e := range evs {
				if !bytes.Equal(e.Raw, body[emitted:emitted+len(e.Raw)]) {
					t.Fatalf("event at byte %d: Raw %q is not the input's bytes", emitted, e.Raw)
				}
				emitted += len(e.Raw)
			}
			rest = rest[n:]
			pushed := len(body) - len(rest)
			if rng.IntN(1+len(body)/256) == 0 { // Rest copies: check it now and then
				if r := s.Rest(); !bytes.Equal(r, body[emitted:pushed]) {
					t.Fatalf("Rest() = %q after %d bytes pushed and %d returned", r, pushed, emitted)
				}
			}
		}
		got = append(got, s.End()...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chunked events differ from Split:\n got %s\nwant %s", fmtEvents(got), fmtEvents(want))
		}
	})
}

// FuzzParseResponse checks that no body makes ParseResponse, RewriteCallIDs
// or ParseRequest panic, and that their errors are the documented ones.
func FuzzParseResponse(f *testing.F) {
	addCaptured(f, func(name string, body []byte) {
		f.Add(kindOf(name), uint8(framingOf(name)), body)
	})
	f.Fuzz(func(t *testing.T, kind, framing uint8, body []byte) {
		k := fuzzKinds[int(kind)%len(fuzzKinds)]
		fr := wire.Framing(framing % 3)
		r, err := wire.ParseResponse(k, fr, body)
		if err != nil && !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("ParseResponse error %v does not wrap ErrMalformed", err)
		}
		ids := map[string]string{}
		for i, c := range r.ToolCalls {
			key := c.ID
			if key == "" {
				key = wire.SyntheticID(c.Name, i+1)
			}
			ids[key] = "call_fuzz"
		}
		ids[wire.SyntheticID("f", 1)] = "call_f"
		out, rerr := wire.RewriteCallIDs(k, fr, body, ids)
		if rerr != nil && !errors.Is(rerr, wire.ErrMalformed) {
			t.Fatalf("RewriteCallIDs error %v does not wrap ErrMalformed", rerr)
		}
		if err == nil && rerr == nil {
			r2, err2 := wire.ParseResponse(k, fr, out)
			if err2 != nil || len(r2.ToolCalls) != len(r.ToolCalls) || r2.Text != r.Text {
				t.Fatalf("after rewrite: %+v, %v; before %+v", r2, err2, r)
			}
		}
		if _, err := wire.ParseRequest(k, "/v1beta/models/m:streamGenerateContent", body); err != nil && !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("ParseRequest error %v does not wrap ErrMalformed", err)
		}
		_ = wire.DescribePath(k, body, "messages.1.content")
		if req, err := wire.ParseRequest(k, "", body); err == nil {
			answers := req.Answers()
			for i, r := range req.ToolResults {
				if p := answers[i]; p < -1 || p >= len(req.ToolCalls) {
					t.Fatalf("Answers()[%d] = %d, with %d calls", i, p, len(req.ToolCalls))
				}
				if _, shape, err := r.Output(k); err == nil {
					if _, err := wire.SetOutput(body, r.Path, shape, []byte(`{"v":1}`)); err != nil && !errors.Is(err, wire.ErrMalformed) {
						t.Fatalf("SetOutput error %v does not wrap ErrMalformed", err)
					}
				}
			}
		}
	})
}
