package proxy

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// corsMaxAge is how long, in seconds, a browser may keep a preflight answer.
const corsMaxAge = "600"

// browserGuard is the check every request passes before any route: a
// browser request (one with an Origin header) whose origin is neither
// loopback nor listed in Config.AllowOrigins is refused with 403, so a web
// page cannot make the proxy record, replay or answer for it; and, without
// an admin token, every route — the API and the proxied ones alike —
// answers only a Host that is a loopback name or the listener's own
// address, so a DNS-rebound page can read neither the API nor a replayed
// answer. (Without a token the listener is loopback, so every client that
// can connect may name it so.) Allowed origins get CORS answers: the
// proxy answers their preflights itself, and sets Access-Control-Allow-Origin
// (over any the upstream or the recording sent), Vary: Origin and the
// exposed headers on every response.
func (s *Server) browserGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		browser := origin != ""
		if browser && !s.allowedOrigin(origin) {
			apiError(w, http.StatusForbidden, "forbidden", "llmproxy: Origin "+origin+
				" is refused: only loopback origins (http://localhost:*, http://127.0.0.1:*, http://[::1]:*) and those listed by --allow-origin may call the proxy")
			return
		}
		if s.cfg.AdminToken == "" && !s.allowedHost(r) {
			if !isReserved(r.URL.Path) {
				sandbox(w.Header())
			}
			apiError(w, http.StatusForbidden, "forbidden", "llmproxy: Host "+r.Host+
				" is refused: without --admin-token, the proxy answers only a loopback Host (localhost, 127.0.0.1, [::1]) or the listener's own address")
			return
		}
		if !browser {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			preflight(w, r, origin)
			return
		}
		next.ServeHTTP(&corsWriter{ResponseWriter: w, origin: origin}, r)
	})
}

// The headers every answer to a proxied request carries: the answer is an
// upstream's, a recording's or a scenario's, never the proxy's own page, so
// a browser must neither run it as the proxy's origin (where /_llmproxy/
// is) nor guess its type. The slices are shared by every response and
// never changed in place (their capacity is their length).
var (
	sandboxPolicy = []string{"sandbox"}
	noSniff       = []string{"nosniff"}
)

// sandbox sets Content-Security-Policy: sandbox and X-Content-Type-Options:
// nosniff in h, without allocating. A policy h already holds (the
// upstream's or the recording's own) is kept beside it, since a browser
// enforces every policy it is given.
func sandbox(h http.Header) {
	h["X-Content-Type-Options"] = noSniff
	switch csp := h["Content-Security-Policy"]; {
	case len(csp) == 0:
		h["Content-Security-Policy"] = sandboxPolicy
	case !slices.Contains(csp, sandboxPolicy[0]):
		h["Content-Security-Policy"] = append(csp[:len(csp):len(csp)], sandboxPolicy[0])
	}
}

// allowedOrigin reports whether a browser origin is loopback or listed.
func (s *Server) allowedOrigin(origin string) bool {
	o := strings.TrimSuffix(strings.ToLower(origin), "/")
	if slices.Contains(s.cfg.AllowOrigins, "*") || slices.ContainsFunc(s.cfg.AllowOrigins, func(a string) bool {
		return strings.TrimSuffix(strings.ToLower(a), "/") == o
	}) {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// allowedHost reports whether a request's Host is a loopback name or the
// address of the listener it came in on. A request that came in on no
// listener (handed to ServeHTTP in process, by a test or a benchmark) is
// allowed: no browser reached it, so nothing was rebound.
func (s *Server) allowedHost(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if r.Host == "" || !ok {
		return true // no browser sends an empty Host
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if isLoopbackName(host) {
		return true
	}
	h, _, err := net.SplitHostPort(a.String())
	return err == nil && strings.EqualFold(strings.Trim(h, "[]"), host)
}

// isLoopbackName reports whether a host name or IP is loopback.
func isLoopbackName(host string) bool {
	switch host {
	case "127.0.0.1", "localhost", "::1": // what clients send, without parsing
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// preflight answers a CORS preflight of an allowed origin, allowing the
// method and the headers it asks for.
func preflight(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
	if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
		h.Set("Access-Control-Allow-Headers", asked)
	}
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// corsWriter sets the CORS headers of an allowed origin on a response as
// its header goes out, over any the upstream or the recording carries.
type corsWriter struct {
	http.ResponseWriter
	origin string
	done   bool
}

func (c *corsWriter) WriteHeader(status int) {
	if !c.done {
		c.done = true
		h := c.Header()
		h.Set("Access-Control-Allow-Origin", c.origin)
		h.Del("Access-Control-Allow-Credentials")
		if !slices.Contains(h.Values("Vary"), "Origin") {
			h.Add("Vary", "Origin")
		}
		h.Set("Access-Control-Expose-Headers", MissHeader+", *")
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *corsWriter) Write(p []byte) (int, error) {
	if !c.done {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *corsWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
