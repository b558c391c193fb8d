// Package mocktest drives conversations against a running llmproxy mock,
// for tests: the weather round of docs/scenarios/weather.yaml, many
// conversations at once on every wire, none of them named by a header, each
// written the way that wire's clients write their history.
package mocktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

const (
	args   = `{"location":"Paris","unit":"celsius"}`
	result = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`
	// Answer is the text the weather round ends with.
	Answer = "Paris is sunny, 21 °C."
)

// Wire is one way of holding the weather round: where it is posted, the
// question, and the request that sends the tool's result after the first
// answer (whose body it may read, for a response id).
type Wire struct {
	Name   string
	Path   string
	Ask    func(question string) string
	Result func(question string, first []byte) string
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Wires are the weather round on OpenAI chat, Responses (history resent,
// and continued by previous_response_id), Anthropic, Gemini and Ollama.
var Wires = []Wire{
	{
		Name: "openai-chat", Path: "/v1/chat/completions",
		Ask: func(q string) string {
			return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":` + quote(q) + `}]}`
		},
		Result: func(q string, _ []byte) string {
			return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":` + quote(q) + `},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":` + quote(args) + `}}]},` +
				`{"role":"tool","tool_call_id":"call_paris","content":` + quote(result) + `}]}`
		},
	},
	{
		Name: "openai-responses", Path: "/v1/responses",
		Ask: func(q string) string {
			return `{"model":"gpt-4o-mini","input":[{"role":"user","content":` + quote(q) + `}]}`
		},
		Result: func(q string, _ []byte) string {
			return `{"model":"gpt-4o-mini","input":[{"role":"user","content":` + quote(q) + `},` +
				`{"type":"function_call","id":"fc_1","call_id":"call_paris","name":"weather","arguments":` + quote(args) + `},` +
				`{"type":"function_call_output","call_id":"call_paris","output":` + quote(result) + `}]}`
		},
	},
	{
		Name: "openai-responses-previous", Path: "/v1/responses",
		Ask: func(q string) string {
			return `{"model":"gpt-4o-mini","input":` + quote(q) + `}`
		},
		Result: func(_ string, first []byte) string {
			return `{"model":"gpt-4o-mini","previous_response_id":` + quote(gjson.GetBytes(first, "id").String()) +
				`,"input":[{"type":"function_call_output","call_id":"call_paris","output":` + quote(result) + `}]}`
		},
	},
	{
		Name: "anthropic-messages", Path: "/anthropic/v1/messages",
		Ask: func(q string) string {
			return `{"model":"claude-sonnet-4-6","max_tokens":512,"messages":[{"role":"user","content":` + quote(q) + `}]}`
		},
		Result: func(q string, _ []byte) string {
			return `{"model":"claude-sonnet-4-6","max_tokens":512,"messages":[{"role":"user","content":` + quote(q) + `},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"call_paris","name":"weather","input":` + args + `}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_paris","content":` + quote(result) + `}]}]}`
		},
	},
	{
		Name: "gemini", Path: "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
		Ask: func(q string) string {
			return `{"contents":[{"role":"user","parts":[{"text":` + quote(q) + `}]}]}`
		},
		Result: func(q string, _ []byte) string {
			return `{"contents":[{"role":"user","parts":[{"text":` + quote(q) + `}]},` +
				`{"role":"model","parts":[{"functionCall":{"name":"weather","args":` + args + `}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"name":"weather","response":` + result + `}}]}]}`
		},
	},
	{
		Name: "ollama", Path: "/ollama/api/chat",
		Ask: func(q string) string {
			return `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":` + quote(q) + `}]}`
		},
		Result: func(q string, _ []byte) string {
			return `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":` + quote(q) + `},` +
				`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":` + args + `}}]},` +
				`{"role":"tool","tool_name":"weather","content":` + quote(result) + `}]}`
		},
	},
}

// Conversations runs n weather rounds at once on every wire against the
// mock at base, none named by a header: every conversation asks its
// question, and once all have their first answer, every one sends its
// tool result. It returns each answer's body by "WIRE/CONVERSATION/TURN",
// and an error naming the first round that did not get the call, then
// the answer.
func Conversations(ctx context.Context, base string, n int) (map[string]string, error) {
	var (
		mu   sync.Mutex
		out  = map[string]string{}
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for _, w := range Wires {
		var asked sync.WaitGroup
		asked.Add(n)
		for c := range n {
			wg.Go(func() {
				key := w.Name + "/" + strconv.Itoa(c)
				q := fmt.Sprintf("What's the weather in Paris? (conversation %d)", c)
				first, err := post(ctx, base+w.Path, w.Ask(q))
				asked.Done()
				asked.Wait() // interleave: every conversation asks before any answers
				if err == nil && !bytes.Contains(first, []byte("call_paris")) {
					err = fmt.Errorf("no call_paris in %s", first)
				}
				if err != nil {
					fail(fmt.Errorf("%s: ask: %w", key, err))
					return
				}
				second, err := post(ctx, base+w.Path, w.Result(q, first))
				if err == nil && !strings.Contains(string(second), Answer) {
					err = fmt.Errorf("no %q in %s", Answer, second)
				}
				if err != nil {
					fail(fmt.Errorf("%s: result: %w", key, err))
					return
				}
				mu.Lock()
				out[key+"/1"], out[key+"/2"] = string(first), string(second)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return out, fmt.Errorf("%d rounds failed, the first: %w", len(errs), errs[0])
	}
	return out, nil
}

// post sends body and returns the 200 answer's body.
func post(ctx context.Context, url, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return b, err
}
