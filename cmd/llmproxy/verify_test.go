package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// numbered is an OpenAI chat upstream whose n-th answer says "answer n".
func numbered() fake.Script {
	return fake.ScriptFunc(func(req *fake.Request) *fake.Response {
		body := fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"answer %[1]d"},"finish_reason":"stop"}]}`, req.N+1)
		return &fake.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	})
}

func chatBody(prompt string) string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}]}`, prompt)
}

// recordPrompts records one chat request per prompt into the cassette at
// path (appending), through a proxy.Server in front of up.
func recordPrompts(t *testing.T, path string, up *fake.Upstream, prompts ...string) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u, _ := url.Parse(up.URL())
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Default: u, Upstreams: map[string]*url.URL{"openai": u}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, prompt := range prompts {
		r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody(prompt)))
		r.Header.Set("Content-Type", "application/json")
		w := &recorder{header: http.Header{}}
		p.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			t.Fatalf("recording %q: status %d: %s", prompt, w.status, w.body.String())
		}
	}
}

// recorder is a minimal http.ResponseWriter for ServeHTTP in tests.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
func (r *recorder) Flush() {}

// serving is llmproxy running in-process until stop is called.
type serving struct {
	base   string
	cancel context.CancelFunc
	done   chan int
	stderr *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve runs `llmproxy args...` with --listen 127.0.0.1:0 and waits for its
// first line, or for it to exit (then base is "").
func serve(t *testing.T, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &serving{cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	go func() {
		code := run(ctx, append(args, "--listen", "127.0.0.1:0"), pw, s.stderr)
		pw.Close()
		s.done <- code
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	go io.Copy(io.Discard, br)
	if err == nil {
		s.base = strings.TrimSpace(strings.TrimPrefix(line, "llmproxy listening on "))
	}
	t.Cleanup(cancel)
	return s
}

// stop cancels the run (as a signal would) and returns its exit code.
func (s *serving) stop() int {
	s.cancel()
	return <-s.done
}

func (s *serving) ask(t *testing.T, prompt string) string {
	t.Helper()
	resp, err := http.Post(s.base+"/v1/chat/completions", "application/json", strings.NewReader(chatBody(prompt)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

func TestFailOnUnused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.cassette")
	recordPrompts(t, path, fake.New(t, numbered()), "first", "second")
	tests := []struct {
		name    string
		flags   []string
		prompts []string
		code    int
		stderr  []string
	}{
		{"one of two served", []string{"--fail-on-unused"}, []string{"first"}, 3,
			[]string{"llmproxy: --fail-on-unused: 1 interaction(s) never served:", path + ": interaction 2 POST /v1/chat/completions"}},
		{"none served", []string{"--fail-on-unused"}, nil, 3,
			[]string{"2 interaction(s) never served", "interaction 1 POST", "interaction 2 POST"}},
		{"all served", []string{"--fail-on-unused"}, []string{"second", "first"}, 0, nil},
		{"a miss does not serve", []string{"--fail-on-unused"}, []string{"first", "third"}, 3, []string{"interaction 2 POST"}},
		{"without the flag", nil, []string{"first"}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, append([]string{"replay", "--cassette", path}, tt.flags...)...)
			if s.base == "" {
				t.Fatalf("replay did not start: exit %d: %s", <-s.done, s.stderr)
			}
			for _, p := range tt.prompts {
				s.ask(t, p)
			}
			if code := s.stop(); code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, s.stderr)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(s.stderr.String(), want) {
					t.Errorf("stderr does not say %q:\n%s", want, s.stderr)
				}
			}
			if tt.code == 0 && strings.Contains(s.stderr.String(), "never served") {
				t.Errorf("stderr lists unused interactions:\n%s", s.stderr)
			}
		})
	}
}

func TestRulesFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "one.cassette")
	up := fake.New(t, numbered())
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"ignore":["metadata"],"ignore_by_kind":{"openai-chat":["user"]},"ignore_query":["api-version"],"headers":["OpenAI-Beta"]}`)
	tests := []struct {
		name   string
		rules  string
		env    bool // give it as LLMPROXY_RULES
		code   int
		stderr string
	}{
		{"missing file", filepath.Join(dir, "none.json"), false, 2, "llmproxy: --rules " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{"unknown field", write("typo.json", `{"ignore":["a"],"ignroe_query":["b"]}`), false, 2,
			`llmproxy: --rules ` + filepath.Join(dir, "typo.json") + `: unknown field "ignroe_query" (known fields: ignore, ignore_by_kind, ignore_query, headers)`},
		{"unknown field from the environment", filepath.Join(dir, "typo.json"), true, 2, `unknown field "ignroe_query"`},
		{"bad JSON", write("bad.json", `{"ignore":[}`), false, 2, "bad.json: not valid JSON at line 1, column 12"},
		{"secret header", write("secret.json", `{"headers":["Authorization"]}`), false, 2, "match header Authorization: it carries a secret"},
		{"good", good, false, 0, ""},
		{"good from the environment", good, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"record", "--cassette", path, "--upstream", up.URL()}
			if tt.env {
				t.Setenv("LLMPROXY_RULES", tt.rules)
			} else {
				args = append(args, "--rules", tt.rules)
			}
			s := serve(t, args...)
			if tt.code != 0 {
				code := <-s.done
				if code != tt.code || !strings.Contains(s.stderr.String(), tt.stderr) || strings.Count(s.stderr.String(), "\n") != 1 {
					t.Errorf("exit %d, stderr %q; want %d and one line saying %q", code, s.stderr, tt.code, tt.stderr)
				}
				return
			}
			if s.base == "" {
				t.Fatalf("did not start: exit %d: %s", <-s.done, s.stderr)
			}
			// Recorded with one metadata, user and api-version, the request
			// replays with others; with another OpenAI-Beta header it is a
			// miss.
			post := func(base, query, beta, meta string) int {
				t.Helper()
				body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}],"metadata":{"run":%q},"user":%[2]q}`, tt.name, meta)
				r, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions"+query, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("OpenAI-Beta", beta)
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			if got := post(s.base, "?api-version=1", "assistants=v2", "1"); got != http.StatusOK {
				t.Fatalf("recording: status %d", got)
			}
			if code := s.stop(); code != 0 {
				t.Fatalf("record: exit %d: %s", code, s.stderr)
			}
			args[0] = "replay"
			s = serve(t, args...)
			if s.base == "" {
				t.Fatalf("replay did not start: exit %d: %s", <-s.done, s.stderr)
			}
			if got := post(s.base, "?api-version=2", "assistants=v2", "2"); got != http.StatusOK {
				t.Errorf("another metadata, user and api-version: status %d, want 200", got)
			}
			if got := post(s.base, "?api-version=1", "assistants=v1", "1"); got != http.StatusBadRequest {
				t.Errorf("another OpenAI-Beta header: status %d, want a miss", got)
			}
			if code := s.stop(); code != 0 {
				t.Fatalf("replay: exit %d: %s", code, s.stderr)
			}
		})
	}
}

// TestTextconvHelper is not a test: TestTextconv runs the test binary as
// git's textconv program through it.
func TestTextconvHelper(t *testing.T) {
	if os.Getenv("LLMPROXY_TEXTCONV_HELPER") != "1" {
		t.Skip("run by TestTextconv")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(context.Background(), append([]string{"export"}, args...), os.Stdout, os.Stderr))
}

func TestTextconv(t *testing.T) {
	dir := t.TempDir()
	up := fake.New(t, numbered())
	path := filepath.Join(dir, "agent.cassette")
	recordPrompts(t, path, up, "first")

	// git runs the textconv command on a temporary, read-only copy.
	ro := filepath.Join(dir, "copy")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ro, data, 0o444); err != nil {
		t.Fatal(err)
	}
	code, lone, stderr := runCLI(t, "export", ro)
	if code != 0 || stderr != "" {
		t.Fatalf("export FILE: exit %d: %s", code, stderr)
	}
	code, flagged, _ := runCLI(t, "export", "--cassette", path)
	if code != 0 || lone != flagged {
		t.Errorf("export FILE and export --cassette FILE differ (exit %d):\n%s\n---\n%s", code, lone, flagged)
	}
	if after, _ := os.ReadFile(ro); !bytes.Equal(after, data) {
		t.Error("export changed the file")
	}
	if code, _, stderr := runCLI(t, "export", filepath.Join(dir, "none")); code != 1 || !strings.Contains(stderr, filepath.Join(dir, "none")) {
		t.Errorf("export of a missing file: exit %d, %q; want 1 naming it", code, stderr)
	}

	// And through git itself, as docs/testing.md sets it up.
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	repo := filepath.Join(dir, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "LLMPROXY_TEXTCONV_HELPER=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git("init", "-q")
	// The line of docs/testing.md, with this test binary standing in for
	// the llmproxy binary.
	git("config", "diff.llmproxy.textconv", fmt.Sprintf("'%s' -test.run=^TestTextconvHelper$ --", self))
	attrs, err := os.ReadFile("../../.gitattributes")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".gitattributes"), attrs, 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(repo, "testdata", "agent.cassette")
	os.MkdirAll(filepath.Dir(in), 0o755)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "one interaction")
	recordPrompts(t, in, up, "second")
	diff := git("diff")
	for _, want := range []string{"diff --git a/testdata/agent.cassette", `+      "id": 2,`, `answer 2`} {
		if !strings.Contains(diff, want) {
			t.Errorf("git diff does not show %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "Binary files") {
		t.Errorf("git diff treats the cassette as binary:\n%s", diff)
	}
}
