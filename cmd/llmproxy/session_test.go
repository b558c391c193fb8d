package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// control sends a control request to a running proxy and decodes its
// answer, failing the test unless the status is want.
func control(t *testing.T, base string, want int, method, path, body string) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return out
}

// sdkSays reports whether err is openai-go's error for a 400 whose message
// holds text.
func sdkSays(err error, text string) bool {
	var apiErr *openai.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest && strings.Contains(apiErr.Message, text)
}

// TestSessionsThroughTheBinary starts `llmproxy record --cassette-dir` with
// no session, as a test plugin does, records one test's cassette through a
// session with openai-go, replays it through another, and reads both
// summaries; then `llmproxy mock` with no scenario file serves one loaded
// by a session.
func TestSessionsThroughTheBinary(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	up := fake.New(t, fake.OpenAIChat(crashLoop))
	root := t.TempDir()
	p := startProc(t, bin, true, "record", "--cassette-dir", root, "--listen", "127.0.0.1:0", "--upstream", "openai="+up.URL())
	ctx := context.Background()

	if _, err := weatherAgent(ctx, p.base, false); !sdkSays(err, "no session") {
		t.Fatalf("before a session: %v", err)
	}
	out := control(t, p.base, 200, "PUT", "/_llmproxy/session", `{"cassette":"cassettes/test_mod/test_a.cassette","name":"tests/test_mod.py::test_a"}`)
	path := filepath.Join(root, "cassettes", "test_mod", "test_a.cassette")
	if out["session"].(map[string]any)["cassette"] != path {
		t.Fatalf("PUT: %v", out)
	}
	recorded, err := weatherAgent(ctx, p.base, false)
	if err != nil {
		t.Fatal(err)
	}
	v := control(t, p.base, 200, "GET", "/_llmproxy/verify?tool=weather&count=1&args="+url.QueryEscape(`{"location":"Paris"}`), "")
	if v["ok"] != true {
		t.Errorf("verify: %v", v)
	}
	out = control(t, p.base, 200, "DELETE", "/_llmproxy/session", "")
	ended := out["ended"].(map[string]any)
	if ended["recorded"] != 2.0 || ended["name"] != "tests/test_mod.py::test_a" {
		t.Fatalf("the recording session's summary: %v", ended)
	}
	// Its recordings are on disk once DELETE answered: the file opens
	// read-only beside the running proxy and holds both.
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := c.Len()
	c.Close()
	if n != 2 {
		t.Fatalf("%s holds %d interactions after DELETE, want 2", path, n)
	}
	hits := up.Hits()
	control(t, p.base, 200, "PUT", "/_llmproxy/session", `{"cassette":"cassettes/test_mod/test_a.cassette","mode":"replay"}`)
	replayed, err := weatherAgent(ctx, p.base, false)
	if err != nil || replayed != recorded {
		t.Fatalf("replayed %q (%v), recorded %q", replayed, err, recorded)
	}
	if up.Hits() != hits {
		t.Errorf("the replay session reached the upstream")
	}
	out = control(t, p.base, 200, "DELETE", "/_llmproxy/session", "")
	if ended := out["ended"].(map[string]any); ended["served"] != 2.0 || len(ended["unused"].([]any)) != 0 || ended["missed_total"] != 0.0 {
		t.Fatalf("the replay session's summary: %v", ended)
	}

	m := startProc(t, bin, true, "mock", "--listen", "127.0.0.1:0", "--pace", "instant")
	if _, err := weatherAgent(ctx, m.base, false); !sdkSays(err, "no scenario") {
		t.Fatalf("mock with no scenario: %v", err)
	}
	yaml := "version: 1\nname: w\nsteps:\n  - respond: {text: Sunny.}\n"
	control(t, m.base, 200, "PUT", "/_llmproxy/session", fmt.Sprintf(`{"scenario":%q}`, yaml))
	if got, err := weatherAgent(ctx, m.base, false); err != nil || !strings.HasSuffix(got, "answer Sunny.") {
		t.Fatalf("mock session: %q %v", got, err)
	}
}
