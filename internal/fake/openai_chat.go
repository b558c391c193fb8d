package fake

import (
	"net/http"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

// OpenAIChat plays l on OpenAI's Chat Completions API (POST
// …/chat/completions). A request whose messages hold no "tool" message gets
// the tool call, one that does gets the answer. With "stream": true the answer
// is an SSE stream shaped like openai-chat-stream-toolcalls.sse and
// openai-chat-stream-text-after-toolresult.sse ("usage": null on every chunk
// and a final usage chunk with "choices": [] when
// stream_options.include_usage is set, an "obfuscation" field unless
// stream_options.include_obfuscation is false, then "data: [DONE]");
// otherwise a chat.completion object shaped like
// openai-chat-toolcalls.response.json. The model is echoed from the request.
// Package wire writes the answer.
//
// Other paths get OpenAI's 404 and a body that is not JSON a 400.
func OpenAIChat(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.openAIChat)
}

const (
	openAIChatCreated     = 1782955817 // created of the captured stream, turn 1
	openAIDefaultModel    = "gpt-4o-mini-2024-07-18"
	openAIChatPromptTurn1 = 53
	openAIChatPromptTurn2 = 78
)

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

func (l loop) openAIChat(req *Request) *Response {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/chat/completions") {
		return apiError(openAI, http.StatusNotFound, "Invalid URL ("+req.Method+" "+req.Path+")")
	}
	var in chatRequest
	if resp := jsonBody(openAI, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	for _, m := range in.Messages {
		if m.Role == "tool" || m.Role == "function" {
			turn = 2
		}
	}
	model := in.Model
	if model == "" {
		model = openAIDefaultModel
	}
	rnd := l.seq("openai-chat", turn)
	a := wire.Answer{
		Model:   model,
		ID:      "chatcmpl-" + rnd.alnum(29),
		Created: time.Unix(int64(openAIChatCreated+turn-1), 0),
	}
	if turn == 1 {
		a.ToolCalls = []wire.ToolCall{l.call()}
		a.Usage = wire.Usage{Input: openAIChatPromptTurn1, Output: len(l.Args)/3 + 6}
	} else {
		a.Text = l.Answer
		a.Usage = wire.Usage{Input: openAIChatPromptTurn2, Output: len(strings.Fields(l.Answer)) + 1}
	}
	return write(openAI, wire.KindOpenAIChat, req, a)
}
