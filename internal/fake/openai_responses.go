package fake

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

// OpenAIResponses plays l on OpenAI's Responses API (POST …/responses). A
// request whose input holds no function_call_output item gets a
// function_call, one that does gets a message with the answer. With
// "stream": true every event of the captured streams is sent, each with its
// sequence_number (response.created, response.in_progress,
// response.output_item.added, response.function_call_arguments.delta/.done or
// response.content_part.added, response.output_text.delta/.done,
// response.content_part.done, then response.output_item.done and
// response.completed); otherwise a response object shaped like
// openai-responses-functioncall.response.json. The model, instructions,
// store flag, reasoning effort and tools are echoed from the request.
// Package wire writes the answer.
func OpenAIResponses(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.openAIResponses)
}

const (
	responsesCreated      = 1778037182 // created_at of the captured stream, turn 1
	responsesDefaultModel = "gpt-5.5-2026-04-23"
	responsesPromptTurn1  = 58
	responsesPromptTurn2  = 94
)

type responsesRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

// hasFunctionCallOutput reports whether a Responses input (a string or a list
// of items) answers a function call.
func hasFunctionCallOutput(input json.RawMessage) bool {
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(input, &items) != nil {
		return false
	}
	for _, it := range items {
		if it.Type == "function_call_output" {
			return true
		}
	}
	return false
}

func (l loop) openAIResponses(req *Request) *Response {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/responses") {
		return apiError(openAI, http.StatusNotFound, "Invalid URL ("+req.Method+" "+req.Path+")")
	}
	var in responsesRequest
	if resp := jsonBody(openAI, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	if hasFunctionCallOutput(in.Input) {
		turn = 2
	}
	model := in.Model
	if model == "" {
		model = responsesDefaultModel
	}
	rnd := l.seq("openai-responses", turn)
	a := wire.Answer{
		Model:   model,
		ID:      "resp_" + rnd.hex(50),
		Created: time.Unix(int64(responsesCreated+4*(turn-1)), 0),
	}
	if turn == 1 {
		a.ToolCalls = []wire.ToolCall{l.call()}
		a.Usage = wire.Usage{Input: responsesPromptTurn1, Output: len(l.Args)/3 + 12}
	} else {
		a.Text = l.Answer
		a.Usage = wire.Usage{Input: responsesPromptTurn2, Output: len(strings.Fields(l.Answer)) + 12}
	}
	return write(openAI, wire.KindOpenAIResponses, req, a)
}
