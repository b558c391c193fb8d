package scenario_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/scenario"
)

// recordedChat is a recorded OpenAI chat exchange: the user asks, the model answers.
func recordedChat(id uint64, ask, answer string) *cassette.Interaction {
	return &cassette.Interaction{
		ID: id, Upstream: "openai", Provider: "openai", Kind: "openai-chat",
		Request: cassette.Request{Method: http.MethodPost, Path: "/v1/chat/completions",
			Body: cassette.Body(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + ask + `"}]}`)},
		Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}},
			Body: cassette.Body(`{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` + answer + `"},"finish_reason":"stop"}]}`)},
	}
}

// embedding is a recorded exchange that is no chat: from-cassette skips it.
func embedding(id uint64) *cassette.Interaction {
	return &cassette.Interaction{
		ID: id, Upstream: "openai", Provider: "openai", Kind: "embeddings",
		Request:  cassette.Request{Method: http.MethodPost, Path: "/v1/embeddings", Body: cassette.Body(`{"input":"x"}`)},
		Response: cassette.Response{Status: 200, Body: cassette.Body(`{"data":[]}`)},
	}
}

// mustCassette writes the interactions as the cassette NAME.cassette and
// opens it read-only.
func mustCassette(t *testing.T, name string, all ...*cassette.Interaction) *cassette.Cassette {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".cassette")
	keys := func(i *cassette.Interaction) (string, string, error) { return i.Request.Path, i.Request.Path, nil }
	if err := cassette.WriteFile(path, &cassette.Contents{Interactions: all}, keys, cassette.Options{}); err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFromCassette: the scenario written from a cassette is named after its
// file, says where it comes from, checks as mock loads it, and has a step
// per recorded chat answer, conditioned on the recorded user text.
func TestFromCassette(t *testing.T) {
	c := mustCassette(t, "trip.v1", recordedChat(1, "Paris?", "Sunny."), embedding(2), recordedChat(3, "Rome?", "Rain."))
	text, err := scenario.FromCassette(c, "out.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Written by llmproxy scenario from-cassette from trip.v1.cassette; edit freely.\n"; !strings.HasPrefix(string(text), want) {
		t.Errorf("first line of\n%s\nwant %q", text, want)
	}
	file := filepath.Join(t.TempDir(), "trip.yaml")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(file)
	if err != nil {
		t.Fatalf("the scenario written does not load: %v\n%s", err, text)
	}
	if s.Name != "trip" {
		t.Errorf("name %q, want trip (the cassette's file name up to its first dot)", s.Name)
	}
	var got []string
	for _, st := range s.Steps {
		got = append(got, st.ID+" "+st.Respond.Text)
	}
	if want := "i1 Sunny.|i3 Rain."; strings.Join(got, "|") != want {
		t.Errorf("steps %q, want %q", strings.Join(got, "|"), want)
	}
	for _, q := range []string{"equals: Paris?", "equals: Rome?"} {
		if !strings.Contains(string(text), q) {
			t.Errorf("the scenario does not hold %q:\n%s", q, text)
		}
	}
}

// TestFromCassetteWithoutChat: a cassette without a chat interaction is an
// error, not an empty scenario.
func TestFromCassetteWithoutChat(t *testing.T) {
	c := mustCassette(t, "none", embedding(1))
	text, err := scenario.FromCassette(c, "out.yaml")
	if err == nil || !strings.Contains(err.Error(), "no chat interaction") || text != nil {
		t.Errorf("FromCassette = %q, %v; want the error naming no chat interaction", text, err)
	}
	var list scenario.ErrorList
	if errors.As(err, &list) {
		t.Errorf("the error is a check of the scenario written (%v), want the conversion's", err)
	}
}
