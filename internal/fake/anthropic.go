package fake

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmproxy/llmproxy/wire"
)

// AnthropicMessages plays l on Anthropic's Messages API (POST …/messages). A
// request whose messages hold no tool_result block gets a tool_use block, one
// that does gets a text block. With "stream": true the events follow the
// captured streams: message_start, content_block_start (a tool_use with
// "input": {} or an empty text), a ping, the deltas (for a tool_use an empty
// partial_json first, then the arguments in fragments), content_block_stop,
// message_delta, message_stop, every JSON object but the ping padded with
// spaces before its closing brace as Anthropic's are. Otherwise a compact
// message object shaped like anthropic-messages-tooluse.response.json. The
// model is echoed from the request. Package wire writes the answer.
//
// Anthropic on Vertex AI is served too: POST
// …/publishers/anthropic/models/{model}:rawPredict and :streamRawPredict,
// whose body has no model (it is the path's) and the same "stream".
func AnthropicMessages(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.anthropicMessages)
}

const (
	anthropicDefaultModel = "claude-sonnet-4-6"
	anthropicPromptTurn1  = 669
	anthropicPromptTurn2  = 742
)

type anthropicRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// hasToolResult reports whether any message carries a tool_result block.
func (in *anthropicRequest) hasToolResult() bool {
	for _, m := range in.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string content
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				return true
			}
		}
	}
	return false
}

func (l loop) anthropicMessages(req *Request) *Response {
	vertexModel := vertexAnthropicModel(req.Path)
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/messages") && vertexModel == "" {
		return apiError(anthropic, http.StatusNotFound, "Not Found")
	}
	var in anthropicRequest
	if resp := jsonBody(anthropic, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	if in.hasToolResult() {
		turn = 2
	}
	model := in.Model
	if model == "" {
		model = vertexModel
	}
	if model == "" {
		model = anthropicDefaultModel
	}
	rnd := l.seq("anthropic-messages", turn)
	a := wire.Answer{Model: model, ID: "msg_01" + rnd.alnum(22)}
	if turn == 1 {
		a.ToolCalls = []wire.ToolCall{l.call()}
		a.Usage = wire.Usage{Input: anthropicPromptTurn1, Output: 8 + len(l.argsCompact)/2}
	} else {
		a.Text = l.Answer
		a.Usage = wire.Usage{Input: anthropicPromptTurn2, Output: 8 + 4*len(strings.Fields(l.Answer))}
	}
	return write(anthropic, wire.KindAnthropicMessages, req, a)
}

// vertexAnthropicModel returns the model of an Anthropic-on-Vertex path
// (…/models/{model}:rawPredict or :streamRawPredict), "" for any other.
func vertexAnthropicModel(path string) string {
	last := path[strings.LastIndexByte(path, '/')+1:]
	for _, op := range []string{":rawPredict", ":streamRawPredict"} {
		if m, ok := strings.CutSuffix(last, op); ok && strings.Contains(path, "/publishers/anthropic/models/") {
			return m
		}
	}
	return ""
}
