package cassette

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/internal/hop"
	"github.com/llmproxy/llmproxy/internal/query"
	"github.com/llmproxy/llmproxy/wire"
)

// Redacted replaces a secret's value.
const Redacted = "REDACTED"

// DefaultSecretHeaders are the request headers that carry credentials or
// account identifiers in the supported providers' APIs (and Azure's API
// Management gateway, and AWS's SigV4 session token). Their values are
// replaced by Redacted, in responses too where a provider echoes one
// (OpenAI's openai-organization and openai-project). Authorization covers
// SigV4's "AWS4-HMAC-SHA256 Credential=…, Signature=…" and OAuth bearer
// tokens (Vertex AI) alike.
var DefaultSecretHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie",
	"OpenAI-Organization", "OpenAI-Project", "Anthropic-Api-Key", "Ocp-Apim-Subscription-Key",
	"X-Amz-Security-Token",
}

// SigningHeaders are the request headers AWS SDKs add for each signing or
// attempt: SigV4's date and payload hash and the SDK's invocation id and
// retry count. They differ on every request, so they are never stored
// (the redactor drops them) and, like the secret headers, a matching rule
// may not name them. The proxy forwards them as the client sent them: it
// never re-signs.
var SigningHeaders = []string{"X-Amz-Date", "X-Amz-Content-Sha256", "Amz-Sdk-Invocation-Id", "Amz-Sdk-Request"}

// DefaultSecretQuery are the query parameters that carry credentials. A
// query is read as internal/query reads it — split at '&' and at ';',
// names unescaped and compared without regard to case — here and in
// matching, which never compares these parameters. The X-Amz- ones are a
// presigned AWS URL's session token, credential scope and signature.
var DefaultSecretQuery = []string{"key", "api_key", "access_token", "X-Amz-Security-Token", "X-Amz-Credential", "X-Amz-Signature"}

// droppedRequestHeaders describe the connection, not the request, besides
// the hop-by-hop headers, and the SigningHeaders.
var droppedRequestHeaders = append([]string{"Content-Length", "Accept-Encoding"}, SigningHeaders...)

// droppedResponseHeaders describe the recorded connection or carry secrets,
// besides the hop-by-hop headers; replay computes its own framing headers.
var droppedResponseHeaders = []string{"Content-Length", "Content-Encoding", "Set-Cookie", "Set-Cookie2"}

// Redactor removes secrets from interactions. The zero value is not useful;
// build one with NewRedactor.
type Redactor struct {
	headers   map[string]bool // canonical names, request side
	query     []string        // secret query names (see internal/query)
	bodyPaths []string
}

// NewRedactor returns a Redactor for the default secrets plus the extra
// header names and gjson body paths given. A body path that is not a valid
// sjson path is an error naming it.
func NewRedactor(extraHeaders, bodyPaths []string) (*Redactor, error) {
	r := &Redactor{headers: map[string]bool{}, query: DefaultSecretQuery}
	for _, h := range append(append([]string{}, DefaultSecretHeaders...), extraHeaders...) {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("redact header: empty name")
		}
		r.headers[http.CanonicalHeaderKey(h)] = true
	}
	for _, p := range bodyPaths {
		if _, err := sjson.SetBytes([]byte(`{}`), p, Redacted); err != nil || strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("redact json path %q: not a valid path", p)
		}
		r.bodyPaths = append(r.bodyPaths, p)
	}
	return r, nil
}

// IsSecretHeader reports whether a request header is redacted or, as the
// SigningHeaders are, never stored: matching may compare neither.
func (r *Redactor) IsSecretHeader(name string) bool {
	k := http.CanonicalHeaderKey(name)
	return r.headers[k] || contains(SigningHeaders, k)
}

// BodyPaths are the extra gjson paths redacted in request bodies; matching
// must ignore them, since a live request still carries the real value.
func (r *Redactor) BodyPaths() []string { return append([]string(nil), r.bodyPaths...) }

// Headers returns a copy of request headers with connection headers removed
// and secret values replaced.
func (r *Redactor) Headers(h http.Header) http.Header { return r.HeadersInto(http.Header{}, h) }

// HeadersInto is Headers into out, which it empties first (or makes, when
// nil) and returns: a caller done with an earlier result may hand its map
// back.
func (r *Redactor) HeadersInto(out, h http.Header) http.Header {
	out = emptied(out)
	for k, vs := range h {
		r.put(out, http.CanonicalHeaderKey(k), vs)
	}
	return out
}

// HeadersOnlyInto is HeadersInto keeping only the headers named (canonical
// names), each as HeadersInto would keep it: for a reader of those alone,
// such as a match.Matcher (see its HeadersRead), the result is the same,
// without the work of copying the rest.
func (r *Redactor) HeadersOnlyInto(out, h http.Header, names []string) http.Header {
	out = emptied(out)
	missing := false
	for _, k := range names {
		if vs, ok := h[k]; ok {
			r.put(out, k, vs)
		} else {
			missing = true
		}
	}
	if missing {
		// Keys read off the wire are canonical; one set by hand may not
		// be.
		for k, vs := range h {
			if c := http.CanonicalHeaderKey(k); c != k && slices.Contains(names, c) && h[c] == nil {
				r.put(out, c, vs)
			}
		}
	}
	return out
}

// emptied is out emptied, or a new map when out is nil.
func emptied(out http.Header) http.Header {
	if out == nil {
		return http.Header{}
	}
	clear(out)
	return out
}

// put puts the request header k (canonical) with values vs into out, its
// secrets redacted, unless llmproxy never keeps it.
func (r *Redactor) put(out http.Header, k string, vs []string) {
	switch {
	case hop.IsHeader(k) || contains(droppedRequestHeaders, k) || strings.HasPrefix(k, "X-Forwarded-") || strings.HasPrefix(k, "X-Llmproxy-"):
	case r.headers[k]:
		out[k] = []string{Redacted}
	default:
		out[k] = redactValues(vs)
	}
}

// ResponseHeaders returns a copy of response headers without connection
// framing, content encoding and cookies, with the values of the default
// secret headers replaced by Redacted and key-shaped strings (see
// RedactKeys) in the others.
func ResponseHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		k = http.CanonicalHeaderKey(k)
		switch {
		case neverServed(k):
			continue
		case containsFold(DefaultSecretHeaders, k):
			out[k] = []string{Redacted}
		default:
			out[k] = redactValues(vs)
		}
	}
	return out
}

// neverServed reports whether a response header, in canonical form, is
// neither recorded nor served from a recording: the hop-by-hop headers, the
// framing headers replay computes itself, and cookies. A cassette written
// by hand or by an older llmproxy may hold one; serving skips it.
func neverServed(k string) bool { return hop.IsHeader(k) || contains(droppedResponseHeaders, k) }

// redactValues returns header values with key-shaped strings replaced: a
// copy when one is, else vs itself, its capacity cut to its length so that
// an append to either header map never writes into the other's values.
func redactValues(vs []string) []string {
	for n, v := range vs {
		if red := RedactKeysString(v); red != v {
			out := slices.Clone(vs)
			out[n] = red
			for m := n + 1; m < len(out); m++ {
				out[m] = RedactKeysString(out[m])
			}
			return out
		}
	}
	return vs[:len(vs):len(vs)]
}

// Path returns an escaped URL path with key-shaped strings in its segments
// replaced; a segment is looked at unescaped, so that an escaped key is
// found too.
func (r *Redactor) Path(p string) string {
	if !strings.Contains(p, "%") {
		return RedactKeysString(p)
	}
	segs := strings.Split(p, "/")
	for n, seg := range segs {
		un, err := url.PathUnescape(seg)
		if err != nil {
			segs[n] = RedactKeysString(seg)
			continue
		}
		if red := RedactKeysString(un); red != un {
			segs[n] = url.PathEscape(red)
		}
	}
	return strings.Join(segs, "/")
}

// Query returns the raw query with secret parameters' values replaced, and
// key-shaped strings (see RedactKeys) in the other values. Parameters are
// separated by '&' or ';'; names and values are looked at unescaped. The
// order of the parameters and the spelling of those without a secret are
// kept.
func (r *Redactor) Query(raw string) string {
	if raw == "" {
		return ""
	}
	var b strings.Builder
	for raw != "" {
		var p string
		var sep byte
		p, sep, raw = query.Cut(raw)
		b.WriteString(r.param(p))
		if sep != 0 {
			b.WriteByte(sep)
		}
	}
	return b.String()
}

// param redacts one name=value pair of a query.
func (r *Redactor) param(p string) string {
	name, un := query.Param(p)
	if query.Named(name, r.query) {
		return url.QueryEscape(name) + "=" + Redacted
	}
	_, value, hasValue := strings.Cut(p, "=")
	if !hasValue {
		return RedactKeysString(p)
	}
	if red := RedactKeysString(un); red != un {
		return p[:len(p)-len(value)] + url.QueryEscape(red)
	}
	return p
}

// Body returns body with every configured JSON path replaced by Redacted,
// and key-shaped strings (see RedactKeys) anywhere in it. A body that is
// not JSON only loses its key-shaped strings.
func (r *Redactor) Body(body []byte) []byte {
	body = RedactKeys(body)
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

// Redact removes every secret from the interaction in place: secret
// headers and query parameters by name, configured body paths, and
// key-shaped strings (see RedactKeys) in the request's path, query,
// headers and body and in the response's headers, body and events.
// Redacting twice changes nothing more.
func (r *Redactor) Redact(i *Interaction) {
	i.Request.Path = r.Path(i.Request.Path)
	i.Request.Headers = r.Headers(i.Request.Headers)
	i.Request.Query = r.Query(i.Request.Query)
	i.Request.Body = r.Body(i.Request.Body)
	i.Response.Headers = ResponseHeaders(i.Response.Headers)
	i.Response.Body = RedactKeys(i.Response.Body)
	eventStream := i.Response.WireFraming() == wire.FramingEventStream
	for n := range i.Response.Events {
		if eventStream {
			i.Response.Events[n].Data = redactMessage(i.Response.Events[n].Data)
			continue
		}
		i.Response.Events[n].Data = RedactKeys(i.Response.Events[n].Data)
	}
}

// redactMessage redacts key-shaped strings in an event stream message's
// payload and frames it anew, lengths and CRCs computed for the new
// payload, so that no message served from a cassette fails its CRC. A
// message that does not decode (which recording never stores) loses its
// key-shaped strings as any bytes do.
func redactMessage(raw []byte) []byte {
	out, err := wire.ReframeEventStream(raw, RedactKeys)
	if err != nil {
		return RedactKeys(raw)
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
