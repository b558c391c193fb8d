package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// TestSessionBadBodies: a PUT the proxy cannot use is refused with the
// status and type the API documents, saying why, and leaves the open
// session as it was.
func TestSessionBadBodies(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, "")
	writeAnswers(t, filepath.Join(c.dir, "ok.cassette"), "ok", 1)
	outside := t.TempDir()
	writeAnswers(t, filepath.Join(outside, "x.cassette"), "x", 1)
	if err := os.Symlink(outside, filepath.Join(c.dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "x.cassette"), filepath.Join(c.dir, "file.cassette")); err != nil {
		t.Fatal(err)
	}
	open := c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"ok.cassette"}`)
	tests := []struct {
		name, body string
		status     int
		typ, says  string
	}{
		{"not JSON", `{"cassette":`, 400, "invalid_request_error", "not the JSON object"},
		{"empty", ` `, 400, "invalid_request_error", "empty"},
		{"an array", `["ok.cassette"]`, 400, "invalid_request_error", "not the JSON object"},
		{"data after", `{"cassette":"ok.cassette"} {}`, 400, "invalid_request_error", "after the JSON object"},
		{"unknown key", `{"cassette":"ok.cassette","casette":"x"}`, 400, "invalid_request_error", `unknown field "casette"`},
		{"bad mode", `{"cassette":"ok.cassette","mode":"fast"}`, 400, "invalid_request_error", `mode "fast"`},
		{"mock mode", `{"cassette":"ok.cassette","mode":"mock"}`, 400, "invalid_request_error", `mode "mock"`},
		{"bad on-exhausted", `{"cassette":"ok.cassette","on-exhausted":"never"}`, 400, "invalid_request_error", `on-exhausted "never"`},
		{"bad ignore", `{"cassette":"ok.cassette","ignore":["a..b"]}`, 400, "invalid_request_error", "ignore"},
		{"no cassette", `{"name":"t"}`, 400, "invalid_request_error", "cassette"},
		{"a scenario", `{"scenario":"s.yaml"}`, 400, "invalid_request_error", "llmproxy mock"},
		{"parent", `{"cassette":"../x.cassette"}`, 400, "bad_cassette_path", "leaves the directory"},
		{"parent inside", `{"cassette":"a/../../x.cassette"}`, 400, "bad_cassette_path", "leaves the directory"},
		{"absolute", fmt.Sprintf(`{"cassette":%q}`, filepath.Join(c.dir, "ok.cassette")), 400, "bad_cassette_path", "absolute"},
		{"NUL", `{"cassette":"a\u0000.cassette"}`, 400, "bad_cassette_path", "NUL"},
		{"symlinked directory", `{"cassette":"linked/x.cassette"}`, 400, "bad_cassette_path", "symlink"},
		{"symlinked file", `{"cassette":"file.cassette"}`, 400, "bad_cassette_path", "symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := c.call(http.MethodPut, "/_llmproxy/session", tt.body)
			msg, _ := field(out, "error", "message").(string)
			if status != tt.status || field(out, "error", "type") != tt.typ || !strings.Contains(msg, tt.says) {
				t.Errorf("status %d, %v; want %d %s saying %q", status, out, tt.status, tt.typ, tt.says)
			}
			now := c.mustCall(http.StatusOK, http.MethodGet, "/_llmproxy/session", "")
			if field(now, "session", "id") != field(open, "session", "id") {
				t.Errorf("the open session changed: %v", now)
			}
		})
	}
	if _, text := c.ask(0); text != "ok/0" {
		t.Errorf("the session no longer serves: %q", text)
	}
}

// TestControlRequestsRefused: a mutating control request from another
// origin's page, with another Host, without a JSON content type, or with a
// method the route does not take, changes nothing.
func TestControlRequestsRefused(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, "")
	writeAnswers(t, filepath.Join(c.dir, "ok.cassette"), "ok", 1)
	u, _ := url.Parse(c.url)
	body := `{"cassette":"ok.cassette"}`
	tests := []struct {
		name, method, path string
		header             []string
		contentType        string
		status             int
	}{
		{"foreign origin", "PUT", "/_llmproxy/session", []string{"Origin", "http://evil.example"}, "application/json", 403},
		{"other loopback origin", "PUT", "/_llmproxy/session", []string{"Origin", "http://localhost:5173"}, "application/json", 403},
		{"null origin", "PUT", "/_llmproxy/session", []string{"Origin", "null"}, "application/json", 403},
		{"cross-site fetch", "PUT", "/_llmproxy/session", []string{"Sec-Fetch-Site", "cross-site"}, "application/json", 403},
		{"foreign origin delete", "DELETE", "/_llmproxy/session", []string{"Origin", "http://localhost:5173"}, "", 403},
		{"non-loopback Host", "PUT", "/_llmproxy/session", []string{"Host", "evil.example:" + u.Port()}, "application/json", 403},
		{"rebound Host delete", "DELETE", "/_llmproxy/session", []string{"Host", "attacker.example"}, "", 403},
		{"text/plain", "PUT", "/_llmproxy/session", nil, "text/plain", 415},
		{"form", "PUT", "/_llmproxy/session", nil, "application/x-www-form-urlencoded", 415},
		{"no content type", "PUT", "/_llmproxy/session", nil, "", 415},
		{"POST", "POST", "/_llmproxy/session", nil, "application/json", 404},
		{"PATCH", "PATCH", "/_llmproxy/session", nil, "application/json", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rd io.Reader
			if tt.method != "DELETE" {
				rd = strings.NewReader(body)
			}
			r, _ := http.NewRequest(tt.method, c.url+tt.path, rd)
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			for k := 0; k+1 < len(tt.header); k += 2 {
				if tt.header[k] == "Host" {
					r.Host = tt.header[k+1]
				} else {
					r.Header.Set(tt.header[k], tt.header[k+1])
				}
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if now := c.mustCall(http.StatusOK, http.MethodGet, "/_llmproxy/session", ""); now["session"] != nil {
				t.Errorf("a session opened: %v", now)
			}
		})
	}
	// The proxy's own origin may.
	status, _ := c.call(http.MethodPut, "/_llmproxy/session", body, "Origin", c.url, "Sec-Fetch-Site", "same-origin")
	if status != http.StatusOK {
		t.Errorf("same origin: %d", status)
	}
	status, _ = c.call(http.MethodDelete, "/_llmproxy/session", "", "Origin", c.url)
	if status != http.StatusOK {
		t.Errorf("same origin DELETE: %d", status)
	}
}

// TestSessionAdminToken: with --admin-token, the control routes need it.
func TestSessionAdminToken(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, "", func(cfg *proxy.Config) { cfg.AdminToken = "s3cret" })
	writeAnswers(t, filepath.Join(c.dir, "ok.cassette"), "ok", 1)
	if status, _ := c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"ok.cassette"}`); status != http.StatusUnauthorized {
		t.Errorf("without the token: %d", status)
	}
	if status, _ := c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"ok.cassette"}`, "Authorization", "Bearer s3cret"); status != http.StatusOK {
		t.Errorf("with the token: %d", status)
	}
}

// TestSessionLocked: a cassette another writer holds is a 409, and the
// open session stays.
func TestSessionLocked(t *testing.T) {
	c := startCtl(t, proxy.ModeRecord, echoUpstream(t))
	held, err := cassette.Open(filepath.Join(c.dir, "held.cassette"), cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"free.cassette"}`)
	status, out := c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"held.cassette"}`)
	if status != http.StatusConflict || field(out, "error", "type") != "cassette_locked" || !strings.Contains(field(out, "error", "message").(string), "held.cassette") {
		t.Fatalf("locked: %d %v", status, out)
	}
	if now := c.mustCall(http.StatusOK, http.MethodGet, "/_llmproxy/session", ""); !strings.HasSuffix(field(now, "session", "cassette").(string), "free.cassette") {
		t.Errorf("the open session changed: %v", now)
	}
}

// TestSessionModes: a session may ask a mode other than the command's, and
// its own exhaustion policy and ignored paths; a replay session of a
// cassette that does not exist misses, saying so.
func TestSessionModes(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, echoUpstream(t))
	out := c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"new/one.cassette"}`)
	if field(out, "session", "exists") != false {
		t.Errorf("a missing cassette: %v", out)
	}
	if status, text := c.ask(0); status != http.StatusBadRequest || !strings.Contains(text, "does not exist") {
		t.Errorf("a missing cassette answered %d %s", status, text)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "new")); err == nil {
		t.Errorf("replay created a directory")
	}
	out = c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"new/one.cassette","mode":"record"}`)
	if field(out, "ended", "missed_total") != 1.0 || field(out, "session", "mode") != "record" {
		t.Errorf("switch to record: %v", out)
	}
	if _, text := c.ask(0); !strings.HasPrefix(text, "upstream saw") {
		t.Errorf("record answered %q", text)
	}
	out = c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"new/one.cassette"}`)
	if field(out, "ended", "recorded") != 1.0 || field(out, "session", "interactions") != 1.0 {
		t.Errorf("back to replay: %v", out)
	}
	if _, text := c.ask(0); !strings.HasPrefix(text, "upstream saw") {
		t.Errorf("replay of the recording answered %q", text)
	}
	if status, _ := c.ask(0); status != http.StatusBadRequest {
		t.Errorf("an exhausted recording answered %d", status)
	}
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"new/one.cassette","on-exhausted":"repeat-last","ignore":["messages"]}`)
	for n := range 3 {
		if _, text := c.ask(n + 5); !strings.Contains(text, "question 0") {
			t.Errorf("with messages ignored and repeat-last, question %d answered %q", n+5, text)
		}
	}
}

const quizYAML = `version: 1
name: quiz
steps:
  - id: ask
    respond:
      text: "let me look"
      tool-calls: [{function: get_weather, arguments: {city: Paris, unit: celsius}}]
    then: answer
  - id: answer
    respond: {text: "sunny"}
  - id: never
    when: {latest-user: {equals: "nobody says this"}}
    respond: {text: "x"}
`

// TestMockSessions: mock with no scenario misses saying how to load one; a
// scenario session serves requests without a header; POST loads, a bad
// scenario is refused with its FILE:LINE problems and replaces nothing,
// DELETE starts conversations over.
func TestMockSessions(t *testing.T) {
	c := startCtl(t, proxy.ModeMock, "", func(cfg *proxy.Config) { cfg.Pace = proxy.PaceInstant })
	if status, text := c.ask(0); status != http.StatusBadRequest || !strings.Contains(text, "no scenario") {
		t.Fatalf("no scenario: %d %s", status, text)
	}
	body := fmt.Sprintf(`{"scenario":%q,"name":"t1"}`, quizYAML)
	out := c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", body)
	if field(out, "session", "scenario") != "inline" || field(out, "session", "interactions") != 3.0 || field(out, "session", "mode") != "mock" {
		t.Fatalf("PUT scenario: %v", out)
	}
	if _, text := c.ask(0); text != "let me look" {
		t.Fatalf("the session's scenario answered %q", text)
	}
	bad := "version: 1\nname: bad\nsteps:\n  - id: a\n    respond: {text: 1, nonsense: 2}\n"
	status, out := c.call(http.MethodPut, "/_llmproxy/session", fmt.Sprintf(`{"scenario":%q}`, bad))
	if msg, _ := field(out, "error", "message").(string); status != 400 || field(out, "error", "type") != "scenario_invalid" || !strings.Contains(msg, "inline:5") {
		t.Errorf("a bad scenario: %d %v", status, out)
	}
	if status, out := c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"a.cassette"}`); status != 400 {
		t.Errorf("a cassette in mock: %d %v", status, out)
	}
	out = c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"scenario":{"version":1,"name":"j","steps":[{"respond":{"text":"from JSON"}}]}}`)
	if field(out, "ended", "served") != 1.0 || len(field(out, "ended", "unused").([]any)) != 2 || field(out, "ended", "unused_total") != 2.0 {
		t.Errorf("the first session's summary: %v", out)
	}
	if _, text := c.ask(0); text != "from JSON" {
		t.Fatalf("a JSON scenario answered %q", text)
	}
	out = c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/session", "")
	if field(out, "ended", "served") != 1.0 || field(out, "ended", "scenario") != "inline" {
		t.Errorf("DELETE: %v", out)
	}

	dir := t.TempDir()
	t.Chdir(dir) // mock's sessions resolve files under the working directory
	if err := os.WriteFile(filepath.Join(dir, "quiz.yaml"), []byte(quizYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	c = startCtl(t, proxy.ModeMock, "", func(cfg *proxy.Config) { cfg.Pace = proxy.PaceInstant })
	out = c.mustCall(http.StatusOK, http.MethodPost, "/_llmproxy/scenarios", `{"scenario":"quiz.yaml"}`)
	if out["loaded"] != "quiz" || out["steps"] != 3.0 {
		t.Errorf("POST: %v", out)
	}
	status, out = c.call(http.MethodPost, "/_llmproxy/scenarios", `{"scenario":"bad.yaml","name":"quiz"}`)
	if msg, _ := field(out, "error", "message").(string); status != 400 || !strings.Contains(msg, "bad.yaml:5") {
		t.Errorf("POST a bad file: %d %v", status, out)
	}
	if status, out := c.call(http.MethodPost, "/_llmproxy/scenarios", `{"scenario":"../quiz.yaml"}`); status != 400 || field(out, "error", "type") != "bad_cassette_path" {
		t.Errorf("POST a file outside: %d %v", status, out)
	}
	for _, method := range []string{http.MethodPost, http.MethodPut} {
		path := map[string]string{http.MethodPost: "/_llmproxy/scenarios", http.MethodPut: "/_llmproxy/session"}[method]
		if status, out := c.call(method, path, `{"scenario":"missing.yaml"}`); status != 400 || field(out, "error", "type") != "invalid_request_error" {
			t.Errorf("%s a missing file: %d %v", method, status, out)
		}
		if status, out := c.call(method, path, `{"scenario":"bad.yaml"}`); status != 400 || !strings.Contains(field(out, "error", "message").(string), "bad.yaml:5") {
			t.Errorf("%s a bad file: %d %v", method, status, out)
		}
		if status, out := c.call(method, path, `{"scenario":42}`); status != 400 || field(out, "error", "type") != "invalid_request_error" {
			t.Errorf("%s a number: %d %v", method, status, out)
		}
	}
	conv := []string{proxy.ConversationHeader, "c1"}
	if _, text := c.ask(0, conv...); text != "let me look" {
		t.Fatalf("the loaded scenario answered %q", text)
	}
	if _, text := c.ask(0, conv...); text != "sunny" {
		t.Fatalf("its second step answered %q", text)
	}
	if out := c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/scenarios", ""); out["reset"] != 1.0 {
		t.Errorf("DELETE scenarios: %v", out)
	}
	if _, text := c.ask(0, conv...); text != "let me look" {
		t.Fatalf("after the reset, the scenario answered %q", text)
	}
}

// TestVerify: verify counts the tool calls of what was served, matching
// arguments as JSON values, in the session or in all the log.
func TestVerify(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, "")
	all := []*cassette.Interaction{
		chatInteraction(chatAsk(0), chatAnswer("", "get_weather", `{"city":"Paris","unit":"celsius","days":2}`)),
		chatInteraction(chatAsk(1), chatAnswer("", "get_weather", `{"city":"Rome","days":2.0}`)),
		chatInteraction(chatAsk(2), chatAnswer("", "book", `{}`)),
	}
	writeInteractions(t, filepath.Join(c.dir, "v.cassette"), all)
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"v.cassette"}`)
	for n := range 2 {
		if status, _ := c.ask(n); status != http.StatusOK {
			t.Fatalf("ask %d: %d", n, status)
		}
	}
	q := func(s string) string { return "/_llmproxy/verify?" + s }
	tests := []struct {
		query string
		ok    bool
		got   float64
	}{
		{"tool=get_weather", true, 2},
		{"tool=get_weather&count=2", true, 2},
		{"tool=get_weather&count=1", false, 2},
		{"tool=get_weather&count=0", false, 2},
		{"tool=book", false, 0},
		{"tool=book&count=0", true, 0},
		{"tool=get_weather&args=" + url.QueryEscape(`{"city":"Paris"}`), true, 1},
		{"tool=get_weather&args=" + url.QueryEscape(`{"city":"Paris","unit":"celsius"}`) + "&count=1", true, 1},
		{"tool=get_weather&args=" + url.QueryEscape(`{"days":2}`), true, 2}, // 2 and 2.0 are one JSON value
		{"tool=get_weather&args=" + url.QueryEscape(`{"city":"Oslo"}`), false, 0},
		{"tool=get_weather&args=" + url.QueryEscape(`{"country":"FR"}`), false, 0},
		{"tool=get_weather&scope=all", true, 2},
	}
	for _, tt := range tests {
		out := c.mustCall(http.StatusOK, http.MethodGet, q(tt.query), "")
		if out["ok"] != tt.ok || out["got"] != tt.got {
			t.Errorf("%s: %v; want ok %t, got %v", tt.query, out, tt.ok, tt.got)
		}
		if msg, _ := out["message"].(string); !tt.ok && !strings.Contains(msg, "get") && !strings.Contains(msg, "book") {
			t.Errorf("%s: no message: %v", tt.query, out)
		}
	}
	// A new session starts a new scope; all still sees the old calls.
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"v.cassette"}`)
	if out := c.mustCall(http.StatusOK, http.MethodGet, q("tool=get_weather"), ""); out["ok"] != false || out["got"] != 0.0 {
		t.Errorf("a new session: %v", out)
	}
	if out := c.mustCall(http.StatusOK, http.MethodGet, q("tool=get_weather&scope=all&args="+url.QueryEscape(`{"city":"Rome"}`)), ""); out["got"] != 1.0 {
		t.Errorf("all, after the session ended: %v", out)
	}
	for _, bad := range []string{"", "tool=", "tool=x&args=" + url.QueryEscape("{"), "tool=x&args=" + url.QueryEscape("[1]"),
		"tool=x&count=two", "tool=x&count=-1", "tool=x&scope=mine", "tool=x&tools=y"} {
		if status, out := c.call(http.MethodGet, q(bad), ""); status != http.StatusBadRequest || field(out, "error", "type") != "invalid_request_error" {
			t.Errorf("%q: %d %v", bad, status, out)
		}
	}
}

// TestMockVerify: verify sees the tool calls of scenario answers.
func TestMockVerify(t *testing.T) {
	c := startCtl(t, proxy.ModeMock, "", func(cfg *proxy.Config) { cfg.Pace = proxy.PaceInstant })
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", fmt.Sprintf(`{"scenario":%q}`, quizYAML))
	c.ask(0)
	out := c.mustCall(http.StatusOK, http.MethodGet, "/_llmproxy/verify?tool=get_weather&count=1&args="+url.QueryEscape(`{"city":"Paris"}`), "")
	if out["ok"] != true {
		t.Errorf("verify: %v", out)
	}
}
