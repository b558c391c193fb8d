package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// pathRequest is a request on one provider's route, and the path every
// listing shows for it.
type pathRequest struct{ path, shown, body string }

func pathRequests(prompt string) []pathRequest {
	chat := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}]}`, prompt)
	return []pathRequest{
		{"/v1/chat/completions", "/v1/chat/completions", chat},
		{"/openai/v1/chat/completions", "/v1/chat/completions", strings.Replace(chat, "gpt-4o-mini", "gpt-4o", 1)},
		{"/anthropic/v1/messages", "/anthropic/v1/messages",
			fmt.Sprintf(`{"model":"claude-sonnet-4-6","max_tokens":64,"messages":[{"role":"user","content":%q}]}`, prompt)},
		{"/gemini/v1beta/models/gemini-2.5-flash:generateContent", "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
			fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"text":%q}]}]}`, prompt)},
		{"/ollama/api/chat", "/ollama/api/chat", fmt.Sprintf(`{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":%q}]}`, prompt)},
	}
}

// TestOnePathFormEverywhere records a request on each provider's route
// (the default openai route in both its spellings) and finds the same path
// for each in ls, export, the interactions page, the log lines, the live
// log and a miss message, both for the request and its closest recording.
func TestOnePathFormEverywhere(t *testing.T) {
	loop := fake.ToolLoop{Tool: "weather", Args: `{"location":"Paris"}`, CallID: "call_paris", Answer: "Sunny."}
	urls := map[string]*url.URL{}
	for name, script := range map[string]fake.Script{"openai": fake.OpenAIChat(loop), "anthropic": fake.AnthropicMessages(loop),
		"gemini": fake.Gemini(loop), "ollama": fake.Ollama(loop)} {
		u, err := url.Parse(fake.New(t, script).URL())
		if err != nil {
			t.Fatal(err)
		}
		urls[name] = u
	}
	path := filepath.Join(t.TempDir(), "paths.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Upstreams: urls, Default: urls["openai"]})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	post := func(base string, r pathRequest) (int, string) {
		t.Helper()
		resp, err := http.Post(base+r.path, "application/json", strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, r := range pathRequests("What's the weather in Paris?") {
		if code, body := post(srv.URL, r); code != http.StatusOK {
			t.Fatalf("recording POST %s: %d %s", r.path, code, body)
		}
	}
	srv.Close()
	p.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	code, ls, stderr := runCLI(t, "ls", "--cassette", path)
	if code != 0 {
		t.Fatalf("ls: exit %d: %s", code, stderr)
	}
	code, export, stderr := runCLI(t, "export", "--cassette", path)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	var exported struct {
		Interactions []struct {
			Upstream string
			Request  struct{ Path string }
		}
	}
	if err := json.Unmarshal([]byte(export), &exported); err != nil {
		t.Fatal(err)
	}
	s := serve(t, "replay", "--cassette", path, "--upstream", "ollama="+urls["ollama"].String(), "--log-level", "debug")
	if s.base == "" {
		t.Fatalf("replay did not start: exit %d: %s", <-s.done, s.stderr)
	}
	misses := map[string]string{}
	for _, r := range pathRequests("What's the weather in Paris?") {
		if code, body := post(s.base, r); code != http.StatusOK {
			t.Fatalf("replaying POST %s: %d %s", r.path, code, body)
		}
	}
	for _, r := range pathRequests("And in Rome?") {
		code, body := post(s.base, r)
		if code != http.StatusBadRequest {
			t.Fatalf("a miss on POST %s: %d %s", r.path, code, body)
		}
		misses[r.path] = body
	}
	_, table := getPage(t, s.base+"/_llmproxy/ui/")
	_, live := getPage(t, s.base+"/_llmproxy/ui/log")
	logLines := s.stderr.String()

	lsLines := strings.Split(ls, "\n")[1:]
	for n, r := range pathRequests("") {
		id := n + 1
		t.Run(r.path, func(t *testing.T) {
			if f := strings.Fields(lsLines[n]); len(f) < 5 || f[4] != r.shown {
				t.Errorf("ls shows %q, want %s", lsLines[n], r.shown)
			}
			// The export holds the route's name and the path beyond it,
			// as the cassette stores them: the form shown is the two joined.
			if got := exported.Interactions[n]; cassette.ProxyPath(got.Upstream, got.Request.Path) != r.shown {
				t.Errorf("export has upstream %q and path %q, shown as %s; want %s", got.Upstream, got.Request.Path,
					cassette.ProxyPath(got.Upstream, got.Request.Path), r.shown)
			}
			if want := fmt.Sprintf(`<a href="/_llmproxy/ui/interactions/%d">%d</a>`, id, id); !strings.Contains(table, want) ||
				!strings.Contains(strings.SplitN(strings.SplitN(table, want, 2)[1], "</tr>", 2)[0], `<td class="path">`+r.shown+`</td>`) {
				t.Errorf("the interactions page does not show interaction %d at %s", id, r.shown)
			}
			if n := strings.Count(logLines, "path="+r.shown+" "); n < 2 {
				t.Errorf("%d log lines show path=%s, want its replay and its miss:\n%s", n, r.shown, logLines)
			}
			if n := strings.Count(live, "<code>POST "+r.shown+"</code>"); n < 2 {
				t.Errorf("the live log shows POST %s %d times, want its replay and its miss", r.shown, n)
			}
			miss := html.UnescapeString(misses[r.path])
			if !strings.Contains(miss, "(POST "+r.shown+")") || !strings.Contains(miss, "(POST "+r.shown+"),") {
				t.Errorf("the miss names other paths than %s for the request and its closest:\n%s", r.shown, miss)
			}
		})
	}
	if t.Failed() {
		t.Logf("ls:\n%s", ls)
	}
}

// getPage fetches a page of the view.
func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
