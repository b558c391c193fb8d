package view

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CookieName is the cookie that carries a session's id once the login form
// accepted the admin token. It is sent to every /_llmproxy/ path, so the
// API accepts it too (see Handler.Access).
const CookieName = "llmproxy_session"

// cookiePath is where the browser sends the cookie: the view and the API.
const cookiePath = "/_llmproxy/"

// Access says what a request's credentials are worth against the admin
// token: Granted for Authorization: Bearer TOKEN or the cookie of a live
// session (and for every request when no token is set), Refused for none
// or a wrong one, Throttled — with how long to wait — for a client address
// that sent more than 5 wrong tokens lately (from 1 s, doubling at each
// further one up to 5 min; 15 min without one forgets them). A session
// lasts SessionLifetime or until sign-out. The API asks it as the view
// does.
func (h *Handler) Access(r *http.Request) (Access, time.Duration) { return h.gate.access(r) }

// LocalHost reports whether a request's Host names a loopback address
// ("localhost", a name under .localhost, 127.0.0.0/8, ::1) or the address
// the request arrived on. A page served to any other Host could be a DNS
// rebinding attack: another site's page talking to a loopback server under
// its own name.
func LocalHost(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return strings.EqualFold(r.Host, local.String())
	}
	return false
}

// admit lets a request through, or answers it: 403 for a foreign Host
// without a token, the login form (401) for a page without the token.
// The login form and the static files need no token.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.AdminToken == "" {
		if LocalHost(r) {
			return true
		}
		h.problem(w, r, http.StatusForbidden, "llmproxy: the view answers only requests addressed to a loopback name or to "+
			"the listener's own address (Host "+r.Host+" is neither); set --admin-token to serve it to other names")
		return false
	}
	if strings.HasPrefix(r.URL.Path, Prefix+"static/") || r.URL.Path == Prefix+"login" {
		return true
	}
	access, wait := h.Access(r)
	switch {
	case access == Granted:
		return true
	case access == Throttled:
		w.Header().Set("Retry-After", RetryAfter(wait))
		h.problem(w, r, http.StatusTooManyRequests, "llmproxy: too many wrong admin tokens from this address; try again in "+RetryAfter(wait)+" s")
		return false
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		h.problem(w, r, http.StatusUnauthorized, "llmproxy: the view needs the admin token (--admin-token)")
		return false
	}
	h.loginForm(w, r, http.StatusUnauthorized, r.URL.RequestURI(), "")
	return false
}

type loginData struct {
	Next, Problem string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.AdminToken == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	h.loginForm(w, r, http.StatusOK, r.URL.Query().Get("next"), "")
}

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request, status int, next, problem string) {
	h.render(w, r, status, "login", &page{Title: "Sign in", Data: loginData{Next: localNext(next), Problem: problem}})
}

// login checks the token of the form and sets the session cookie. A form
// posted from another origin is refused.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.opts.AdminToken == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) {
		h.problem(w, r, http.StatusForbidden, "llmproxy: the login form was posted from another origin")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	token, next := r.PostFormValue("token"), localNext(r.PostFormValue("next"))
	switch access, wait := h.gate.attempt(clientOf(r), h.gate.is(token)); access {
	case Throttled:
		w.Header().Set("Retry-After", RetryAfter(wait))
		h.loginForm(w, r, http.StatusTooManyRequests, next, "Too many wrong tokens from this address: try again in "+RetryAfter(wait)+" s.")
		return
	case Refused:
		h.loginForm(w, r, http.StatusUnauthorized, next, "That is not the admin token this llmproxy was started with.")
		return
	}
	id, expires := h.gate.open()
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: cookiePath, MaxAge: int(SessionLifetime / time.Second), Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session on the server and clears its cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		h.problem(w, r, http.StatusForbidden, "llmproxy: the logout form was posted from another origin")
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		h.gate.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: cookiePath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// sameOrigin reports whether a form post comes from a page of this host:
// its Origin (or, lacking one, Referer) names the request's Host, or is
// absent (a client that is not a browser).
func sameOrigin(r *http.Request) bool {
	from := r.Header.Get("Origin")
	if from == "" {
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return true
	}
	u, err := url.Parse(from)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// localNext keeps a redirect target only if it is a page of the view, so
// that the login form cannot send anyone elsewhere.
func localNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, Prefix) ||
		strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return Prefix
	}
	return u.RequestURI()
}
