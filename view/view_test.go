package view_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/uitest"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/view"
)

// checkHeaders fails unless a page carries the view's security headers.
func checkHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: Content-Security-Policy %q allows unsafe script or style", what, csp)
	}
	for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %s = %q, want %q", what, name, got, want)
		}
	}
}

func TestPages(t *testing.T) {
	src := sampleSource(t)
	src.served[1] = true
	src.graphs = []view.Graph{{Name: "weather", File: "weather.yaml", Steps: []view.Step{
		{ID: "ask", When: `latest-user equals "What's the weather in Paris?"`, Respond: "tool-calls paris", Then: []string{"answer"}, Answered: 1},
		{ID: "answer", When: "tool-result paris", Respond: `text "Paris is sunny"`, Complete: true},
	}}}
	src.add(view.LogEntry{Time: time.Now(), Method: "POST", Path: "/v1/chat/completions", Kind: "openai-chat", Model: "gpt-4o-mini",
		Interaction: 1, Status: 200, Millis: 3.5, ToolCalls: []cassette.ToolCall{{ID: "call_weather", Name: "weather", Arguments: []byte(`{}`)}}})
	src.add(view.LogEntry{Time: time.Now(), Method: "POST", Path: "/v1/chat/completions", Kind: "openai-chat", Status: 400,
		Miss: "llmproxy: cassette x has no recording of this request", Closest: 2,
		Differences: []match.Difference{{Path: "messages.0.content", Where: "messages[0] (user)", Got: `"Rome <b>?"`, Want: `"Paris"`}, {Path: "model", Got: "a", Want: "b"}}})
	srv, _ := serve(t, src, "")
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/_llmproxy/ui/", 200, []string{"Interactions 1–8 of 8.", `<a href="/_llmproxy/ui/interactions/3">3</a>`, "lookup_population",
			"anthropic-messages", "gemini", "ollama", "openai-responses", `class="badge ok"`, `name="q"`,
			`<th scope="col">model</th>`, "<td>gpt-4o-mini-2024-07-18</td>", `<th scope="col" class="num">age</th>`, `<time datetime="2026-`}},
		{"/_llmproxy/ui/?q=anthropic", 200, []string{"1 match for “anthropic”", "/_llmproxy/ui/interactions/5"}},
		// Interaction 5 streams an answer whose text names get_weather.
		{"/_llmproxy/ui/?q=stream+weather", 200, []string{"4 matches for", "/_llmproxy/ui/interactions/1", "/_llmproxy/ui/interactions/5", "/_llmproxy/ui/interactions/8"}},
		{"/_llmproxy/ui/?q=nothing-like-this", 200, []string{"0 matches for"}},
		{"/_llmproxy/ui/interactions/1", 200, []string{
			`<article class="msg user">`, "What&#39;s the weather in Paris?", `calls <code>weather</code>`,
			`fixture · weather`, `<h2 id="timeline">Stream timeline</h2>`, `<a href="#event-1" class="tick k0">`, `id="event-1"`,
			"Headers (as stored)", "served in this process", `rel="next"`}},
		{"/_llmproxy/ui/interactions/2", 200, []string{`result of <code>weather</code>`, `fixture · weather`, `class="msg tool"`}},
		{"/_llmproxy/ui/interactions/3", 200, []string{"Can the country of Crumpet have dragons?", "lookup_population", "&#34;country&#34;: &#34;Crumpet&#34;", "Cf-Ray"}},
		{"/_llmproxy/ui/interactions/4", 200, []string{`class="msg tool"`, "function_call_output", "2869461"}},
		{"/_llmproxy/ui/interactions/5", 200, []string{"Two names for a pet pelican", "pelican_name_generator", "Charles", "stream · ",
			`<code>message_start</code> × 1`, `<code>content_block_delta</code> ×`, `class="tick k1"><title>event 2 (content_block_start)`}},
		{"/_llmproxy/ui/interactions/6", 200, []string{"What is the capital of the user country?", "get_country", "Mexico"}},
		{"/_llmproxy/ui/interactions/8", 200, []string{"what is the weather in Toronto?", "11 degrees celsius", "ndjson"}},
		{"/_llmproxy/ui/log", 200, []string{`<a href="/_llmproxy/ui/interactions/1">interaction 1</a>`, "gpt-4o-mini",
			`class="badge bad">miss`, "Closest: <a href=\"/_llmproxy/ui/interactions/2\">interaction 2</a>",
			"&#34;Rome &lt;b&gt;?&#34;", "&#34;Paris&#34;", "messages[0] (user)", `data-events="/_llmproxy/ui/log/events?after=2"`}},
		{"/_llmproxy/ui/presets", 200, []string{`id="weather"`, "Arguments schema", "Result schema", "Error schema",
			"&#34;retryable&#34;", "apply_patch", "current_time"}},
		{"/_llmproxy/ui/scenario", 200, []string{`class="node answered"`, "✓ ask", "answered 1×", "answer · complete",
			`marker-end="url(#arrow-0)"`, "weather.yaml"}},
		{"/_llmproxy/ui/static/style.css", 200, []string{"prefers-color-scheme: dark"}},
		{"/_llmproxy/ui/static/app.js", 200, []string{"EventSource", "DOMParser"}},
		{"/_llmproxy/ui/nope", 404, []string{"the view has no page /_llmproxy/ui/nope"}},
		{"/_llmproxy/ui/interactions/99", 404, []string{"interaction 99"}},
		{"/_llmproxy/ui/interactions/abc", 404, []string{"is not an interaction id"}},
		{"/_llmproxy/ui/interactions/1?cassette=other", 404, []string{"there is no cassette &#34;other&#34;"}},
		{"/_llmproxy/ui/?after=x", 400, []string{"take an interaction id"}},
		{"/_llmproxy/ui/static/nope.js", 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(t, srv.URL+tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body:\n%.2000s", resp.StatusCode, tc.status, body)
			}
			checkHeaders(t, tc.path, resp)
			if missing := containsAll(body, tc.want...); missing != "" {
				t.Errorf("the page lacks %q; body:\n%.4000s", missing, body)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && !strings.Contains(body, "<!doctype html>") {
				t.Errorf("an HTML answer that is not a page: %.300s", body)
			}
		})
	}
	t.Run("no scenario", func(t *testing.T) {
		src.graphs = nil
		_, body := get(t, srv.URL+"/_llmproxy/ui/scenario")
		if !strings.Contains(body, "This process serves no scenario") {
			t.Errorf("the scenario page without a scenario does not say so:\n%.2000s", body)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		resp, _ := get(t, srv.URL+"/_llmproxy/ui")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/_llmproxy/ui/" {
			t.Errorf("/_llmproxy/ui: %d to %q, want 301 to /_llmproxy/ui/", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

// scriptTag finds the start of an element that would run script.
var scriptTag = regexp.MustCompile(`(?i)<(script|img|svg|iframe|object)\b[^>]*>`)

func TestHostileContentIsText(t *testing.T) {
	src := sampleSource(t)
	src.add(view.LogEntry{Time: time.Now(), Method: "POST", Path: "/v1/<script>x</script>", Status: 400, Miss: uitest.HostileAnswer,
		Closest: uitest.HostileID, Differences: []match.Difference{{Path: "<img src=x onerror=alert(1)>", Got: uitest.HostileUser, Want: uitest.HostileTool}},
		ToolCalls: []cassette.ToolCall{{ID: "<i>", Name: uitest.HostileTool}}})
	srv, _ := serve(t, src, "")
	for _, path := range []string{fmt.Sprintf("/_llmproxy/ui/interactions/%d", uitest.HostileID), "/_llmproxy/ui/log", "/_llmproxy/ui/?q=%3Cscript%3E"} {
		t.Run(path, func(t *testing.T) {
			_, body := get(t, srv.URL+path)
			for _, tag := range scriptTag.FindAllString(body, -1) {
				// The page's own: its script file, and the SVG it draws.
				if tag == `<script src="/_llmproxy/ui/static/app.js" defer>` || strings.HasPrefix(tag, `<svg viewBox=`) {
					continue
				}
				t.Errorf("the page holds the element %s", tag)
			}
			for _, bad := range []string{"onerror=\"", "onload=\"", "<b>bold", "<i>x"} {
				if strings.Contains(body, bad) {
					t.Errorf("the page holds %q unescaped", bad)
				}
			}
		})
	}
	_, body := get(t, srv.URL+fmt.Sprintf("/_llmproxy/ui/interactions/%d", uitest.HostileID))
	if missing := containsAll(body, "&lt;script&gt;window.pwned = &#34;user&#34;", "&lt;img src=x onerror=", "&lt;svg onload=",
		"call_&lt;i&gt;x&lt;/i&gt;", "&#34;&gt;&lt;script&gt;window.pwned=&#34;header&#34;"); missing != "" {
		t.Errorf("the hostile content is not shown as text: no %q", missing)
	}
}

func TestHostCheck(t *testing.T) {
	srv, _ := serve(t, sampleSource(t), "")
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		host   string
		status int
	}{
		{u.Host, 200},
		{"localhost:" + u.Port(), 200},
		{"LOCALHOST", 200},
		{"app.localhost:1234", 200},
		{"127.0.0.2:80", 200},
		{"[::1]:" + u.Port(), 200},
		{"evil.example:" + u.Port(), 403},
		{"evil.example", 403},
		{"127.0.0.1.evil.example", 403},
		{"10.0.0.1:" + u.Port(), 403},
	} {
		paths := []string{"/_llmproxy/ui/", "/_llmproxy/ui/static/app.js"}
		if tc.status == 403 {
			paths = append(paths, "/_llmproxy/ui/log/events") // answered, it would stream on
		}
		for _, path := range paths {
			resp, body := get(t, srv.URL+path, func(r *http.Request) { r.Host = tc.host })
			if resp.StatusCode != tc.status {
				t.Errorf("Host %s, %s: status %d, want %d", tc.host, path, resp.StatusCode, tc.status)
			}
			if tc.status == 403 {
				checkHeaders(t, "403", resp)
				if !strings.Contains(body, "loopback name") {
					t.Errorf("Host %s: the 403 does not say why: %.500s", tc.host, body)
				}
			}
		}
	}
}

func TestToken(t *testing.T) {
	const token = "s3cret-token"
	srv, _ := serve(t, sampleSource(t), token)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(form url.Values, edit ...func(*http.Request)) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/_llmproxy/ui/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, e := range edit {
			e(req)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	for _, path := range []string{"/_llmproxy/ui/", "/_llmproxy/ui/interactions/1", "/_llmproxy/ui/log", "/_llmproxy/ui/log/events",
		"/_llmproxy/ui/presets", "/_llmproxy/ui/scenario", "/_llmproxy/ui/nope"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `<form class="login"`) {
			t.Errorf("%s without the token: status %d, want 401 and the login form", path, resp.StatusCode)
		}
		if strings.Contains(body, "Crumpet") || strings.Contains(body, "weather") {
			t.Errorf("%s without the token shows recorded content", path)
		}
		checkHeaders(t, path, resp)
	}
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/static/style.css"); resp.StatusCode != 200 {
		t.Errorf("the stylesheet needs the token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", func(r *http.Request) { r.Host = "view.example.com" }); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("with a token, another Host: %d, want 401 (the token, not the Host, guards)", resp.StatusCode)
	}

	if resp := post(url.Values{"token": {"wrong"}, "next": {"/_llmproxy/ui/log"}}); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong token: status %d, cookies %v; want 401 and none", resp.StatusCode, resp.Cookies())
	}
	if resp := post(url.Values{"token": {token}}, func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a login posted from another origin: status %d, want 403", resp.StatusCode)
	}
	resp := post(url.Values{"token": {token}, "next": {"/_llmproxy/ui/log?cassette=a"}}, func(r *http.Request) { r.Header.Set("Origin", srv.URL) })
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/_llmproxy/ui/log?cassette=a" {
		t.Fatalf("login: status %d to %q, want 303 to the page asked for", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set cookies %v, want one", cookies)
	}
	c := cookies[0]
	if c.Name != view.CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/_llmproxy/" {
		t.Errorf("cookie %+v, want %s, HttpOnly, SameSite=Strict, Path=/_llmproxy/", c, view.CookieName)
	}
	if strings.Contains(c.Value, token) {
		t.Errorf("the cookie holds the token itself: %q", c.Value)
	}
	for _, open := range []func(*http.Request){
		func(r *http.Request) { r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value}) },
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) },
	} {
		if resp, body := get(t, srv.URL+"/_llmproxy/ui/interactions/3", open); resp.StatusCode != 200 || !strings.Contains(body, "Crumpet") {
			t.Errorf("with the token: status %d, want the page", resp.StatusCode)
		}
	}
	for _, bad := range []func(*http.Request){
		func(r *http.Request) { r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value + "0"}) },
		func(r *http.Request) { r.AddCookie(&http.Cookie{Name: c.Name, Value: token}) },
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") },
		func(r *http.Request) { r.Header.Set("Authorization", token) },
	} {
		if resp, _ := get(t, srv.URL+"/_llmproxy/ui/", bad); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a wrong cookie or header: status %d, want 401", resp.StatusCode)
		}
	}
	for next, want := range map[string]string{
		"https://evil.example/":       "/_llmproxy/ui/",
		"//evil.example/_llmproxy/ui": "/_llmproxy/ui/",
		"/elsewhere":                  "/_llmproxy/ui/",
		`/_llmproxy/ui/\evil`:         "/_llmproxy/ui/",
		"/_llmproxy/ui/presets#x":     "/_llmproxy/ui/presets",
	} {
		if got := post(url.Values{"token": {token}, "next": {next}}).Header.Get("Location"); got != want {
			t.Errorf("login with next=%q redirects to %q, want %q", next, got, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/_llmproxy/ui/logout", nil)
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	out, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if cs := out.Cookies(); out.StatusCode != http.StatusSeeOther || len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("logout: status %d, cookies %v; want 303 and the cookie cleared", out.StatusCode, cs)
	}
}

func TestAccess(t *testing.T) {
	req := func(edit func(*http.Request)) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://x/_llmproxy/log", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		edit(r)
		return r
	}
	_, open := serve(t, sampleSource(t), "")
	if a, _ := open.Access(req(func(*http.Request) {})); a != view.Granted {
		t.Error("no token: a request is refused")
	}
	_, h := serve(t, sampleSource(t), "t")
	if a, _ := h.Access(req(func(*http.Request) {})); a != view.Refused {
		t.Error("a request without the token is not refused")
	}
	if a, _ := h.Access(req(func(r *http.Request) { r.Header.Set("Authorization", "Bearer t") })); a != view.Granted {
		t.Error("Bearer token refused")
	}
}

// manyCassette writes n small interactions, those numbered by anthropic
// being Anthropic Messages and the rest OpenAI Chat.
func manyCassette(t testing.TB, n int, anthropic func(int) bool) *cassette.Cassette {
	t.Helper()
	c, err := cassette.Open(filepath.Join(t.TempDir(), "many.cassette"), cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var items []cassette.Keyed
	for k := 1; k <= n; k++ {
		kind, p := "openai-chat", "/v1/chat/completions"
		if anthropic(k) {
			kind, p = "anthropic-messages", "/v1/messages"
		}
		i := &cassette.Interaction{Upstream: "default", Kind: kind, Request: cassette.Request{Method: "POST", Path: p, Body: []byte(`{}`)},
			Response: cassette.Response{Status: 200, Body: []byte(`{}`)}}
		items = append(items, cassette.Keyed{Interaction: i, Key: fmt.Sprint(k), Shape: "s"})
	}
	if _, err := c.AppendAll(items); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPaging(t *testing.T) {
	c := manyCassette(t, 120, func(k int) bool { return k%10 == 0 })
	srv, _ := serve(t, view.CassetteSource{C: c}, "")
	ids := regexp.MustCompile(`<a href="/_llmproxy/ui/interactions/(\d+)">`)
	page := func(query string) (string, string) {
		_, body := get(t, srv.URL+"/_llmproxy/ui/?"+query)
		var got []string
		for _, m := range ids.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if len(got) > 4 {
			got = []string{got[0], "…", got[len(got)-1], fmt.Sprint(len(got))}
		}
		return strings.Join(got, " "), body
	}
	for _, tc := range []struct {
		query, rows string
		links       []string
	}{
		{"", "1 … 50 50", []string{`href="/_llmproxy/ui/?after=50" rel="next"`}},
		{"after=50", "51 … 100 50", []string{`?before=51" rel="prev"`, `?after=100" rel="next"`, "« first"}},
		{"after=100", "101 … 120 20", []string{`?before=101" rel="prev"`}},
		{"before=101", "51 … 100 50", []string{`?before=51" rel="prev"`, `?after=100" rel="next"`}},
		{"before=51", "1 … 50 50", []string{`?after=50" rel="next"`}},
		{"q=anthropic", "10 … 120 12", []string{"12 matches for “anthropic” among interactions 1–120 of 120."}},
		{"q=anthropic&after=30", "40 … 120 9", []string{`?before=31&amp;q=anthropic" rel="prev"`}},
		{"after=500", "", []string{"No interactions here."}},
	} {
		rows, body := page(tc.query)
		if rows != tc.rows {
			t.Errorf("?%s: rows %q, want %q", tc.query, rows, tc.rows)
		}
		if missing := containsAll(body, tc.links...); missing != "" {
			t.Errorf("?%s: the page lacks %q", tc.query, missing)
		}
	}
	if _, body := page(""); strings.Contains(body, `rel="prev"`) {
		t.Error("the first page links to a previous one")
	}
	if _, body := page("after=100"); strings.Contains(body, `rel="next"`) {
		t.Error("the last page links to a next one")
	}
}

func TestFilterScanIsBounded(t *testing.T) {
	c := manyCassette(t, 6000, func(k int) bool { return k == 6000 })
	srv, _ := serve(t, view.CassetteSource{C: c}, "")
	_, body := get(t, srv.URL+"/_llmproxy/ui/?q=anthropic")
	if missing := containsAll(body, "0 matches for “anthropic” among interactions 1–5000 of 6000; the search stopped there",
		`href="/_llmproxy/ui/?after=5000&amp;q=anthropic" rel="next">search on ›`); missing != "" {
		t.Fatalf("a filter that matches nothing in the first 5000: the page lacks %q:\n%.3000s", missing, body)
	}
	_, body = get(t, srv.URL+"/_llmproxy/ui/?after=5000&q=anthropic")
	if missing := containsAll(body, "1 match for “anthropic” among interactions 5001–6000 of 6000.", "/_llmproxy/ui/interactions/6000"); missing != "" {
		t.Errorf("searching on: the page lacks %q", missing)
	}
}

// events reads server-sent events from a response body.
type events struct{ r *bufio.Reader }

// next returns the next event's id and data lines joined.
func (e events) next() (string, string, error) {
	var id string
	var data []string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != nil:
			return id, strings.Join(data, "\n"), nil
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
}

func TestLogEvents(t *testing.T) {
	src := sampleSource(t)
	src.add(view.LogEntry{Time: time.Now(), Method: "POST", Path: "/first", Status: 200, Interaction: 1})
	srv, h := serve(t, src, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func(query string, edit func(*http.Request)) (*http.Response, events) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/_llmproxy/ui/log/events"+query, nil)
		if edit != nil {
			edit(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		return resp, events{bufio.NewReader(resp.Body)}
	}
	_, ev := open("?after=0", nil)
	id, data, err := ev.next()
	if err != nil || id != "1" || !strings.Contains(data, "/first") || !strings.HasPrefix(data, `<tbody class="entry served" data-seq="1">`) {
		t.Fatalf("first event: id %q, data %q, %v", id, data, err)
	}
	src.add(view.LogEntry{Time: time.Now(), Method: "POST", Path: "/second\r\n<script>", Status: 400, Miss: "no\rrecording\nhere"})
	id, data, err = ev.next()
	if err != nil || id != "2" || !strings.Contains(data, "/second") || !strings.Contains(data, "&lt;script&gt;") || !strings.Contains(data, "miss") {
		t.Fatalf("the event of an entry added later: id %q, data %q, %v", id, data, err)
	}
	if strings.Contains(data, "\r") {
		t.Errorf("an event data line holds a CR: %q", data)
	}

	// A browser that reconnects continues after the last id it saw; a
	// filtered stream skips other cassettes' entries.
	src.add(view.LogEntry{Time: time.Now(), Name: "b", Path: "/third", Status: 200, Interaction: 2})
	src.add(view.LogEntry{Time: time.Now(), Name: "a", Path: "/fourth", Status: 200, Interaction: 3})
	_, again := open("?after=0&cassette=a", func(r *http.Request) { r.Header.Set("Last-Event-ID", "2") })
	if id, data, err := again.next(); err != nil || id != "4" || !strings.Contains(data, "/fourth") {
		t.Errorf("reconnect after 2, cassette a: id %q, data %q, %v; want entry 4", id, data, err)
	}

	// Close ends the streams.
	h.Close()
	for {
		if _, _, err := ev.next(); err != nil {
			break
		}
	}
}

// Live log streams past Options.MaxLiveStreams are refused with 503 and a
// message saying why, while the open ones go on.
func TestLiveStreamsAreCapped(t *testing.T) {
	src := sampleSource(t)
	h, err := view.New(view.Options{Source: src, Mode: "test", MaxLiveStreams: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status := func() (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/_llmproxy/ui/log/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			// Held open until the test ends; its first line proves it streams.
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for k := range 2 {
		if got, _ := status(); got != http.StatusOK {
			t.Fatalf("stream %d: %d, want 200", k+1, got)
		}
	}
	if got, body := status(); got != http.StatusServiceUnavailable || !strings.Contains(body, "live log streams are open") {
		t.Errorf("a third stream past the cap of 2: %d %.200s, want 503 saying why", got, body)
	}
}

// Live streams share one read of the log per change: every stream gets the
// same entries in order, and the Source is read about once per new entry,
// not once per stream.
func TestLiveStreamsShareOneRead(t *testing.T) {
	const streams, entries = 6, 4
	src := sampleSource(t)
	srv, _ := serve(t, src, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs := make([]events, streams)
	for k := range evs {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/_llmproxy/ui/log/events?after=0", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		evs[k] = events{bufio.NewReader(resp.Body)}
		if line, err := evs[k].r.ReadString('\n'); err != nil || line != "retry: 2000\n" {
			t.Fatalf("stream %d: first line %q, %v", k, line, err)
		}
	}
	before := src.reads.Load()
	for n := 1; n <= entries; n++ {
		src.add(view.LogEntry{Time: time.Now(), Method: "POST", Path: fmt.Sprintf("/entry-%d", n), Status: 200, Interaction: uint64(n)})
		var first string
		for k, ev := range evs {
			id, data, err := ev.next()
			if err != nil || id != strconv.Itoa(n) || !strings.Contains(data, fmt.Sprintf("/entry-%d", n)) {
				t.Fatalf("stream %d, entry %d: id %q, data %q, %v", k, n, id, data, err)
			}
			if k == 0 {
				first = data
			} else if data != first {
				t.Errorf("stream %d, entry %d: %q, stream 0 got %q", k, n, data, first)
			}
		}
	}
	// One read per entry, and one more for the read that started the
	// streams' turn if it had not happened yet.
	if reads := src.reads.Load() - before; reads > entries+1 {
		t.Errorf("%d streams read the log %d times for %d entries, want at most %d (one read per change, for all streams)",
			streams, reads, entries, entries+1)
	}
}
