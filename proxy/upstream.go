package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/hop"
)

// DefaultUpstreams are the built-in upstreams: openai, anthropic and gemini
// at the providers' public API origins, and ollama at a local Ollama
// server's default address.
func DefaultUpstreams() map[string]*url.URL {
	return map[string]*url.URL{
		"openai":    mustURL("https://api.openai.com"),
		"anthropic": mustURL("https://api.anthropic.com"),
		"gemini":    mustURL("https://generativelanguage.googleapis.com"),
		"ollama":    mustURL("http://127.0.0.1:11434"),
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// ParseUpstreamURL parses the base URL of an upstream, which must be an
// http or https URL with a host. An error wraps ErrConfig.
func ParseUpstreamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !isHTTPURL(u) {
		return nil, fmt.Errorf("%q is not an http(s) URL: %w", raw, ErrConfig)
	}
	return u, nil
}

func isHTTPURL(u *url.URL) bool {
	return u != nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// CheckUpstreamName rejects an upstream name that cannot be the first
// segment of a request path: an empty one, one holding "/", "?" or "#", and
// one starting with "_" (the proxy's own /_llmproxy/ is there). An error
// wraps ErrConfig.
func CheckUpstreamName(name string) error {
	if name == "" || strings.ContainsAny(name, "/?#") || strings.HasPrefix(name, "_") {
		return fmt.Errorf("upstream name %q: %w", name, ErrConfig)
	}
	if name == MCPPrefix {
		return fmt.Errorf("upstream name %q: /%s/NAME/ is the route of MCP servers (--mcp NAME=URL): %w", name, MCPPrefix, ErrConfig)
	}
	return nil
}

// route is where a request goes.
type route struct {
	name string   // upstream name
	base *url.URL // upstream base URL
	path string   // upstream-relative path, escaped as received
	// unprefixed: the path named no configured upstream.
	unprefixed bool
	// mcp: the path is under /mcp/NAME (see MCPPrefix); base is nil when
	// no MCP server NAME was configured.
	mcp bool
}

// route picks the upstream from the first path segment only.
func (s *Server) route(r *http.Request) route {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		if rt, ok := s.mcpRoute(rest); ok {
			return rt
		}
		name, tail, _ := strings.Cut(rest, "/")
		if u, ok := s.upstreams[name]; ok {
			return route{name: name, base: u, path: "/" + tail}
		}
	}
	if s.openaiDefault {
		// One route with /openai/...: stored, matched and shown alike.
		return route{name: "openai", base: s.cfg.Default, path: p, unprefixed: true}
	}
	return route{name: cassette.DefaultUpstream, base: s.cfg.Default, path: p, unprefixed: true}
}

// upstreamURL builds the outgoing URL from the configured base only.
func upstreamURL(rt route, rawQuery string) string {
	base := strings.TrimSuffix(rt.base.String(), "/")
	u := base + rt.path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// outgoingHeaders copies the client's headers for the upstream, without
// connection headers, forwarding headers, llmproxy's own headers, Host, and
// Accept-Encoding (the transport negotiates and decodes gzip itself).
func outgoingHeaders(in http.Header) http.Header {
	out := in.Clone()
	for _, h := range strings.Split(in.Get("Connection"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out.Del(h)
		}
	}
	hop.Remove(out)
	for k := range out {
		if strings.HasPrefix(k, "X-Forwarded-") || strings.HasPrefix(k, "X-Llmproxy-") || k == "Forwarded" || k == "X-Real-Ip" {
			delete(out, k)
		}
	}
	out.Del("Accept-Encoding")
	out.Del("Host")
	return out
}
