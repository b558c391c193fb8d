package proxytest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
)

var weather = fake.ToolLoop{
	Tool:   "weather",
	Args:   `{"location":"Paris"}`,
	CallID: "call_weather",
	Answer: "Sunny, 21 °C.",
}

// agent is the code under test: a two-turn tool loop with openai-go that
// answers the weather tool itself. It returns the final answer.
func agent(ctx context.Context, baseURL, city string) (string, error) {
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in " + city + "?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:       "weather",
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
		})},
	}
	for range 3 {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage(`{"temperature":21}`, tc.ID))
		}
	}
	return "", errors.New("no answer after three turns")
}

// spy is a testing.TB that keeps what the proxy reports instead of failing
// the real test, and runs its cleanups when told.
type spy struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	fatal    string
	cleanups []func()
}

func (s *spy) Helper() {}
func (s *spy) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, fmt.Sprintf(format, args...))
}
func (s *spy) Fatalf(format string, args ...any) {
	s.mu.Lock()
	s.fatal = fmt.Sprintf(format, args...)
	s.mu.Unlock()
	runtime.Goexit()
}
func (s *spy) Logf(string, ...any) {}
func (s *spy) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errors) > 0 || s.fatal != ""
}
func (s *spy) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

// end runs the cleanups, last first, as the testing package does.
func (s *spy) end() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// newSpied runs proxytest.New on a spy in its own goroutine, so that a
// Fatalf can end it; p is nil when New failed.
func newSpied(t *testing.T, path string, opts ...proxytest.Option) (*spy, *proxytest.Proxy) {
	s := &spy{TB: t}
	var p *proxytest.Proxy
	done := make(chan struct{})
	go func() {
		defer close(done)
		p = proxytest.New(s, path, opts...)
	}()
	<-done
	return s, p
}

func TestRecordThenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata", "agent.cassette")
	up := fake.New(t, fake.OpenAIChat(weather))
	t.Run("record", func(t *testing.T) {
		t.Setenv(proxytest.ModeEnv, "record")
		p := proxytest.New(t, path, proxytest.Upstream("openai", up.URL()))
		if p.Mode() != proxy.ModeRecord {
			t.Fatalf("mode %s, want record from %s", p.Mode(), proxytest.ModeEnv)
		}
		got, err := agent(context.Background(), p.URL("openai"), "Paris")
		if err != nil || got != weather.Answer {
			t.Fatalf("agent: %q, %v", got, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Error("the cassette is in place before the test ended")
		}
	})
	if up.Hits() != 2 {
		t.Fatalf("upstream hits = %d, want 2", up.Hits())
	}
	up.Close()
	t.Run("replay", func(t *testing.T) {
		p := proxytest.New(t, path)
		if p.Mode() != proxy.ModeReplay {
			t.Fatalf("mode %s, want replay by default", p.Mode())
		}
		got, err := agent(context.Background(), p.URL("openai"), "Paris")
		if err != nil || got != weather.Answer {
			t.Fatalf("agent: %q, %v", got, err)
		}
		log, err := p.Log()
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2 || len(log[0].ToolCalls) != 1 || log[0].ToolCalls[0].Name != "weather" ||
			len(log[1].ToolResults) != 1 || log[1].ToolResults[0].ID != weather.CallID {
			t.Errorf("log %+v does not show the weather call and its result", log)
		}
	})
	t.Run("replay unprefixed", func(t *testing.T) {
		// The recording was made through /openai; the default upstream is
		// the openai one, so the unprefixed spelling is the same route.
		s, p := newSpied(t, path)
		got, err := agent(context.Background(), p.BaseURL(), "Paris")
		s.end()
		if err != nil || got != weather.Answer {
			t.Fatalf("recorded through /openai, replayed unprefixed: %q, %v", got, err)
		}
		if len(s.errors) != 0 {
			t.Errorf("test errors %q, want none", s.errors)
		}
	})
}

func TestFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.cassette")
	up := fake.New(t, fake.OpenAIChat(weather))
	rec, err := proxytest.Start(path, proxytest.Mode(proxy.ModeRecord), proxytest.Upstream("", up.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent(context.Background(), rec.BaseURL(), "Paris"); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		opts   []proxytest.Option
		run    func(p *proxytest.Proxy) error
		errors int      // how many test errors
		says   []string // parts of them
	}{
		{"all served", nil, func(p *proxytest.Proxy) error {
			_, err := agent(context.Background(), p.BaseURL(), "Paris")
			return err
		}, 0, nil},
		{"a miss", nil, func(p *proxytest.Proxy) error {
			if _, err := agent(context.Background(), p.BaseURL(), "Rome"); err == nil {
				return errors.New("no error from a miss")
			}
			_, err := agent(context.Background(), p.BaseURL(), "Paris")
			return err
		}, 1, []string{`proxytest: llmproxy: cassette ` + path + ` has no recording of this request (POST /v1/chat/completions); closest is interaction 1`}},
		{"unused", nil, func(p *proxytest.Proxy) error { return nil },
			1, []string{"proxytest: cassette " + path + ": 2 recorded interaction(s) never served", "interaction 1: POST /v1/chat/completions", "tool call call_weather weather"}},
		{"unused allowed", []proxytest.Option{proxytest.AllowUnused()}, func(p *proxytest.Proxy) error { return nil }, 0, nil},
		{"exhausted", nil, func(p *proxytest.Proxy) error {
			if _, err := agent(context.Background(), p.BaseURL(), "Paris"); err != nil {
				return err
			}
			if _, err := agent(context.Background(), p.BaseURL(), "Paris"); err == nil {
				return errors.New("no error from a second run")
			}
			return nil
		}, 1, []string{"was already served from its only recording, interaction 1; --on-exhausted is reject"}},
		{"repeat-last", []proxytest.Option{proxytest.OnExhausted(proxy.ExhaustedRepeatLast)}, func(p *proxytest.Proxy) error {
			for range 3 {
				if _, err := agent(context.Background(), p.BaseURL(), "Paris"); err != nil {
					return err
				}
			}
			return nil
		}, 0, nil},
		{"ignore rules", []proxytest.Option{proxytest.Ignore("messages.0.content")}, func(p *proxytest.Proxy) error {
			_, err := agent(context.Background(), p.BaseURL(), "Rome")
			return err
		}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newSpied(t, path, tt.opts...)
			if p == nil {
				t.Fatalf("New failed: %s", s.fatal)
			}
			if err := tt.run(p); err != nil {
				t.Fatal(err)
			}
			s.end()
			if len(s.errors) != tt.errors {
				t.Fatalf("test errors %q, want %d", s.errors, tt.errors)
			}
			all := strings.Join(s.errors, "\n")
			for _, want := range tt.says {
				if !strings.Contains(all, want) {
					t.Errorf("test errors %q do not say %q", all, want)
				}
			}
		})
	}
}

func TestSetupProblems(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		env   string
		path  string
		opts  []proxytest.Option
		fatal string
	}{
		{"no cassette", "", filepath.Join(dir, "none.cassette"), nil,
			"cassette " + filepath.Join(dir, "none.cassette") + " does not exist; record it with LLMPROXY_MODE=record go test"},
		{"bad mode", "replay-ish", filepath.Join(dir, "x.cassette"), nil, `LLMPROXY_MODE: mode "replay-ish"`},
		{"bad upstream", "", filepath.Join(dir, "x.cassette"), []proxytest.Option{proxytest.Mode(proxy.ModeRecord), proxytest.Upstream("openai", "ftp://x")},
			`upstream openai: "ftp://x" is not an http(s) URL`},
		{"bad rules file", "", filepath.Join(dir, "x.cassette"), []proxytest.Option{proxytest.Mode(proxy.ModeRecord), proxytest.RulesFile(filepath.Join(dir, "rules.json"))},
			"rules file " + filepath.Join(dir, "rules.json") + `: unknown field "ignor"`},
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.json"), []byte(`{"ignor":["x"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(proxytest.ModeEnv, tt.env)
			s, p := newSpied(t, tt.path, tt.opts...)
			if p != nil || !strings.Contains(s.fatal, tt.fatal) {
				t.Errorf("fatal %q, want one saying %q", s.fatal, tt.fatal)
			}
			s.end()
			if files, _ := filepath.Glob(filepath.Join(dir, "*.cassette*")); len(files) != 0 {
				t.Errorf("files left behind: %q", files)
			}
		})
	}
}

func TestFailedRecordingKeepsCassette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.cassette")
	up := fake.New(t, fake.OpenAIChat(weather))
	for n, fail := range []bool{false, true} {
		s, p := newSpied(t, path, proxytest.Mode(proxy.ModeRecord), proxytest.Upstream("", up.URL()))
		city := []string{"Paris", "Rome"}[n]
		if _, err := agent(context.Background(), p.BaseURL(), city); err != nil {
			t.Fatal(err)
		}
		if fail {
			s.Errorf("the test failed")
		}
		s.end()
	}
	// The cassette holds the first, passing recording (Paris), not Rome.
	s, p := newSpied(t, path)
	if p == nil {
		t.Fatal(s.fatal)
	}
	if got, err := agent(context.Background(), p.BaseURL(), "Paris"); err != nil || got != weather.Answer {
		t.Errorf("replaying the passing recording: %q, %v", got, err)
	}
	s.end()
	if len(s.errors) != 0 {
		t.Errorf("errors %q", s.errors)
	}
	if files, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(files) != 0 {
		t.Errorf("temporary files left behind: %q", files)
	}
}
