package match

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/wire"
)

// Request is what matching looks at.
type Request struct {
	Method   string
	Upstream string // routing name
	Path     string // upstream-relative
	Query    string // raw query
	Header   http.Header
	Body     []byte
	// Kind is the API kind (see package wire); "" or "generic" for plain HTTP.
	Kind string
}

// Rules configure a Matcher. The zero value compares method, upstream,
// path, query and body, and no header.
type Rules struct {
	// Ignore lists body paths left out of the comparison for every API kind.
	Ignore []string `json:"ignore,omitempty"`
	// IgnoreByKind lists body paths left out for one API kind.
	IgnoreByKind map[string][]string `json:"ignore_by_kind,omitempty"`
	// IgnoreQuery lists query parameters left out of the comparison.
	IgnoreQuery []string `json:"ignore_query,omitempty"`
	// Headers lists request headers whose values must match.
	Headers []string `json:"headers,omitempty"`
	// SecretQuery lists query parameters that carry credentials; they are
	// never compared. Names here and in IgnoreQuery are compared as the
	// redactor compares them (see internal/query): unescaped, in any case.
	SecretQuery []string `json:"secret_query,omitempty"`
}

// Describer puts a JSON path of a request body in conversation terms, e.g.
// "messages[3] (user)"; it returns "" when it has nothing to say.
type Describer func(kind string, body []byte, path string) string

// Matcher computes match keys and differences under a set of rules. It is
// immutable and safe for concurrent use.
type Matcher struct {
	rules  Rules
	all    jsonvalue.Ignore
	byKind map[string]jsonvalue.Ignore
	// leftOutQuery are the query names never compared: ignored and
	// secret ones (see internal/query).
	leftOutQuery []string
	headers      []string
	// read is what HeadersRead returns: Content-Type and headers.
	read        []string
	describe    Describer
	fingerprint string
	// alias names an upstream spelling compared as another (see WithAlias).
	alias map[string]string
}

// New compiles rules; describe may be nil. An unusable path is an error
// wrapping ErrBadRule that names it.
func New(r Rules, describe Describer) (*Matcher, error) {
	m := &Matcher{rules: r, byKind: map[string]jsonvalue.Ignore{}, describe: describe}
	for _, p := range r.Ignore {
		pp, ok := jsonvalue.ParsePattern(p)
		if !ok {
			return nil, fmt.Errorf("ignore path %q: %w", p, ErrBadRule)
		}
		m.all = append(m.all, pp)
	}
	for kind, paths := range r.IgnoreByKind {
		ig := append(jsonvalue.Ignore(nil), m.all...)
		for _, p := range paths {
			pp, ok := jsonvalue.ParsePattern(p)
			if !ok {
				return nil, fmt.Errorf("ignore path %q for %s: %w", p, kind, ErrBadRule)
			}
			ig = append(ig, pp)
		}
		m.byKind[kind] = ig
	}
	if err := m.builtIn(); err != nil {
		return nil, err
	}
	m.leftOutQuery = append(append([]string{}, r.IgnoreQuery...), r.SecretQuery...)
	for _, h := range r.Headers {
		if strings.TrimSpace(h) == "" {
			return nil, fmt.Errorf("match header: empty name: %w", ErrBadRule)
		}
		m.headers = append(m.headers, http.CanonicalHeaderKey(h))
	}
	sort.Strings(m.headers)
	m.read = append([]string{"Content-Type"}, m.headers...)
	m.read = slices.Compact(slices.Sorted(slices.Values(m.read)))
	fp, _ := json.Marshal(normalRules(r))
	sum := sha256.Sum256(fp)
	m.fingerprint = hex.EncodeToString(sum[:8])
	return m, nil
}

// builtIn adds the paths an API kind never compares, whatever the rules:
// an MCP message's JSON-RPC id and progress token (mcp.IgnorePaths). They
// are policy, not rules, so they are not in the fingerprint; no cassette
// held an MCP interaction before they were, so none was keyed without them.
func (m *Matcher) builtIn() error {
	kind := string(wire.KindMCP)
	ig, ok := m.byKind[kind]
	if !ok {
		ig = append(jsonvalue.Ignore(nil), m.all...)
	}
	for _, p := range mcp.IgnorePaths() {
		pp, ok := jsonvalue.ParsePattern(p)
		if !ok {
			return fmt.Errorf("built-in ignore path %q for %s: %w", p, kind, ErrBadRule)
		}
		ig = append(ig, pp)
	}
	m.byKind[kind] = ig
	return nil
}

func normalRules(r Rules) Rules {
	sorted := func(s []string) []string {
		s = append([]string(nil), s...)
		sort.Strings(s)
		return s
	}
	out := Rules{Ignore: sorted(r.Ignore), IgnoreQuery: sorted(r.IgnoreQuery), SecretQuery: sorted(r.SecretQuery), IgnoreByKind: map[string][]string{}}
	for k, v := range r.IgnoreByKind {
		out.IgnoreByKind[k] = sorted(v)
	}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, http.CanonicalHeaderKey(h))
	}
	sort.Strings(out.Headers)
	return out
}

// WithAlias returns a matcher like m that compares the routing name from
// as the name to: two names for one upstream are one route for keys, shapes
// and differences. Its fingerprint differs from m's, so that cassettes
// indexed without the alias are indexed again.
func (m *Matcher) WithAlias(from, to string) *Matcher {
	c := *m
	c.alias = map[string]string{from: to}
	for k, v := range m.alias {
		c.alias[k] = v
	}
	names := make([]string, 0, len(c.alias))
	for k, v := range c.alias {
		names = append(names, k+"="+v)
	}
	sort.Strings(names)
	sum := sha256.Sum256([]byte(m.fingerprint + "\x00alias:" + strings.Join(names, ",")))
	c.fingerprint = hex.EncodeToString(sum[:8])
	return &c
}

// upstream is r's routing name after the aliases.
func (m *Matcher) upstream(r *Request) string {
	if to, ok := m.alias[r.Upstream]; ok {
		return to
	}
	return r.Upstream
}

// Fingerprint identifies the rules: two matchers with the same fingerprint
// compute the same keys.
func (m *Matcher) Fingerprint() string { return m.fingerprint }

// ignore is the set of ignored paths for an API kind.
func (m *Matcher) ignore(kind string) jsonvalue.Ignore {
	if ig, ok := m.byKind[kind]; ok {
		return ig
	}
	return m.all
}

// jsonBody reports whether the body is compared as JSON, and checks it;
// strict says it must be JSON (declared so, or an LLM API's), so that a body
// that is not is an error rather than compared by bytes.
func jsonBody(r *Request) (isJSON, strict bool, err error) {
	if len(r.Body) == 0 {
		return false, false, nil
	}
	declared := false
	if ct := r.Header.Get("Content-Type"); ct == "application/json" || strings.HasPrefix(ct, "application/json;") {
		declared = true // the usual spelling, without parsing its parameters
	} else if ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			declared = true
		}
	}
	strict = declared || (r.Kind != "" && r.Kind != "generic")
	if deeper(r.Body, MaxDepth) {
		// Before the validator, which recurses once per level.
		if strict {
			return false, true, fmt.Errorf("%s %s: body nests arrays and objects deeper than %d levels: %w", r.Method, r.Path, MaxDepth, ErrTooDeep)
		}
		return false, false, nil // compared by bytes
	}
	valid := gjson.ValidBytes(r.Body)
	if strict && !valid {
		return false, true, fmt.Errorf("%s %s: %w", r.Method, r.Path, ErrMalformedJSON)
	}
	if valid {
		c := firstByte(r.Body)
		return c == '{' || c == '[' || strict, strict, nil
	}
	return false, false, nil
}

// appendBody appends what a body is compared by: its canonical form when it
// is JSON, else its bytes. A body that need not be JSON and holds a number
// out of range is compared by bytes, as one nested too deep is; one that
// must be JSON is an error. structural reports which.
//
// A JSON object or array is read in one pass (the common case); any other
// body, and one that pass refuses, takes the general path, which gives the
// same bytes where both apply and says what is wrong with the rest.
func (m *Matcher) appendBody(b []byte, r *Request) (out []byte, structural bool, err error) {
	if out, ok := m.ignore(r.Kind).AppendCanonicalBytes(b, r.Body); ok {
		return out, true, nil
	}
	return m.appendBodyGeneral(b, r)
}

// appendBodyGeneral is appendBody on a parsed body.
func (m *Matcher) appendBodyGeneral(b []byte, r *Request) (out []byte, structural bool, err error) {
	isJSON, strict, err := jsonBody(r)
	if err != nil {
		return b, false, err
	}
	if isJSON {
		mark := len(b)
		out, err := m.appendCanonical(b, r)
		if err == nil {
			return out, true, nil
		}
		if strict || !errors.Is(err, ErrNumberRange) {
			return b, false, err
		}
		b = out[:mark]
	}
	return append(b, r.Body...), false, nil
}

func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

// CanonicalBody returns the structural form of a request body under the
// rules: sorted keys, no whitespace, canonical numbers and strings, ignored
// paths removed. A body that is not JSON is returned as is. A number beyond
// 10^±jsonvalue.MaxExponent is an error wrapping ErrNumberRange.
func (m *Matcher) CanonicalBody(r *Request) ([]byte, error) {
	out, structural, err := m.appendBody(make([]byte, 0, len(r.Body)), r)
	switch {
	case err != nil:
		return nil, err
	case !structural:
		return r.Body, nil
	}
	return out, nil
}

// appendCanonical appends the canonical form of a JSON body.
func (m *Matcher) appendCanonical(b []byte, r *Request) ([]byte, error) {
	b, err := m.ignore(r.Kind).AppendCanonical(b, gjson.ParseBytes(r.Body))
	if err != nil {
		return b, fmt.Errorf("%s %s: body: %w", r.Method, r.Path, err)
	}
	return b, nil
}

// Key returns the match key of a request: equal keys mean matching requests.
// A body that should be JSON and does not parse is an error wrapping
// ErrMalformedJSON; one that holds a number beyond 10^±jsonvalue.MaxExponent,
// ErrNumberRange.
func (m *Matcher) Key(r *Request) (string, error) {
	// The hash input is the request's parts, each ended by a NUL, the
	// compared headers, then the canonical body: built in one pooled buffer
	// and hashed at once.
	bp := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(bp)
	b := (*bp)[:0]
	for _, part := range [...]string{strings.ToUpper(r.Method), m.upstream(r), r.Path} {
		b = append(b, part...)
		b = append(b, 0)
	}
	b = append(m.appendQuery(b, r.Query), 0)
	for _, name := range m.headers {
		b = append(b, name...)
		b = append(b, ':')
		for i, v := range r.Header.Values(name) {
			if i > 0 {
				b = append(b, 1)
			}
			b = append(b, v...)
		}
		b = append(b, 0)
	}
	b, _, err := m.appendBody(b, r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxPooledKeyBuffer {
		*bp = b
	}
	var key [2 * sha256.Size]byte
	hex.Encode(key[:], sum[:])
	return string(key[:]), nil
}

// keyBuffers hold the hash input of Key between calls.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledKeyBuffer bounds the buffers kept in keyBuffers, so that one
// huge request does not pin its size in memory.
const maxPooledKeyBuffer = 1 << 20

// HeadersRead lists the request headers, by canonical name, that Key,
// Distance and Shape read: Content-Type, which says whether a body is
// JSON, and the headers the rules compare. A Request whose Header holds
// only these gets the same key and the same differences as one holding
// every header. The list is shared: do not change it.
func (m *Matcher) HeadersRead() []string { return m.read }

// Shape is the coarse form of a request (method, upstream, path) under which
// miss diagnostics look for the closest recording.
func (m *Matcher) Shape(r *Request) string {
	return strings.ToUpper(r.Method) + " " + m.upstream(r) + " " + r.Path
}

// WithIgnore returns a matcher like m (its rules, describer and aliases)
// that also leaves paths out of every body's comparison. Its fingerprint
// is that of the merged rules, so a cassette indexed under m is indexed
// again under it. An unusable path is an error wrapping ErrBadRule.
func (m *Matcher) WithIgnore(paths ...string) (*Matcher, error) {
	n, err := New(MergeRules(m.rules, Rules{Ignore: paths}), m.describe)
	if err != nil {
		return nil, err
	}
	froms := make([]string, 0, len(m.alias))
	for from := range m.alias {
		froms = append(froms, from)
	}
	sort.Strings(froms)
	for _, from := range froms {
		n = n.WithAlias(from, m.alias[from])
	}
	return n, nil
}
