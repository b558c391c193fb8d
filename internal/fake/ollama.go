package fake

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Ollama plays l on Ollama's chat API (POST …/api/chat). A request whose
// messages hold no "tool" message gets an assistant message with tool_calls,
// one that does gets the answer. Ollama streams unless the request says
// "stream": false: NDJSON lines (application/x-ndjson) with "done": false,
// then a last "done": true line with done_reason and the timing metrics, like
// ollama-api-chat-stream-toolcalls.ndjson; tool calls arrive whole, with
// object arguments. Tool calls carry the id and function index the current
// server adds ({"id":…,"function":{"index":0,"name":…,"arguments":{…}}}).
// Non-streamed, one compact JSON object. The model is echoed from the request.
func Ollama(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.ollama)
}

// ollamaStart is created_at of the captured stream's first line.
var ollamaStart = time.Date(2025, 7, 7, 20, 22, 19, 184789000, time.UTC)

const ollamaDefaultModel = "llama3.2"

type ollamaRequest struct {
	Model    string `json:"model"`
	Stream   *bool  `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

type ollamaLine struct {
	Model      string        `json:"model"`
	CreatedAt  string        `json:"created_at"`
	Message    ollamaMessage `json:"message"`
	DoneReason string        `json:"done_reason,omitempty"`
	Done       bool          `json:"done"`
	*ollamaMetrics
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaMetrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

func (l loop) ollama(req *Request) *Response {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/api/chat") {
		return apiError(ollama, http.StatusNotFound, "404 page not found")
	}
	var in ollamaRequest
	if resp := jsonBody(ollama, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	for _, m := range in.Messages {
		if m.Role == "tool" {
			turn = 2
		}
	}
	model := in.Model
	if model == "" {
		model = ollamaDefaultModel
	}
	rnd := l.seq("ollama", turn)
	at := ollamaStart.Add(time.Duration(turn-1) * 3 * time.Second)
	stamp := func() string {
		s := at.Format(time.RFC3339Nano)
		at = at.Add(time.Duration(rnd.between(6000, 12000)) * time.Microsecond)
		return s
	}

	var msg ollamaMessage
	var pieces []string
	if turn == 1 {
		var call ollamaToolCall
		call.ID, call.Function.Name, call.Function.Arguments = l.CallID, l.Tool, l.argsCompact
		msg = ollamaMessage{Role: "assistant", ToolCalls: []ollamaToolCall{call}}
		pieces = []string{""}
	} else {
		msg = ollamaMessage{Role: "assistant", Content: l.Answer}
		pieces = words(l.Answer)
	}
	evalCount := 4 + 2*len(pieces)
	metrics := &ollamaMetrics{
		LoadDuration: 41295167, PromptEvalCount: 169, PromptEvalDuration: 24573166,
		EvalCount: evalCount, EvalDuration: int64(evalCount) * 7730605,
	}
	metrics.TotalDuration = metrics.LoadDuration + metrics.PromptEvalDuration + metrics.EvalDuration + 414042

	if in.Stream != nil && !*in.Stream {
		body := marshal(ollamaLine{Model: model, CreatedAt: stamp(), Message: msg, DoneReason: "stop", Done: true, ollamaMetrics: metrics})
		return &Response{Header: providerHeader(ollama, false), Body: body}
	}
	var events [][]byte
	line := func(v ollamaLine) { events = append(events, append(marshal(v), '\n')) }
	if turn == 1 {
		line(ollamaLine{Model: model, CreatedAt: stamp(), Message: msg})
	} else {
		for _, p := range pieces {
			line(ollamaLine{Model: model, CreatedAt: stamp(), Message: ollamaMessage{Role: "assistant", Content: p}})
		}
	}
	line(ollamaLine{Model: model, CreatedAt: stamp(), Message: ollamaMessage{Role: "assistant"}, DoneReason: "stop", Done: true, ollamaMetrics: metrics})
	return &Response{Header: providerHeader(ollama, true), Events: events}
}
