package match_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/match"
)

// benchBodies are request bodies of the sizes replay sees: one turn with two
// tools (about 1 KB), and a 40-turn tool-calling conversation (about 20 KB).
func benchBodies() map[string][]byte {
	small := `{"messages":[{"role":"system","content":"You are a careful assistant for a fictional atlas. Use the tools when a question needs data."},` +
		`{"role":"user","content":"Question 7: can the country of Crumpet have dragons? Answer with only YES or NO"}],` +
		`"model":"gpt-4o-mini","stream":false,"temperature":0.7,"metadata":{"run":"bench","attempt":1},` +
		`"tools":[{"type":"function","function":{"name":"lookup_population","description":"Returns the current population of the specified fictional country","parameters":{"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}}},` +
		`{"type":"function","function":{"name":"can_have_dragons","description":"Returns True if the specified population can have dragons, False otherwise","parameters":{"properties":{"population":{"type":"integer"}},"required":["population"],"type":"object"}}}]}`
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o-mini","temperature":0.2,"metadata":{"run":"bench"},"messages":[{"role":"system","content":"You are a careful assistant."}`)
	for i := range 40 {
		fmt.Fprintf(&b, `,{"role":"user","content":"Step %d: look up the population of country number %d and tell me whether it can have dragons."}`, i, i)
		fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"lookup_population","arguments":"{\"country\":\"C%d\"}"}}]}`, i, i)
		fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"call_%d","content":"{\"population\":%d,\"unit\":\"people\",\"as_of\":\"2026-01-0%d\"}"}`, i, 1000+i*37, i%9+1)
	}
	b.WriteString(`]}`)
	return map[string][]byte{"1KB": []byte(small), "20KB": []byte(b.String())}
}

func benchRequest(body []byte) *match.Request {
	return &match.Request{Method: "POST", Upstream: "openai", Path: "/v1/chat/completions", Query: "api-version=2024-06-01&b=2",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body, Kind: "openai-chat"}
}

func benchMatchers(b *testing.B) map[string]*match.Matcher {
	plain, err := match.New(match.Rules{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ignoring, err := match.New(match.Rules{Ignore: []string{"metadata", "messages.#.tool_calls.#.id"}, SecretQuery: []string{"key"}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return map[string]*match.Matcher{"no-rules": plain, "ignore-rules": ignoring}
}

// BenchmarkKey is the match key of a request: structural canonicalisation
// of the body, then the hash. Replay computes one per request.
func BenchmarkKey(b *testing.B) {
	for mname, m := range benchMatchers(b) {
		for bname, body := range benchBodies() {
			b.Run(mname+"/"+bname, func(b *testing.B) {
				r := benchRequest(body)
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Key(r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCanonicalBody is the structural canonicalisation alone.
func BenchmarkCanonicalBody(b *testing.B) {
	for mname, m := range benchMatchers(b) {
		for bname, body := range benchBodies() {
			b.Run(mname+"/"+bname, func(b *testing.B) {
				r := benchRequest(body)
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.CanonicalBody(r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The match key is what a cassette's index is built from: a change in its
// value would silently turn every recorded request into a miss for a
// cassette indexed before it. Optimising Key must keep these values.
func TestKeyValuesAreStable(t *testing.T) {
	want := map[string]string{
		"no-rules/1KB":      "68c44d6642d0c92f1613e1f4c091a9a7040d625dbac5284450481ad354036850",
		"no-rules/20KB":     "7b9dc2730fd7dfb34bf5307984b05a9bb44f880433408b8456697e6d4acd319a",
		"ignore-rules/1KB":  "6d549b8fec49576ad7e7dd1a640ce1d23bbff69784c6b6850ac335bebbbe2590",
		"ignore-rules/20KB": "3bdf6cb2e3bb861cb990e60f7bc9596eca8591259b17bf4e72b58312186c7039",
	}
	ms := map[string]*match.Matcher{}
	for name, rules := range map[string]match.Rules{"no-rules": {}, "ignore-rules": {Ignore: []string{"metadata", "messages.#.tool_calls.#.id"}, SecretQuery: []string{"key"}}} {
		m, err := match.New(rules, nil)
		if err != nil {
			t.Fatal(err)
		}
		ms[name] = m
	}
	for name, w := range want {
		mname, bname, _ := strings.Cut(name, "/")
		got, err := ms[mname].Key(benchRequest(benchBodies()[bname]))
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("%s: key %s, want %s", name, got, w)
		}
	}
}

// BenchmarkScan is the one-pass canonical scan of the body alone, into a
// reused buffer: Key without the hash, the request line, the headers and
// the allocations.
func BenchmarkScan(b *testing.B) {
	for bname, body := range benchBodies() {
		b.Run(bname, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				var ok bool
				if out, ok = jsonvalue.Ignore(nil).AppendCanonicalBytes(out[:0], body); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
