package view

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CookieName is the cookie that carries the admin token's proof once the
// login form accepted it. It is sent to every /_llmproxy/ path, so the API
// accepts it too (see Authorized).
const CookieName = "llmproxy_session"

// cookiePath is where the browser sends the cookie: the view and the API.
const cookiePath = "/_llmproxy/"

// session is the cookie value for a token: an HMAC of a fixed label under
// the token, so that the cookie jar never holds the token itself and one
// token always gives the same cookie.
func session(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("llmproxy view session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// Authorized reports whether a request carries the admin token: as
// Authorization: Bearer TOKEN, or as the cookie the view's login form sets.
// It compares in constant time. An empty token authorizes every request.
func Authorized(r *http.Request, token string) bool {
	if token == "" {
		return true
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
		return true
	}
	c, err := r.Cookie(CookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(session(token))) == 1
}

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
	if Authorized(r, h.opts.AdminToken) || strings.HasPrefix(r.URL.Path, Prefix+"static/") || r.URL.Path == Prefix+"login" {
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
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
	if subtle.ConstantTimeCompare([]byte(token), []byte(h.opts.AdminToken)) != 1 {
		h.loginForm(w, r, http.StatusUnauthorized, next, "That is not the admin token this llmproxy was started with.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: session(h.opts.AdminToken), Path: cookiePath,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout clears the session cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		h.problem(w, r, http.StatusForbidden, "llmproxy: the logout form was posted from another origin")
		return
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
