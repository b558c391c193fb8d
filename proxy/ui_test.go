package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/uitest"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/view"
)

// hostileRequest is the request body of the sample cassette's hostile
// interaction, with its user turn replaced by user.
func hostileRequest(t testing.TB, user string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"model": "gpt-4o-mini",
		"messages": []map[string]string{
			{"role": "system", "content": "You render HTML."},
			{"role": "user", "content": user},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// page fetches a page of the proxy with optional request edits.
func page(t testing.TB, rawURL string, edit ...func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edit {
		e(req)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// missMessage posts a request that misses and returns its error message.
func missMessage(t testing.TB, target string, body []byte, edit ...func(*http.Request)) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for _, e := range edit {
		e(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error struct{ Message string } }
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, %v; want a miss", resp.StatusCode, err)
	}
	return e.Error.Message
}

func TestViewOnReplay(t *testing.T) {
	path := cassettePath(t)
	uitest.Cassette(t, path)
	h := startProxy(t, proxy.ModeReplay, path, "")

	resp, err := http.Post(h.URL()+"/v1/chat/completions", "application/json", bytes.NewReader(hostileRequest(t, uitest.HostileUser)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the hostile interaction was not served: %d", resp.StatusCode)
	}
	msg := missMessage(t, h.URL()+"/v1/chat/completions", hostileRequest(t, "What is <i>italic</i>?"))
	want := fmt.Sprintf("; see %s/_llmproxy/ui/interactions/%d", h.URL(), uitest.HostileID)
	if !strings.HasSuffix(msg, want) {
		t.Fatalf("the miss message %q does not end with the closest interaction's page %q", msg, want)
	}
	link := msg[strings.LastIndex(msg, "http://"):]
	if status, body := page(t, link); status != 200 || !strings.Contains(body, fmt.Sprintf("<h1>Interaction %d", uitest.HostileID)) {
		t.Errorf("the miss message's link %s: status %d", link, status)
	}

	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/_llmproxy/ui/", []string{"Interactions 1–8 of 8.", `<td><a href="/_llmproxy/ui/interactions/7">7</a> <span class="badge ok"`}},
		{"/_llmproxy/ui/log", []string{
			`<a href="/_llmproxy/ui/interactions/7">interaction 7</a>`, `class="badge bad">miss`,
			`Closest: <a href="/_llmproxy/ui/interactions/7">interaction 7</a>`, "messages.1.content", "messages[1] (user)",
			`What is \u003ci\u003eitalic`, "→ <code>lookup</code>", `<span class="mode" title="what this process does">replay</span>`}},
		{"/_llmproxy/ui/interactions/1", []string{"fixture · weather", "Stream timeline"}},
	} {
		status, body := page(t, h.URL()+tc.path)
		if status != 200 {
			t.Errorf("%s: status %d", tc.path, status)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q:\n%.5000s", tc.path, w, body)
			}
		}
	}

	// The log API carries the closest interaction and the differences.
	_, body := page(t, h.URL()+"/_llmproxy/log")
	var log struct {
		Entries []proxy.LogEntry
	}
	if err := json.Unmarshal([]byte(body), &log); err != nil || len(log.Entries) != 2 {
		t.Fatalf("log: %v, %s", err, body)
	}
	if m := log.Entries[1]; m.Closest != uitest.HostileID || len(m.Differences) == 0 || m.Differences[0].Path != "messages.1.content" {
		t.Errorf("the miss entry: closest %d, differences %+v", m.Closest, m.Differences)
	}
	if !strings.Contains(body, `"differences": [`) || !strings.Contains(body, `"path": "messages.1.content"`) {
		t.Errorf("the log API does not name the differences in JSON: %s", body)
	}

	// /_llmproxy/ui is the view's, /_llmproxy/uix the API's.
	if status, body := page(t, h.URL()+"/_llmproxy/uix"); status != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("/_llmproxy/uix: %d %s, want the API's 404", status, body)
	}
}

func TestViewLiveLog(t *testing.T) {
	path := cassettePath(t)
	uitest.Cassette(t, path)
	h := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.LogLimit = 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/_llmproxy/ui/log/events?after=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() (id, data string) {
		for lines.Scan() {
			l := lines.Text()
			switch {
			case strings.HasPrefix(l, "id: "):
				id = l[4:]
			case strings.HasPrefix(l, "data: "):
				data += l[6:] + "\n"
			case l == "" && data != "":
				return id, data
			}
		}
		t.Fatalf("the stream ended: %v", lines.Err())
		return
	}
	for k := 1; k <= 5; k++ {
		missMessage(t, h.URL()+"/v1/chat/completions", hostileRequest(t, fmt.Sprint("question ", k)))
		id, data := next()
		if id != fmt.Sprint(k) || !strings.Contains(data, "interaction 7") {
			t.Fatalf("request %d: event %s %q", k, id, data)
		}
	}
	// The journal keeps three; the page shows them, newest first.
	_, body := page(t, h.URL()+"/_llmproxy/ui/log")
	i3, i5 := strings.Index(body, "question 3"), strings.Index(body, "question 5")
	if i3 < 0 || i5 < 0 || i5 > i3 || strings.Contains(body, "question 2") {
		t.Errorf("the log page with three entries kept: question 5 at %d, 3 at %d, 2 shown %v", i5, i3, strings.Contains(body, "question 2"))
	}
	if !strings.Contains(body, `data-events="/_llmproxy/ui/log/events?after=5"`) {
		t.Errorf("the log page does not continue after entry 5")
	}
	h.p.EndLiveViews()
	for lines.Scan() {
	}
}

func TestViewCassetteDir(t *testing.T) {
	dir := t.TempDir()
	uitest.Cassette(t, filepath.Join(dir, "sample.cassette"))
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "sample.cassette"), filepath.Join(dir, "link.cassette")); err != nil {
		t.Fatal(err)
	}
	base, _ := startDirProxy(t, proxy.ModeReplay, dir, "")
	withName := func(r *http.Request) { r.Header.Set(proxy.CassetteHeader, "sample") }
	msg := missMessage(t, base+"/v1/chat/completions", hostileRequest(t, "other"), withName)
	if want := fmt.Sprintf("; see %s/_llmproxy/ui/interactions/%d?cassette=sample", base, uitest.HostileID); !strings.HasSuffix(msg, want) {
		t.Errorf("miss message %q does not end with %q", msg, want)
	}
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/_llmproxy/ui/", 200, `<li><a href="/_llmproxy/ui/?cassette=sample">sample</a></li></ul>`},
		{"/_llmproxy/ui/?cassette=sample", 200, `href="/_llmproxy/ui/interactions/3?cassette=sample"`},
		{"/_llmproxy/ui/interactions/3?cassette=sample", 200, "lookup_population"},
		{"/_llmproxy/ui/interactions/3", 400, "name the cassette"},
		{"/_llmproxy/ui/?cassette=nope", 404, "does not exist"},
		{"/_llmproxy/ui/?cassette=" + url.QueryEscape("../x"), 400, "contains &#34;..&#34;"},
		{"/_llmproxy/ui/log?cassette=sample", 200, `href="/_llmproxy/ui/interactions/7?cassette=sample"`},
	} {
		status, body := page(t, base+tc.path)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: status %d, want %d and %q:\n%.3000s", tc.path, status, tc.status, tc.want, body)
		}
	}
	if _, body := page(t, base+"/_llmproxy/ui/"); strings.Contains(body, "cassette=link") || strings.Contains(body, "notes") {
		t.Errorf("the cassette list names a symbolic link or a file that is no cassette:\n%.2000s", body)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.cassette")); err == nil {
		t.Error("the view created a cassette")
	}
}

func TestViewAdminToken(t *testing.T) {
	const token = "view-token"
	path := cassettePath(t)
	uitest.Cassette(t, path)
	h := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.AdminToken = token })
	if status, body := page(t, h.URL()+"/_llmproxy/ui/"); status != 401 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("the view without the token: %d, want 401 and the login form", status)
	}
	if status, _ := page(t, h.URL()+"/_llmproxy/log"); status != 401 {
		t.Errorf("the API without the token: %d, want 401", status)
	}
	form := url.Values{"token": {token}, "next": {"/_llmproxy/ui/log"}}
	req, _ := http.NewRequest(http.MethodPost, h.URL()+"/_llmproxy/ui/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, cookies)
	}
	withCookie := func(r *http.Request) { r.AddCookie(cookies[0]) }
	for _, p := range []string{"/_llmproxy/ui/", "/_llmproxy/log", "/_llmproxy/interactions", "/_llmproxy/fixtures/" + uitest.WeatherCall} {
		if status, _ := page(t, h.URL()+p, withCookie); status != 200 {
			t.Errorf("%s with the cookie: %d, want 200", p, status)
		}
	}
	if status, _ := page(t, h.URL()+"/_llmproxy/log", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }); status != 200 {
		t.Errorf("the API with the Bearer token: %d, want 200", status)
	}
	if status, _ := page(t, h.URL()+"/_llmproxy/log", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: view.CookieName, Value: token}) }); status != 401 {
		t.Errorf("the API with the token itself as the cookie: %d, want 401", status)
	}
}

func TestViewHostCheck(t *testing.T) {
	path := cassettePath(t)
	uitest.Cassette(t, path)
	h := startProxy(t, proxy.ModeReplay, path, "")
	if status, _ := page(t, h.URL()+"/_llmproxy/ui/", func(r *http.Request) { r.Host = "rebound.example:80" }); status != 403 {
		t.Errorf("the view to a foreign Host: %d, want 403", status)
	}
	if status, _ := page(t, h.URL()+"/_llmproxy/ui/", func(r *http.Request) { r.Host = "localhost" }); status != 200 {
		t.Errorf("the view to localhost: %d, want 200", status)
	}
}
