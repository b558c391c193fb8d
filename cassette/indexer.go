package cassette

import (
	"fmt"

	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
)

// An Indexer is the index-key policy of cassettes: under one set of
// matching rules it gives each interaction its index keys (Keys: its match
// key and its coarse shape) and names those rules by a fingerprint, which a
// cassette's metadata keeps (store.Meta.IndexRules) so that a reader under
// other rules knows to index it again. Both come from one value, so an
// index and the rules it names agree. Its Matcher computes the same keys
// for live requests: a request matches the interactions whose key is its
// own. An Indexer is safe for concurrent use.
type Indexer struct {
	m *match.Matcher
}

// NewIndexer builds the indexer of rules: the rules plus the redactor's
// secrets (its body paths ignored, DefaultSecretQuery never compared), with
// conversation-aware diagnostics (wire.DescribePath). A rule that compares
// a secret header is an error wrapping match.ErrBadRule.
func NewIndexer(rules match.Rules, r *Redactor) (*Indexer, error) {
	for _, h := range rules.Headers {
		if r.IsSecretHeader(h) {
			return nil, fmt.Errorf("match header %s: it carries a secret and is never stored: %w", h, match.ErrBadRule)
		}
	}
	rules.SecretQuery = append(append([]string{}, rules.SecretQuery...), DefaultSecretQuery...)
	rules.Ignore = append(append([]string{}, rules.Ignore...), r.BodyPaths()...)
	m, err := match.New(rules, func(kind string, body []byte, path string) string {
		return wire.DescribePath(wire.Kind(kind), body, path)
	})
	if err != nil {
		return nil, err
	}
	return &Indexer{m: m}, nil
}

// DefaultRoute returns x as a server whose default upstream is the openai
// one (the default) uses it: unprefixed requests, recorded under
// DefaultUpstream, and /openai/ ones are one route. Cassettes recorded
// before the two spellings were one route hold unprefixed requests under
// DefaultUpstream. Its fingerprint is derived from x's: call it once, on
// an indexer of NewIndexer.
func (x *Indexer) DefaultRoute() *Indexer {
	return &Indexer{m: x.m.WithAlias(DefaultUpstream, "openai")}
}

// DefaultIndexer is the indexer of a cassette written outside a server
// (import, scrub, a benchmark's cassette): no matching rules, the default
// redactor and the default route, as replay, record and auto index with no
// matching flags and the default upstreams, so that they serve such a
// cassette from its own index instead of indexing it again at open.
func DefaultIndexer() (*Indexer, error) {
	r, err := NewRedactor(nil, nil)
	if err != nil {
		return nil, err
	}
	x, err := NewIndexer(match.Rules{}, r)
	if err != nil {
		return nil, err
	}
	return x.DefaultRoute(), nil
}

// Matcher is the matcher of x's rules, for live requests and for
// explaining a miss.
func (x *Indexer) Matcher() *match.Matcher { return x.m }

// Fingerprint names x's rules: two indexers with the same fingerprint give
// the same keys.
func (x *Indexer) Fingerprint() string { return x.m.Fingerprint() }

// Keys returns the index keys of an interaction: its match key and its
// shape. As a method value it is the Keys that Replace, WriteFile and
// ImportFile take.
func (x *Indexer) Keys(i *Interaction) (key, shape string, err error) {
	req := MatchRequest(i)
	if key, err = x.m.Key(req); err != nil {
		return "", "", err
	}
	return key, x.m.Shape(req), nil
}

// MatchRequest is the match view of a recorded request.
func MatchRequest(i *Interaction) *match.Request {
	return &match.Request{
		Method: i.Request.Method, Upstream: i.Upstream, Path: i.Request.Path, Query: i.Request.Query,
		Header: i.Request.Headers, Body: i.Request.Body, Kind: i.Kind,
	}
}

// WithIgnore returns an indexer like x that also leaves the body paths
// out of matching (see match.Matcher.WithIgnore).
func (x *Indexer) WithIgnore(paths ...string) (*Indexer, error) {
	m, err := x.m.WithIgnore(paths...)
	if err != nil {
		return nil, err
	}
	return &Indexer{m: m}, nil
}
