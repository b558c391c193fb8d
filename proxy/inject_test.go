package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// withFaults is a Config edit that injects specs, seeded.
func withFaults(t testing.TB, seed uint64, specs ...string) func(*proxy.Config) {
	t.Helper()
	fs, err := faults.ParseAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *proxy.Config) { c.Faults = faults.Plan{Seed: seed, Faults: fs} }
}

// logEntries is the proxy's log.
func logEntries(t *testing.T, base string) []proxy.LogEntry {
	t.Helper()
	var log struct{ Entries []proxy.LogEntry }
	apiGet(t, base, "/_llmproxy/log", &log)
	return log.Entries
}

// TestFaultRetriedByOpenAIGo: a 429 with Retry-After on the first request
// of a conversation is met by openai-go's default retry, which gets the
// recording: the fault consumed nothing, and the log shows both requests.
func TestFaultRetriedByOpenAIGo(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			up := fake.New(t, numberedAnswers(1, 0))
			path := recordNumbered(t, up, stream, "hello")
			rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "429@request=1,retry-after=10ms"))
			got, err := askChat(context.Background(), rep.URL(), "hello", stream, option.WithMaxRetries(2))
			if err != nil || got != "answer 1" {
				t.Fatalf("got %q, %v; want the recording after one retry", got, err)
			}
			log := logEntries(t, rep.URL())
			if len(log) != 2 {
				t.Fatalf("log has %d entries, want 2: %+v", len(log), log)
			}
			if log[0].Status != 429 || log[0].Fault != "429@request=1,retry-after=10ms" || log[0].FaultRequest != 1 || !log[0].Incomplete {
				t.Errorf("first entry %+v: want the injected 429 of request 1", log[0])
			}
			if log[1].Status != 200 || log[1].Fault != "" || log[1].Interaction != 1 || log[1].Incomplete {
				t.Errorf("second entry %+v: want the recording served", log[1])
			}
			if ids := unusedIDs(t, rep.URL(), ""); len(ids) != 0 {
				t.Errorf("unused %v: the retry should have used the recording", ids)
			}
		})
	}
}

// TestFaultCutSeenByOpenAIGo: a stream cut after event 3 is an error in
// openai-go after 3 chunks, and leaves the recording for the next request.
func TestFaultCutSeenByOpenAIGo(t *testing.T) {
	up := fake.New(t, numberedAnswers(4, 0)) // 7 events: role, answer, 3 empty, finish, [DONE]
	path := recordNumbered(t, up, true, "hello")
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "cut@event=3,request=1"))
	client := openai.NewClient(option.WithBaseURL(rep.URL()+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	s := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: openai.ChatModelGPT4oMini, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	chunks := 0
	for s.Next() {
		chunks++
	}
	if s.Err() == nil || chunks != 3 {
		t.Fatalf("got %d chunks and error %v; want 3 chunks, then an error", chunks, s.Err())
	}
	got, err := askChat(context.Background(), rep.URL(), "hello", true)
	if err != nil || got != "answer 1" {
		t.Fatalf("after the cut: %q, %v; want the recording", got, err)
	}
	log := logEntries(t, rep.URL())
	if len(log) != 2 || log[0].Fault != "cut@request=1,event=3" || !log[0].Incomplete || log[1].Fault != "" {
		t.Errorf("log %+v: want the cut, then the recording", log)
	}
}

// TestFaultStallPastClientTimeout: a stall longer than the client's
// timeout is the client's timeout error: streamed, after event 2; whole,
// after the headers, before the body.
func TestFaultStallPastClientTimeout(t *testing.T) {
	for _, tc := range []struct {
		stream bool
		spec   string
	}{{true, "stall@event=2,for=1m0s"}, {false, "stall@for=1m0s"}} {
		t.Run(map[bool]string{false: "json", true: "stream"}[tc.stream], func(t *testing.T) {
			up := fake.New(t, numberedAnswers(2, 0))
			path := recordNumbered(t, up, tc.stream, "hello")
			rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, tc.spec))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := askChat(ctx, rep.URL(), "hello", tc.stream)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want the client's deadline", err)
			}
			// The stall ends when the client leaves; the recording stays.
			got, err := askChat(context.Background(), rep.URL(), "hello", tc.stream, option.WithRequestTimeout(100*time.Millisecond))
			if err == nil || got != "" {
				t.Fatalf("second request %q, %v: want it stalled too (rate 1)", got, err)
			}
			for _, e := range logEntries(t, rep.URL()) {
				if e.Fault != tc.spec || !e.Incomplete {
					t.Errorf("entry %+v: want an incomplete stall", e)
				}
			}
		})
	}
}

// TestFaultMalformedSeenByOpenAIGo: a truncated JSON event is an error.
func TestFaultMalformedSeenByOpenAIGo(t *testing.T) {
	for _, stream := range []bool{false, true} {
		up := fake.New(t, numberedAnswers(2, 0))
		path := recordNumbered(t, up, stream, "hello")
		rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "malformed@request=1"))
		_, err := askChat(context.Background(), rep.URL(), "hello", stream)
		var apiErr *openai.Error
		if err == nil || errors.As(err, &apiErr) {
			t.Errorf("stream %v: err = %v, want the SDK's JSON decoding error", stream, err)
		}
		if got, err := askChat(context.Background(), rep.URL(), "hello", stream); err != nil || got != "answer 1" {
			t.Errorf("stream %v: after the fault %q, %v; want the recording", stream, got, err)
		}
	}
}

// TestFaultHeaderRules: a fault header is refused with 400 naming
// --allow-header-faults unless the proxy allows it, always in record, and
// when it does not parse; the refused request is logged and served nothing.
func TestFaultHeaderRules(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0))
	path := recordNumbered(t, up, false, "hello")
	for _, tc := range []struct {
		name   string
		mode   proxy.Mode
		allow  bool
		header string
		status int
		says   string
	}{
		{"not allowed", proxy.ModeReplay, false, "429", 400, "--allow-header-faults"},
		{"unknown kind", proxy.ModeReplay, true, "boom", 400, `unknown kind "boom"`},
		{"bad rate", proxy.ModeReplay, true, "429@rate=2", 400, "rate 2 is not a number in [0,1]"},
		{"allowed", proxy.ModeReplay, true, "503", 503, "injected fault 503"},
		{"record", proxy.ModeRecord, true, "503", 400, "record never injects faults"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.mode == proxy.ModeRecord {
				p = cassettePath(t)
			}
			h := startProxy(t, tc.mode, p, up.URL(), func(c *proxy.Config) { c.AllowHeaderFaults = tc.allow })
			hits := up.Hits()
			r := postFault(t, h.URL(), "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`, "c", tc.header)
			if r.err != nil || r.status != tc.status || !strings.Contains(wire.ErrorMessage(r.body), tc.says) {
				t.Errorf("got %v %d %q, want %d saying %q", r.err, r.status, r.body, tc.status, tc.says)
			}
			if up.Hits() != hits {
				t.Errorf("the upstream was reached")
			}
			if log := logEntries(t, h.URL()); len(log) != 1 || log[0].Status != tc.status {
				t.Errorf("log %+v: want the request, %d", log, tc.status)
			}
		})
	}
}

// TestFaultPastTheStream: a fault at an event the stream does not have is
// not injected: the answer is served whole and the log says why.
func TestFaultPastTheStream(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0)) // 4 events
	path := recordNumbered(t, up, true, "hello")
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "cut@event=9"))
	if got, err := askChat(context.Background(), rep.URL(), "hello", true); err != nil || got != "answer 1" {
		t.Fatalf("got %q, %v; want the recording whole", got, err)
	}
	log := logEntries(t, rep.URL())
	if len(log) != 1 || log[0].Fault != "cut@event=9" || log[0].FaultSkipped != "cut@event=9 names event 9, but the stream has 4 events" || log[0].Incomplete {
		t.Fatalf("log %+v: want the fault named and why it was not injected", log)
	}
	if ids := unusedIDs(t, rep.URL(), ""); len(ids) != 0 {
		t.Errorf("unused %v: a skipped fault serves, and uses, the recording", ids)
	}
}

// TestFaultConsume: with consume, the faulted request uses its recording.
func TestFaultConsume(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0))
	path := recordNumbered(t, up, false, "hello")
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "500@request=1,consume"))
	_, err := askChat(context.Background(), rep.URL(), "hello", false)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("err = %v, want the injected 500", err)
	}
	_, err = askChat(context.Background(), rep.URL(), "hello", false)
	if missOf(err) == "" {
		t.Fatalf("err = %v, want a miss: the recording was consumed", err)
	}
}

// TestFaultResetAndTimeoutInReplay: reset and timeout give the client no
// answer, and leave the recording.
func TestFaultResetAndTimeoutInReplay(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0))
	path := recordNumbered(t, up, true, "hello")
	for _, spec := range []string{"reset@request=1", "timeout@request=1,after=10ms"} {
		rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, spec))
		r := postFault(t, rep.URL(), "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello"}]}`, "c", "")
		if r.err == nil {
			t.Errorf("%s: got %d %q, want no answer", spec, r.status, r.body)
		}
		if got, err := askChat(context.Background(), rep.URL(), "hello", true, option.WithHeader(proxy.ConversationHeader, "c")); err != nil || got != "answer 1" {
			t.Errorf("%s: then %q, %v; want the recording", spec, got, err)
		}
		rep.stop()
	}
}

// TestSessionFaults: a session's faults apply to its requests only, are
// numbered from the session's start, and a bad one is refused naming it.
func TestSessionFaults(t *testing.T) {
	c := startCtl(t, proxy.ModeReplay, "", func(cfg *proxy.Config) { cfg.OnExhausted = proxy.ExhaustedRepeatLast })
	writeAnswers(t, filepath.Join(c.dir, "a.cassette"), "a", 1)
	status, out := c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"a.cassette","faults":["429","cut@event=x"]}`)
	if msg, _ := field(out, "error", "message").(string); status != 400 || !strings.Contains(msg, `faults[1]: fault "cut@event=x"`) {
		t.Fatalf("bad fault: %d %v", status, out)
	}
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"a.cassette","faults":["503@request=2"]}`)
	for k, want := range []int{200, 503, 200} {
		if status, _ := c.ask(0); status != want {
			t.Errorf("request %d: %d, want %d", k+1, status, want)
		}
	}
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", `{"cassette":"a.cassette"}`)
	for k := range 3 {
		if status, text := c.ask(0); status != 200 {
			t.Errorf("session without faults, request %d: %d %s", k+1, status, text)
		}
	}
	status, out = c.call(http.MethodPut, "/_llmproxy/session", `{"cassette":"a.cassette","mode":"record","faults":["429"]}`)
	if msg, _ := field(out, "error", "message").(string); status != 400 || !strings.Contains(msg, "record never injects faults") {
		t.Errorf("record session with faults: %d %v", status, out)
	}
}

// faultedSet asks each of 8 conversations' prompt rounds times (in
// parallel or one conversation after another) and lists the requests that
// got the injected 500.
func faultedSet(t *testing.T, path string, seed uint64, parallel bool) []string {
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, seed, "500@rate=0.3"), func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
	defer rep.stop()
	const rounds = 6
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	conversation := func(k int) {
		for n := range rounds {
			_, err := askChat(context.Background(), rep.URL(), fmt.Sprintf("prompt %d", k), false)
			var apiErr *openai.Error
			if errors.As(err, &apiErr) && apiErr.StatusCode == 500 {
				mu.Lock()
				got = append(got, fmt.Sprintf("prompt %d #%d", k, n+1))
				mu.Unlock()
			} else if err != nil {
				t.Errorf("prompt %d: %v", k, err)
			}
		}
	}
	for k := range 8 {
		if parallel {
			wg.Add(1)
			go func() { defer wg.Done(); conversation(k) }()
		} else {
			conversation(k)
		}
	}
	wg.Wait()
	slices.Sort(got)
	return got
}

// TestFaultsSameUnderParallelConversations: 8 conversations at once are
// faulted on the same requests as one after another; another seed faults
// others.
func TestFaultsSameUnderParallelConversations(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0))
	prompts := make([]string, 8)
	for k := range prompts {
		prompts[k] = fmt.Sprintf("prompt %d", k)
	}
	path := recordNumbered(t, up, false, prompts...)
	serial := faultedSet(t, path, 11, false)
	if len(serial) == 0 || len(serial) == 48 {
		t.Fatalf("faulted %v: want some of the 48 requests", serial)
	}
	if par := faultedSet(t, path, 11, true); !slices.Equal(serial, par) {
		t.Errorf("parallel conversations faulted\n%v\nserial ones\n%v", par, serial)
	}
	if other := faultedSet(t, path, 12, false); slices.Equal(serial, other) {
		t.Errorf("seeds 11 and 12 faulted the same requests: %v", other)
	}
}

// TestFaultsInAutoOnlyOnServedAnswers: auto injects faults into what it
// serves from the cassette, never into what it forwards and records.
func TestFaultsInAutoOnlyOnServedAnswers(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0))
	path := recordNumbered(t, up, false, "hello")
	auto := startProxy(t, proxy.ModeAuto, path, up.URL(), withFaults(t, 1, "500"))
	_, err := askChat(context.Background(), auto.URL(), "hello", false)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("served from the cassette: %v, want the injected 500", err)
	}
	if got, err := askChat(context.Background(), auto.URL(), "new question", false); err != nil || got != "answer 2" {
		t.Fatalf("forwarded: %q, %v; want the upstream's answer", got, err)
	}
	log := logEntries(t, auto.URL())
	if len(log) != 2 || log[0].Fault != "500" || log[1].Fault != "" || !log[1].Recorded {
		t.Errorf("log %+v: want the fault on the served answer only", log)
	}
}

// TestMockSessionFaults: a mock session's faults fall on its requests; the
// faulted step is not used up, so the retry gets it.
func TestMockSessionFaults(t *testing.T) {
	c := startCtl(t, proxy.ModeMock, "")
	body, _ := json.Marshal(map[string]any{"scenario": weatherScenario, "faults": []string{"503@request=1"}})
	c.mustCall(http.StatusOK, http.MethodPut, "/_llmproxy/session", string(body))
	ask := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + weatherPrompt + `"}]}`
	for k, want := range []int{503, 200} {
		r := postFault(t, c.url, "/v1/chat/completions", ask, "conv", "")
		if r.err != nil || r.status != want {
			t.Errorf("request %d: %v %d %s, want %d", k+1, r.err, r.status, r.body, want)
		}
	}
	entries, err := c.p.Log(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Fault != "503@request=1" || entries[0].Step != "ask" || entries[1].Fault != "" || entries[1].Step != "ask" {
		t.Errorf("log %+v: want the fault on step ask, then step ask served", entries)
	}
}

// TestFaultsPassMCPBy: MCP traffic takes no faults: --fault leaves a
// replayed MCP answer as recorded, and a fault header on an MCP request is
// refused with a JSON-RPC error saying so.
func TestFaultsPassMCPBy(t *testing.T) {
	path := recordNotes(t, true)
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "500"), func(c *proxy.Config) {
		c.AllowHeaderFaults, c.OnExhausted = true, proxy.ExhaustedRepeatLast
	})
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"test-client","version":"1.0.0"},"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}}}}`
	if status, _, body := postMCP(t, rep, initialize, nil); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("under --fault 500: %d %s; want the recorded answer", status, body)
	}
	status, _, body := postMCP(t, rep, initialize, map[string]string{proxy.FaultHeader: "503"})
	if status != http.StatusBadRequest || !strings.Contains(body, `"jsonrpc":"2.0"`) || !strings.Contains(body, "MCP traffic takes no faults") {
		t.Errorf("fault header: %d %s; want a 400 JSON-RPC error saying MCP takes no faults", status, body)
	}
	for _, e := range logEntries(t, rep.URL()) {
		if e.Fault != "" {
			t.Errorf("entry %+v: an MCP request was faulted", e)
		}
	}
}

// TestFaultLogLines: the server's log names each fault injected (which
// request of its conversation, which fault) and each fault not injected,
// with why.
func TestFaultLogLines(t *testing.T) {
	up := fake.New(t, numberedAnswers(1, 0)) // 4 events
	path := recordNumbered(t, up, true, "hello")
	var logs syncBuffer
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "cut@event=9,request=1", "503@request=2"), func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.OnExhausted = proxy.ExhaustedRepeatLast
	})
	if got, err := askChat(context.Background(), rep.URL(), "hello", true); err != nil || got != "answer 1" {
		t.Fatalf("request 1: %q, %v; want the recording whole", got, err)
	}
	if _, err := askChat(context.Background(), rep.URL(), "hello", true, option.WithMaxRetries(0)); err == nil {
		t.Fatalf("request 2: want the injected 503")
	}
	// The handler logs a stream's fault decision after its last event,
	// which the client may read first: wait for the lines to arrive.
	wants := []string{
		`msg="fault not injected"`, `fault="cut@request=1,event=9" request=1 reason="cut@request=1,event=9 names event 9, but the stream has 4 events"`,
		`msg="fault injected"`, `fault="503@request=2" request=2`,
	}
	text := waitForLog(&logs, wants, 10*time.Second)
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
}

// waitForLog returns what logs holds once it contains every one of wants,
// or when patience runs out (the caller checks which are missing).
func waitForLog(logs *syncBuffer, wants []string, patience time.Duration) string {
	deadline := time.Now().Add(patience)
	for {
		text := string(logs.Bytes())
		missing := false
		for _, w := range wants {
			if !strings.Contains(text, w) {
				missing = true
				break
			}
		}
		if !missing || time.Now().After(deadline) {
			return text
		}
		time.Sleep(5 * time.Millisecond)
	}
}
