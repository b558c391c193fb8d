package cassette

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/internal/hop"
)

// Redacted replaces a secret's value.
const Redacted = "REDACTED"

// DefaultSecretHeaders are the request headers that carry credentials in the
// supported providers' APIs. Their values are replaced by Redacted.
var DefaultSecretHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie",
}

// DefaultSecretQuery are the query parameters that carry credentials.
var DefaultSecretQuery = []string{"key"}

// droppedRequestHeaders describe the connection, not the request, besides
// the hop-by-hop headers.
var droppedRequestHeaders = []string{"Content-Length", "Accept-Encoding"}

// droppedResponseHeaders describe the recorded connection or carry secrets,
// besides the hop-by-hop headers; replay computes its own framing headers.
var droppedResponseHeaders = []string{"Content-Length", "Content-Encoding", "Set-Cookie", "Set-Cookie2"}

// Redactor removes secrets from interactions. The zero value is not useful;
// build one with NewRedactor.
type Redactor struct {
	headers   map[string]bool // canonical names, request side
	query     map[string]bool
	bodyPaths []string
}

// NewRedactor returns a Redactor for the default secrets plus the extra
// header names and gjson body paths given. A body path that is not a valid
// sjson path is an error naming it.
func NewRedactor(extraHeaders, bodyPaths []string) (*Redactor, error) {
	r := &Redactor{headers: map[string]bool{}, query: map[string]bool{}}
	for _, h := range append(append([]string{}, DefaultSecretHeaders...), extraHeaders...) {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("redact header: empty name")
		}
		r.headers[http.CanonicalHeaderKey(h)] = true
	}
	for _, q := range DefaultSecretQuery {
		r.query[q] = true
	}
	for _, p := range bodyPaths {
		if _, err := sjson.SetBytes([]byte(`{}`), p, Redacted); err != nil || strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("redact json path %q: not a valid path", p)
		}
		r.bodyPaths = append(r.bodyPaths, p)
	}
	return r, nil
}

// IsSecretHeader reports whether a request header is redacted.
func (r *Redactor) IsSecretHeader(name string) bool { return r.headers[http.CanonicalHeaderKey(name)] }

// BodyPaths are the extra gjson paths redacted in request bodies; matching
// must ignore them, since a live request still carries the real value.
func (r *Redactor) BodyPaths() []string { return append([]string(nil), r.bodyPaths...) }

// Headers returns a copy of request headers with connection headers removed
// and secret values replaced.
func (r *Redactor) Headers(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		k = http.CanonicalHeaderKey(k)
		if hop.IsHeader(k) || contains(droppedRequestHeaders, k) || strings.HasPrefix(k, "X-Forwarded-") || strings.HasPrefix(k, "X-Llmproxy-") {
			continue
		}
		if r.headers[k] {
			out[k] = []string{Redacted}
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// ResponseHeaders returns a copy of response headers without connection
// framing, content encoding and cookies.
func ResponseHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		k = http.CanonicalHeaderKey(k)
		if hop.IsHeader(k) || contains(droppedResponseHeaders, k) {
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Query returns the raw query with secret parameters' values replaced. The
// order of the other parameters is kept; a query that does not parse is
// kept only where it holds no secret name.
func (r *Redactor) Query(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		if un, err := url.QueryUnescape(name); err == nil {
			name = un
		}
		if r.query[name] {
			parts[i] = url.QueryEscape(name) + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

// Body returns body with every configured JSON path replaced by Redacted. A
// body that is not JSON is returned unchanged.
func (r *Redactor) Body(body []byte) []byte {
	if len(r.bodyPaths) == 0 || !gjson.ValidBytes(body) {
		return body
	}
	out := body
	for _, p := range r.bodyPaths {
		if !gjson.GetBytes(out, p).Exists() {
			continue
		}
		if b, err := sjson.SetBytes(out, p, Redacted); err == nil {
			out = b
		}
	}
	return out
}

// Redact removes every secret from the interaction in place.
func (r *Redactor) Redact(i *Interaction) {
	i.Request.Headers = r.Headers(i.Request.Headers)
	i.Request.Query = r.Query(i.Request.Query)
	i.Request.Body = r.Body(i.Request.Body)
	i.Response.Headers = ResponseHeaders(i.Response.Headers)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
