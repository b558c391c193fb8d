package view_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// signIn posts the login form and returns the answer.
func signIn(t *testing.T, base, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/_llmproxy/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestSessionExpiresAndEndsAtSignOut: each sign-in opens its own random
// session whose cookie expires; signing out ends the session on the
// server, so the cookie, replayed, no longer opens anything.
func TestSessionExpiresAndEndsAtSignOut(t *testing.T) {
	const token = "s3cret-token"
	srv, _ := serve(t, sampleSource(t), token)
	var cookies []*http.Cookie
	for range 2 {
		resp := signIn(t, srv.URL, token)
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
			t.Fatalf("sign-in: %d, cookies %v", resp.StatusCode, resp.Cookies())
		}
		c := resp.Cookies()[0]
		if c.MaxAge <= 0 || c.MaxAge > 24*60*60 {
			t.Errorf("the session cookie's Max-Age is %d, want an expiry within a day", c.MaxAge)
		}
		cookies = append(cookies, c)
	}
	if cookies[0].Value == cookies[1].Value {
		t.Errorf("two sign-ins gave the same cookie %q: it is derived from the token, not a session", cookies[0].Value)
	}
	with := func(c *http.Cookie) func(*http.Request) {
		return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value}) }
	}
	for _, c := range cookies {
		if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", with(c)); resp.StatusCode != 200 {
			t.Fatalf("a signed-in page: %d", resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/_llmproxy/ui/logout", nil)
	with(cookies[0])(req)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	out, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", with(cookies[0])); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie of a signed-out session still opens the view: %d, want 401", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", with(cookies[1])); resp.StatusCode != 200 {
		t.Errorf("signing out one session ended the other: %d", resp.StatusCode)
	}
}

// TestWrongTokensWait: past a few wrong tokens — from the login form or as
// a Bearer header — a client's attempts are answered 429 with Retry-After
// without being looked at, the right token included; a signed-in session
// still works, and another client is not held back.
func TestWrongTokensWait(t *testing.T) {
	const token = "s3cret-token"
	srv, h := serve(t, sampleSource(t), token)
	session := signIn(t, srv.URL, token).Cookies()[0]
	for n := range 5 {
		if resp := signIn(t, srv.URL, "wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", n+1, resp.StatusCode)
		}
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", bearer("wrong-again")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the sixth wrong token: %d, want 401 (it starts the wait)", resp.StatusCode)
	}
	for name, resp := range map[string]*http.Response{
		"login with the right token": signIn(t, srv.URL, token),
		"Bearer with the right token": func() *http.Response {
			resp, _ := get(t, srv.URL+"/_llmproxy/ui/", bearer(token))
			return resp
		}(),
	} {
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(resp.Cookies()) != 0 {
			t.Errorf("%s while waiting: %d, Retry-After %q, cookies %v; want 429 with Retry-After and no cookie",
				name, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Cookies())
		}
	}
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", func(r *http.Request) { r.AddCookie(session) }); resp.StatusCode != 200 {
		t.Errorf("a session opened before: %d, want 200", resp.StatusCode)
	}
	other := httptestRequest(t, h, "10.1.2.3:4000", token)
	if other != 200 {
		t.Errorf("another client with the right token: %d, want 200", other)
	}
}

// httptestRequest serves one GET of the view with a Bearer token from a
// given client address, straight through the handler.
func httptestRequest(t *testing.T, h http.Handler, remote, token string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/_llmproxy/ui/", nil)
	req.RemoteAddr = remote
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}
