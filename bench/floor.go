package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
)

// floorReplay is the least a replay that matches on the request's content
// can do, for bench/findings.md (the probe's "replay-floor" kind, never in
// the report): it reads the body, computes llmproxy's match key for it (the
// canonical JSON hashed with SHA-256, as package match does), finds the
// answer in a map built at start, and writes it with the headers llmproxy
// sends (the recording's, Content-Length, and the two sandbox headers). No
// redaction, no store, no journal, no consumption: what is left between it
// and llmproxy replay is those. The "replay-floor-plain" kind leaves the
// sandbox headers out, to show what they cost on their own.
type floorReplay struct {
	m       *match.Matcher
	answers map[string]floorAnswer
	bodies  sync.Pool
}

type floorAnswer struct {
	header http.Header
	body   []byte
}

func newFloorReplay(sandboxed bool) (*floorReplay, error) {
	m, err := match.New(match.Rules{}, nil)
	if err != nil {
		return nil, err
	}
	f := &floorReplay{m: m, answers: map[string]floorAnswer{}}
	f.bodies.New = func() any { return new(bytes.Buffer) }
	h := responseHeaders("application/json")
	body := jsonResponse()
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	if sandboxed {
		h["X-Content-Type-Options"] = []string{"nosniff"}
		h["Content-Security-Policy"] = []string{"sandbox"}
	}
	key, err := f.key(http.MethodPost, chatPath, requestBody(0, false))
	if err != nil {
		return nil, err
	}
	f.answers[key] = floorAnswer{header: h, body: body}
	return f, nil
}

func (f *floorReplay) key(method, path string, body []byte) (string, error) {
	return f.m.Key(&match.Request{Method: method, Upstream: "openai", Path: path, Body: body, Kind: string(wire.Detect(method, path))})
}

func (f *floorReplay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.bodies.Get().(*bytes.Buffer)
	defer f.bodies.Put(body)
	body.Reset()
	if _, err := body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key, err := f.key(r.Method, r.URL.Path, body.Bytes())
	a, ok := f.answers[key]
	if err != nil || !ok {
		http.Error(w, fmt.Sprintf("no answer (%v)", err), http.StatusNotFound)
		return
	}
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.body)
}

// mockFloor is the least a scripted mock can do per request beyond the
// bare handler serving mock's bytes, for bench/findings.md (the probe's
// "mock-floor" kind, never in the report): it reads the body, checks that
// it is JSON, and reads from it, with gjson, what a script's step is
// chosen by — the latest message's role and text and whether the answer
// streams — then serves the same bytes as mockBare. No conversation, no
// answer written from a template, no journal, no log line: what is left
// between it and llmproxy mock is those.
type mockFloor struct {
	rounds [2][2][]mockAnswer // as mockBare's
	bodies *sync.Pool
}

func newMockFloor() (mockFloor, error) {
	rounds, err := mockRounds()
	if err != nil {
		return mockFloor{}, err
	}
	b := newMockBare(rounds)
	return mockFloor{rounds: b.rounds, bodies: b.bodies}, nil
}

func (m mockFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := m.bodies.Get().(*bytes.Buffer)
	defer m.bodies.Put(body)
	body.Reset()
	if _, err := body.ReadFrom(r.Body); err != nil || !gjson.ValidBytes(body.Bytes()) {
		http.Error(w, "the body is not JSON", http.StatusBadRequest)
		return
	}
	got := gjson.GetManyBytes(body.Bytes(), "stream", "messages.@reverse.0.role", "messages.@reverse.0.content")
	stream, role, text := got[0].Bool(), got[1].String(), got[2].String()
	round := m.rounds[b2i(strings.HasPrefix(text, "Question 0"))][b2i(stream)]
	a := round[0]
	if role == "tool" && len(round) > 1 {
		a = round[1]
	}
	a.write(w)
}
