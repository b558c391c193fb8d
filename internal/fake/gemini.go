package fake

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmproxy/llmproxy/wire"
)

// Gemini plays l on the Gemini API (POST …/models/{model}:generateContent and
// :streamGenerateContent). A request whose contents hold no functionResponse
// (or function_response) part gets a functionCall part, without an id as the
// API sends it, with a thoughtSignature beside it; one that does gets the
// answer as text parts. :streamGenerateContent?alt=sse answers with
// "data: …" events separated by CRLF CRLF and written in Google's spacing
// (`{"candidates": [{"content": …`), like
// gemini-streamgeneratecontent-sse-functioncall.sse; without alt=sse it
// streams one JSON array like gemini-streamgeneratecontent-jsonarray-functioncall.json.
// :generateContent answers one pretty-printed response. The model version is
// the model named in the path. Package wire writes the answer.
func Gemini(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.gemini)
}

const (
	geminiPromptTurn1 = 29
	geminiPromptTurn2 = 61
	geminiThoughts    = 202 // thoughtsTokenCount of the capture, which sends no thought
)

type geminiRequest struct {
	Contents []struct {
		Role  string                       `json:"role"`
		Parts []map[string]json.RawMessage `json:"parts"`
	} `json:"contents"`
}

// geminiMethod splits ".../models/gemini-2.5-flash:generateContent" into the
// model and the method.
func geminiMethod(path string) (model, method string) {
	last := path[strings.LastIndex(path, "/")+1:]
	model, method, _ = strings.Cut(last, ":")
	return model, method
}

func (in *geminiRequest) hasFunctionResponse() bool {
	for _, c := range in.Contents {
		for _, p := range c.Parts {
			if _, ok := p["functionResponse"]; ok {
				return true
			}
			if _, ok := p["function_response"]; ok {
				return true
			}
		}
	}
	return false
}

func (l loop) gemini(req *Request) *Response {
	model, method := geminiMethod(req.Path)
	if req.Method != http.MethodPost || (method != "generateContent" && method != "streamGenerateContent") || model == "" {
		return apiError(gemini, http.StatusNotFound, "Method not found.")
	}
	var in geminiRequest
	if resp := jsonBody(gemini, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	if in.hasFunctionResponse() {
		turn = 2
	}
	rnd := l.seq("gemini", turn)
	a := wire.Answer{Model: model, ID: rnd.chars(alnumChars+"-_", 23)}
	if turn == 1 {
		call := l.call()
		call.ID = "" // the Gemini API sends no id with a functionCall
		a.ToolCalls = []wire.ToolCall{call}
		a.Usage = wire.Usage{Input: geminiPromptTurn1, Output: 10 + geminiThoughts, Reasoning: geminiThoughts}
	} else {
		a.Text = l.Answer
		n := len(strings.Fields(l.Answer))
		a.Usage = wire.Usage{Input: geminiPromptTurn2, Output: n + geminiThoughts, Reasoning: geminiThoughts}
	}
	return write(gemini, wire.KindGemini, req, a)
}
