package proxy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
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
// timeout is the client's timeout error.
func TestFaultStallPastClientTimeout(t *testing.T) {
	up := fake.New(t, numberedAnswers(2, 0))
	path := recordNumbered(t, up, true, "hello")
	rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "stall@event=2,for=1m"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := askChat(ctx, rep.URL(), "hello", true)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the client's deadline", err)
	}
	// The stall ends when the client leaves; the recording stays.
	got, err := askChat(context.Background(), rep.URL(), "hello", true, option.WithRequestTimeout(100*time.Millisecond))
	if err == nil || got != "" {
		t.Fatalf("second request %q, %v: want it stalled too (rate 1)", got, err)
	}
	for _, e := range logEntries(t, rep.URL()) {
		if e.Fault != "stall@event=2,for=1m0s" || !e.Incomplete {
			t.Errorf("entry %+v: want an incomplete stall", e)
		}
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
