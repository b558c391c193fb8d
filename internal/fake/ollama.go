package fake

import (
	"net/http"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/wire"
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
// Package wire writes the answer.
func Ollama(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.ollama)
}

// ollamaStart is created_at of the captured stream's first line.
var ollamaStart = time.Date(2025, 7, 7, 20, 22, 19, 184789000, time.UTC)

const (
	ollamaDefaultModel = "llama3.2"
	ollamaPrompt       = 169
)

type ollamaRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
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
	// The answer's time moves with the loop, as a real server's clock would.
	rnd := l.seq("ollama", turn)
	at := ollamaStart.Add(time.Duration(turn-1)*3*time.Second + time.Duration(rnd.block()[0])*time.Millisecond)
	a := wire.Answer{Model: model, Created: at}
	if turn == 1 {
		a.ToolCalls = []wire.ToolCall{l.call()}
		a.Usage = wire.Usage{Input: ollamaPrompt, Output: 6}
	} else {
		a.Text = l.Answer
		a.Usage = wire.Usage{Input: ollamaPrompt, Output: 4 + 2*len(strings.Fields(l.Answer))}
	}
	return write(ollama, wire.KindOllama, req, a)
}
