package sdktest_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

// ollamaChatResponse mirrors the Ollama server's api.ChatResponse, as its
// Go client decodes each line.
type ollamaChatResponse struct {
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	Message   struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		Thinking  string `json:"thinking"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Index     int            `json:"index"`
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	DoneReason         string `json:"done_reason"`
	Done               bool   `json:"done"`
	TotalDuration      int64  `json:"total_duration"`
	PromptEvalCount    int    `json:"prompt_eval_count"`
	PromptEvalDuration int64  `json:"prompt_eval_duration"`
	EvalCount          int    `json:"eval_count"`
	EvalDuration       int64  `json:"eval_duration"`
	Error              string `json:"error"`
}

// ollamaChat posts a chat request and reads the answer line by line, as
// Ollama's client does.
func ollamaChat(t *testing.T, url, body string) (int, []ollamaChatResponse) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []ollamaChatResponse
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var r ollamaChatResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d %q: %v", len(lines), sc.Bytes(), err)
		}
		lines = append(lines, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, lines
}

func TestOllamaChat(t *testing.T) {
	for _, c := range contents {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				m := answering(t, c.a)
				body := `{"model":"llama3.2","messages":[{"role":"user","content":"Paris?"}]}`
				if !stream {
					body = `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"Paris?"}]}`
				}
				status, lines := ollamaChat(t, m.URL()+"/api/chat", body)
				if status != http.StatusOK || len(lines) == 0 || (len(lines) == 1) == stream {
					t.Fatalf("status %d, %d lines", status, len(lines))
				}
				got := seen{thoughts: -1}
				for i, l := range lines {
					if l.Done != (i == len(lines)-1) {
						t.Errorf("line %d: done %v", i, l.Done)
					}
					if l.Model != c.a.Model || !l.CreatedAt.Equal(created) || l.Message.Role != "assistant" {
						t.Errorf("line %d: model %q created_at %v role %q", i, l.Model, l.CreatedAt, l.Message.Role)
					}
					got.text += l.Message.Content
					got.reasoning += l.Message.Thinking
					for j, tc := range l.Message.ToolCalls {
						if tc.Function.Index != j {
							t.Errorf("call %d has index %d", j, tc.Function.Index)
						}
						args, _ := json.Marshal(tc.Function.Arguments)
						got.calls = append(got.calls, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
					}
				}
				done := lines[len(lines)-1]
				got.finish, got.input, got.output = done.DoneReason, done.PromptEvalCount, done.EvalCount
				if done.TotalDuration < done.PromptEvalDuration+done.EvalDuration || done.EvalDuration <= 0 {
					t.Errorf("durations %+v", done)
				}
				check(t, c.a, got, "stop")
			})
		}
	}
}

func TestOllamaErrors(t *testing.T) {
	m := newMock(t,
		step{err: &wire.ErrorAnswer{Status: 503, Message: "server busy, please try again"}},
		step{answer: &contents[0].a, cut: 2})
	status, lines := ollamaChat(t, m.URL()+"/api/chat", `{"model":"llama3.2","messages":[]}`)
	if status != http.StatusServiceUnavailable || len(lines) != 1 || lines[0].Error != "server busy, please try again" {
		t.Errorf("error answer %d %+v", status, lines)
	}
	status, lines = ollamaChat(t, m.URL()+"/api/chat", `{"model":"llama3.2","messages":[]}`)
	if status != http.StatusOK || len(lines) != 3 || lines[2].Error != "Overloaded" || lines[1].Done {
		t.Errorf("broken stream %d %+v", status, lines)
	}
}
