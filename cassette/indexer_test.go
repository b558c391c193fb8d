package cassette_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

// chatAt is an OpenAI chat request recorded through the routing name
// upstream.
func chatAt(upstream, body string) *cassette.Interaction {
	return &cassette.Interaction{ID: 1, Upstream: upstream, Kind: "openai-chat",
		Request: cassette.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Body: cassette.Body(body)}}
}

// TestIndexer: an indexer's keys are its matcher's keys of the recorded
// request, its fingerprint is its matcher's, the redactor's secrets are
// never compared, and the default route makes unprefixed and /openai/
// recordings one route under a fingerprint of its own.
func TestIndexer(t *testing.T) {
	red, err := cassette.NewRedactor(nil, []string{"metadata.user_key"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := cassette.NewIndexer(match.Rules{}, red)
	if err != nil {
		t.Fatal(err)
	}
	if x.Fingerprint() != x.Matcher().Fingerprint() || x.Fingerprint() == "" {
		t.Errorf("fingerprint %q, matcher's %q", x.Fingerprint(), x.Matcher().Fingerprint())
	}
	i := chatAt("openai", `{"model":"m","metadata":{"user_key":"a"},"messages":[]}`)
	key, shape, err := x.Keys(i)
	if err != nil {
		t.Fatal(err)
	}
	req := cassette.MatchRequest(i)
	if want, _ := x.Matcher().Key(req); key != want || shape != x.Matcher().Shape(req) {
		t.Errorf("Keys = %q, %q; want the matcher's %q, %q", key, shape, want, x.Matcher().Shape(req))
	}
	other, _, err := x.Keys(chatAt("openai", `{"model":"m","metadata":{"user_key":"b"},"messages":[]}`))
	if err != nil || other != key {
		t.Errorf("a redacted body path changed the key (%v)", err)
	}
	unprefixed, _, err := x.Keys(chatAt(cassette.DefaultUpstream, `{"model":"m","metadata":{"user_key":"a"},"messages":[]}`))
	if err != nil || unprefixed == key {
		t.Errorf("without the default route, unprefixed and openai are one route (%v)", err)
	}
	d := x.DefaultRoute()
	if d.Fingerprint() == x.Fingerprint() {
		t.Error("the default route keeps the fingerprint of the indexer without it")
	}
	a, _, err1 := d.Keys(chatAt(cassette.DefaultUpstream, `{"model":"m","messages":[]}`))
	b, _, err2 := d.Keys(chatAt("openai", `{"model":"m","messages":[]}`))
	if err1 != nil || err2 != nil || a != b {
		t.Errorf("with the default route, unprefixed %q and openai %q differ (%v, %v)", a, b, err1, err2)
	}
}

// TestDefaultIndexer: the indexer of cassettes written outside a server is
// the default route's of no rules and the default redactor.
func TestDefaultIndexer(t *testing.T) {
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := cassette.NewIndexer(match.Rules{}, red)
	if err != nil {
		t.Fatal(err)
	}
	def, err := cassette.DefaultIndexer()
	if err != nil || def.Fingerprint() != x.DefaultRoute().Fingerprint() {
		t.Errorf("DefaultIndexer fingerprint %q, want %q (%v)", def.Fingerprint(), x.DefaultRoute().Fingerprint(), err)
	}
}

// TestIndexerRefusesSecretHeader: a rule that compares a header the
// redactor removes is an error naming it.
func TestIndexerRefusesSecretHeader(t *testing.T) {
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// SigV4's headers too: the token, the date, the payload hash and the
	// SDK's per-attempt ids, in any spelling.
	for _, h := range []string{"Authorization", "X-Amz-Security-Token", "x-amz-date", "X-Amz-Content-Sha256", "amz-sdk-invocation-id", "Amz-Sdk-Request"} {
		_, err = cassette.NewIndexer(match.Rules{Headers: []string{h}}, red)
		want := "match header " + h + ": it carries a secret and is never stored: bad match rule"
		if !errors.Is(err, match.ErrBadRule) || err.Error() != want {
			t.Errorf("NewIndexer(%s) = %v, want the secret header named, wrapping match.ErrBadRule", h, err)
		}
	}
}
