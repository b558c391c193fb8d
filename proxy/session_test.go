package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
	"github.com/llmproxy/llmproxy/wire"
)

// chatAsk is the body of the n-th question the session tests ask.
func chatAsk(n int) []byte {
	return fmt.Appendf(nil, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question %d"}]}`, n)
}

// chatAnswer is an OpenAI chat answer saying text, calling tool with args
// when tool is set.
func chatAnswer(text, tool, args string) []byte {
	calls := ""
	if tool != "" {
		calls = fmt.Sprintf(`,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":%q,"arguments":%q}}]`, tool, tool, args)
	}
	return fmt.Appendf(nil, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q%s},"finish_reason":"stop"}]}`, text, calls)
}

// writeAnswers writes a cassette at path whose interaction k answers
// chatAsk(k) with the text tag/k, for k < n, indexed as replay reads it.
func writeAnswers(t testing.TB, path, tag string, n int) {
	t.Helper()
	all := make([]*cassette.Interaction, n)
	for k := range n {
		all[k] = chatInteraction(chatAsk(k), chatAnswer(fmt.Sprintf("%s/%d", tag, k), "", ""))
	}
	writeInteractions(t, path, all)
}

func chatInteraction(req, resp []byte) *cassette.Interaction {
	kind := wire.Detect(http.MethodPost, "/v1/chat/completions")
	return &cassette.Interaction{
		Upstream: cassette.DefaultUpstream, Provider: kind.Provider(), Kind: string(kind), RecordedAt: time.Unix(1, 0).UTC(),
		Request:  cassette.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Headers: http.Header{"Content-Type": {"application/json"}}, Body: req},
		Response: cassette.Response{Status: http.StatusOK, Headers: http.Header{"Content-Type": {"application/json"}}, Body: resp},
	}
}

func writeInteractions(t testing.TB, path string, all []*cassette.Interaction) {
	t.Helper()
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ct := &cassette.Contents{Meta: store.Meta{Version: "test", IndexRules: x.Fingerprint()}, Interactions: all}
	if err := c.Replace(ct, x.Keys); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// ctl is a proxy serving sessions under a directory, over HTTP.
type ctl struct {
	t   testing.TB
	url string
	dir string
	p   *proxy.Server
}

// startCtl serves sessions under a new directory in mode, forwarding to
// upstream when it is set.
func startCtl(t testing.TB, mode proxy.Mode, upstream string, edit ...func(*proxy.Config)) *ctl {
	t.Helper()
	dir := t.TempDir()
	cfg := proxy.Config{Mode: mode, CassetteDir: dir, Version: "test", LockTimeout: 50 * time.Millisecond}
	if upstream != "" {
		u, err := url.Parse(upstream)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Upstreams, cfg.Default = map[string]*url.URL{"openai": u}, u
	}
	for _, e := range edit {
		e(&cfg)
	}
	if mode == proxy.ModeMock {
		cfg.CassetteDir = ""
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		srv.Close()
		if err := p.Close(); err != nil {
			t.Errorf("closing the proxy: %v", err)
		}
	})
	return &ctl{t: t, url: srv.URL, dir: dir, p: p}
}

// call sends a control request with a JSON body (none when body is "")
// and returns the status and the decoded answer.
func (c *ctl) call(method, path, body string, header ...string) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k := 0; k+1 < len(header); k += 2 {
		r.Header.Set(header[k], header[k+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s %s: status %d, not JSON: %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// mustCall is call that fails the test unless the status is want.
func (c *ctl) mustCall(want int, method, path, body string) map[string]any {
	c.t.Helper()
	status, out := c.call(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s %s: status %d, want %d: %v", method, path, body, status, want, out)
	}
	return out
}

// ask sends chatAsk(n) and returns the status and the answer's text (or
// the error body).
func (c *ctl) ask(n int, header ...string) (int, string) {
	c.t.Helper()
	status, text, err := askURL(c.url, n, header...)
	if err != nil {
		c.t.Fatal(err)
	}
	return status, text
}

// askURL is ask without a test, for goroutines.
func askURL(base string, n int, header ...string) (int, string, error) {
	r, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(chatAsk(n)))
	if err != nil {
		return 0, "", err
	}
	r.Header.Set("Content-Type", "application/json")
	for k := 0; k+1 < len(header); k += 2 {
		r.Header.Set(header[k], header[k+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Choices) == 0 {
		return resp.StatusCode, string(b), nil
	}
	return resp.StatusCode, out.Choices[0].Message.Content, nil
}

// field reads a nested field of a decoded answer: field(m, "ended", "served").
func field(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[p]
	}
	return v
}

func TestSessionSwitchesCassettes(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, "")
	writeAnswers(t, filepath.Join(c.dir, "a", "one.cassette"), "A", 3)
	writeAnswers(t, filepath.Join(c.dir, "b.cassette"), "B", 3)

	if status, text := c.ask(0); status != http.StatusBadRequest || !strings.Contains(text, "no session") {
		t.Fatalf("before any session: %d %s", status, text)
	}
	out := c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"a/one.cassette","name":"t1"}`)
	if field(out, "ended") != nil || field(out, "session", "interactions") != 3.0 || field(out, "session", "mode") != "replay" ||
		field(out, "session", "cassette") != filepath.Join(c.dir, "a", "one.cassette") || field(out, "session", "name") != "t1" {
		t.Fatalf("first PUT: %v", out)
	}
	if _, text := c.ask(1); text != "A/1" {
		t.Fatalf("session a answered %q", text)
	}
	if status, _ := c.ask(7); status != http.StatusBadRequest {
		t.Fatalf("a question a does not hold: %d", status)
	}
	got := c.mustCall(http.StatusOK, http.MethodGet, "/_llmproxy/session", "")
	if field(got, "session", "id") != field(out, "session", "id") {
		t.Fatalf("GET session: %v", got)
	}
	out = c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"b.cassette"}`)
	ended := field(out, "ended").(map[string]any)
	if ended["served"] != 1.0 || len(ended["unused"].([]any)) != 2 || len(ended["missed"].([]any)) != 1 || ended["recorded"] != 0.0 {
		t.Fatalf("a's summary: %v", ended)
	}
	if miss := field(ended["missed"].([]any)[0].(map[string]any), "message").(string); !strings.Contains(miss, "question 7") && !strings.Contains(miss, "closest") {
		t.Errorf("a's miss says no difference: %s", miss)
	}
	if _, text := c.ask(1); text != "B/1" {
		t.Fatalf("session b answered %q", text)
	}
	out = c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/session", "")
	if field(out, "ended", "served") != 1.0 || field(out, "ended", "cassette") != filepath.Join(c.dir, "b.cassette") {
		t.Fatalf("DELETE: %v", out)
	}
	if out := c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/session", ""); out["ended"] != nil {
		t.Fatalf("second DELETE: %v", out)
	}
	if status, text := c.ask(1); status != http.StatusBadRequest || !strings.Contains(text, "no session") {
		t.Fatalf("after DELETE: %d %s", status, text)
	}
}

// TestSessionSwitchUnderLoad switches the session 50 times across 50
// cassettes, each answering every question with its own tag, while 8
// clients ask continuously. Each answer must come from a session open at
// some moment between its request's start and its answer's end (the
// sessions opened from the last PUT answered before the request to the
// last PUT sent before the answer), and each session's summary must count
// exactly the answers tagged with its cassette.
func TestSessionSwitchUnderLoad(t *testing.T) {
	const switches, clients, questions = 50, 8, 4
	c := startCtl(t, proxy.ModeReplay, "")
	for i := range switches {
		writeAnswers(t, filepath.Join(c.dir, fmt.Sprintf("c%02d.cassette", i)), fmt.Sprintf("c%02d", i), questions)
	}
	var mu sync.Mutex
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"c00.cassette","on-exhausted":"repeat-last"}`)
	opened, sent := 0, 0 // the last PUT answered, the last PUT sent
	tagged := map[string]int{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, clients)
	for g := range clients {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				from := opened
				mu.Unlock()
				status, text, err := askURL(c.url, (g+n)%questions)
				mu.Lock()
				to := sent
				mu.Unlock()
				var tag int
				if err == nil && (status != http.StatusOK || len(text) < 3 || text[0] != 'c') {
					err = fmt.Errorf("status %d: %s", status, text)
				} else if err == nil {
					_, err = fmt.Sscanf(text[:3], "c%02d", &tag)
				}
				if err == nil && (tag < from || tag > to) {
					err = fmt.Errorf("answer %q came from session %d, but sessions %d to %d were open while it was asked", text, tag, from, to)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				tagged[text[:3]]++
				mu.Unlock()
			}
		})
	}
	summaries := map[string]float64{}
	note := func(out map[string]any) {
		if e, ok := out["ended"].(map[string]any); ok {
			summaries[strings.TrimSuffix(filepath.Base(e["cassette"].(string)), ".cassette")] = e["served"].(float64)
			if e["missed_total"] != 0.0 {
				t.Errorf("session %v missed: %v", e["cassette"], e["missed"])
			}
		}
	}
	for i := range switches {
		if i > 0 {
			mu.Lock()
			sent = i
			mu.Unlock()
			note(c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session",
				fmt.Sprintf(`{"cassette":"c%02d.cassette","on-exhausted":"repeat-last"}`, i)))
			mu.Lock()
			opened = i
			mu.Unlock()
		}
		// Let every client be served by this session at least once or so.
		for range clients {
			if _, text := c.ask(i % questions); !strings.HasPrefix(text, fmt.Sprintf("c%02d/", i)) {
				t.Fatalf("session %d answered %q", i, text)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	note(c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/session", ""))
	for i := range switches {
		tag := fmt.Sprintf("c%02d", i)
		// The switcher's own asks are counted by the summary too.
		if want := float64(tagged[tag] + clients); summaries[tag] != want {
			t.Errorf("session %s served %v, the clients got %v answers from it", tag, summaries[tag], want)
		}
	}
}

// echoUpstream answers every chat request with a text naming its question.
func echoUpstream(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(chatAnswer("upstream saw "+string(b), "", ""))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSessionRecordSwitchUnderLoad records through 50 sessions switched
// while 8 clients send continuously: each session's cassette holds, once
// it ended, exactly what its summary says it recorded, and all the
// cassettes together hold every answer the clients got.
func TestSessionRecordSwitchUnderLoad(t *testing.T) {
	const switches, clients = 50, 8
	c := startCtl(t, proxy.ModeRecord, echoUpstream(t))
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"rec/c00.cassette"}`)
	var answered sync.WaitGroup
	var mu sync.Mutex
	got := 0
	stop := make(chan struct{})
	errs := make(chan error, clients)
	for g := range clients {
		answered.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				status, text, err := askURL(c.url, g*100000+n)
				if err == nil && (status != http.StatusOK || !strings.HasPrefix(text, "upstream saw")) {
					err = fmt.Errorf("status %d: %s", status, text)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
	}
	recorded := map[string]float64{}
	note := func(out map[string]any) {
		if e, ok := out["ended"].(map[string]any); ok {
			recorded[e["cassette"].(string)] = e["recorded"].(float64)
		}
	}
	for i := range switches {
		if i > 0 {
			note(c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", fmt.Sprintf(`{"cassette":"rec/c%02d.cassette"}`, i)))
		}
		if status, _ := c.ask(-1 - i); status != http.StatusOK {
			t.Fatalf("session %d: %d", i, status)
		}
	}
	close(stop)
	answered.Wait()
	note(c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/session", ""))
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for i := range switches {
		path := filepath.Join(c.dir, "rec", fmt.Sprintf("c%02d.cassette", i))
		cs, err := cassette.Open(path, cassette.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		n, err := cs.Len()
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		if float64(n) != recorded[path] || n == 0 {
			t.Errorf("%s holds %d interactions; its summary says %v recorded", path, n, recorded[path])
		}
		total += n
	}
	if total != got+switches {
		t.Errorf("the cassettes hold %d interactions; the clients got %d answers", total, got+switches)
	}
}

// TestSessionInFlightKeepsItsCassette: a request under way when the
// session switches is answered and recorded on the cassette it started
// with, and the PUT that ended its session answers once it is written.
func TestSessionInFlightKeepsItsCassette(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var seen atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if seen.Add(1) == 1 { // only the first request waits
			close(arrived)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(chatAnswer("upstream saw "+string(b), "", ""))
	}))
	t.Cleanup(up.Close)
	c := startCtl(t, proxy.ModeRecord, up.URL)
	a := c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"a.cassette"}`)
	slow := make(chan string, 1)
	go func() {
		_, text, err := askURL(c.url, 1)
		if err != nil {
			text = err.Error()
		}
		slow <- text
	}()
	<-arrived
	switched := make(chan map[string]any, 1)
	go func() {
		_, out := c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"b.cassette"}`)
		switched <- out
	}()
	for { // until b is the session: from then on, new requests go to b
		now := c.mustCall(http.StatusOK, http.MethodGet, "/_llmproxy/session", "")
		if id := field(now, "session", "id"); id != nil && id != field(a, "session", "id") {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, text := c.ask(2); !strings.Contains(text, "question 2") {
		t.Fatalf("b answered %q", text)
	}
	close(release)
	if text := <-slow; !strings.Contains(text, "question 1") {
		t.Fatalf("the request in flight got %q", text)
	}
	out := <-switched
	if field(out, "ended", "recorded") != 1.0 || !strings.HasSuffix(field(out, "ended", "cassette").(string), "a.cassette") {
		t.Fatalf("a's summary: %v", out)
	}
	out = c.mustCall(http.StatusOK, http.MethodDelete, "/_llmproxy/session", "")
	if field(out, "ended", "recorded") != 1.0 {
		t.Fatalf("b's summary: %v", out)
	}
	for name, want := range map[string]string{"a": "question 1", "b": "question 2"} {
		cs, err := cassette.Open(filepath.Join(c.dir, name+".cassette"), cassette.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		all, err := cs.All()
		cs.Close()
		if err != nil || len(all) != 1 || !strings.Contains(string(all[0].Request.Body), want) {
			t.Errorf("%s.cassette holds %d interactions (%v), want one of %s", name, len(all), err, want)
		}
	}
}
