package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// compact is s with insignificant JSON whitespace removed.
func compact(t *testing.T, s []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestLogShowsToolTraffic(t *testing.T) {
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", mode, stream), func(t *testing.T) {
				up := fake.New(t, fake.OpenAIChat(weatherLoop))
				path := cassettePath(t)
				if mode == proxy.ModeReplay {
					rec := startProxy(t, proxy.ModeRecord, path, up.URL())
					if _, err := openaiGoLoop(context.Background(), rec.client(), rec.URL(), "What's the weather in Paris?", stream); err != nil {
						t.Fatal(err)
					}
					rec.stop()
				}
				p := startProxy(t, mode, path, up.URL())
				if mode == proxy.ModeReplay {
					if got := unusedIDs(t, p.URL(), ""); fmt.Sprint(got) != "[1 2]" {
						t.Errorf("unused before the loop = %v, want [1 2]", got)
					}
					if _, err := openaiGoLoop(context.Background(), p.client(), p.URL(), "What's the weather in Lyon?", stream); missOf(err) == "" {
						t.Fatalf("a changed prompt: %v, want a miss", err)
					}
				}
				if _, err := openaiGoLoop(context.Background(), p.client(), p.URL(), "What's the weather in Paris?", stream); err != nil {
					t.Fatal(err)
				}
				if got := unusedIDs(t, p.URL(), ""); mode == proxy.ModeReplay && len(got) != 0 {
					t.Errorf("unused after the loop = %v, want none", got)
				}

				// The log answers at once from what is written: a recording
				// appears once its stream has ended upstream, which can be a
				// moment after the client read its last event. So wait for
				// the entries the loop made, within a bound.
				want := 2
				if mode == proxy.ModeReplay {
					want = 3
				}
				var raw []byte
				var log struct {
					Entries []proxy.LogEntry
					Dropped int
				}
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					resp, err := http.Get(p.URL() + "/_llmproxy/log")
					if err != nil {
						t.Fatal(err)
					}
					raw, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err := json.Unmarshal(raw, &log); err != nil {
						t.Fatal(err)
					}
					if len(log.Entries) >= want || time.Now().After(deadline) {
						break
					}
				}
				e := log.Entries
				if mode == proxy.ModeReplay {
					if len(e) == 0 || e[0].Interaction != 0 || !strings.Contains(e[0].Miss, "messages.0.content") || e[0].Status != 400 {
						t.Fatalf("first entry %+v is not the miss of the changed prompt", e[0])
					}
					e = e[1:]
				}
				if len(e) != 2 {
					t.Fatalf("log holds %d entries after the miss, want 2:\n%s", len(e), raw)
				}
				call, result := e[0], e[1]
				for n, x := range e {
					if x.Interaction != uint64(n+1) || x.Miss != "" || x.Status != 200 || x.Cassette != path ||
						x.Method != "POST" || x.Path != "/v1/chat/completions" || x.Kind != "openai-chat" ||
						x.Model != "gpt-4o-mini" || x.Stream != stream || x.Turns != 1+2*n || x.Time.IsZero() {
						t.Errorf("entry %d = %+v", n, x)
					}
				}
				if len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != weatherLoop.CallID || call.ToolCalls[0].Name != weatherLoop.Tool ||
					compact(t, call.ToolCalls[0].Arguments) != compact(t, []byte(weatherLoop.Args)) || len(call.ToolResults) != 0 {
					t.Errorf("first turn: tool calls %+v, results %+v; want the weather call only", call.ToolCalls, call.ToolResults)
				}
				if len(result.ToolCalls) != 0 || len(result.ToolResults) != 1 || result.ToolResults[0].ID != weatherLoop.CallID {
					t.Fatalf("second turn: tool calls %+v, results %+v; want the weather result only", result.ToolCalls, result.ToolResults)
				}
				var content string
				if err := json.Unmarshal(result.ToolResults[0].Content, &content); err != nil || content != weatherResult {
					t.Errorf("tool result content = %s, want the JSON string of %s", result.ToolResults[0].Content, weatherResult)
				}
				// Arguments are JSON in the answer, not base64.
				if !strings.Contains(string(raw), `"arguments": {`) {
					t.Errorf("arguments are not a JSON object in:\n%s", raw)
				}
			})
		}
	}
}

func TestUnusedCountsOnlyDeliveredInteractions(t *testing.T) {
	up := fake.New(t, numberedAnswers(3, 0))
	path := recordNumbered(t, up, false, "a", "b", "c")
	p := startProxy(t, proxy.ModeReplay, path, "")
	tests := []struct {
		prompt string
		want   string // unused ids afterwards
	}{
		{"b", "[1 3]"},
		{"nothing like it", "[1 3]"},
		{"b", "[1 3]"}, // exhausted: a miss
		{"c", "[1]"},
		{"a", "[]"},
	}
	for _, tt := range tests {
		_, _ = askChat(context.Background(), p.URL(), tt.prompt, false)
		if got := fmt.Sprint(unusedIDs(t, p.URL(), "")); got != tt.want {
			t.Errorf("after %q: unused %s, want %s", tt.prompt, got, tt.want)
		}
	}
	var got struct {
		Interactions []cassette.Summary
	}
	apiGet(t, p.URL(), "/_llmproxy/interactions", &got)
	for _, s := range got.Interactions {
		if s.Consumed == nil || !*s.Consumed {
			t.Errorf("interaction %d is not consumed in /_llmproxy/interactions", s.ID)
		}
	}
}
