package fake

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
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
// the model named in the path.
func Gemini(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.gemini)
}

const (
	geminiPromptTurn1 = 29
	geminiPromptTurn2 = 61
	geminiThoughts    = 202
)

type geminiRequest struct {
	Contents []struct {
		Role  string                       `json:"role"`
		Parts []map[string]json.RawMessage `json:"parts"`
	} `json:"contents"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	Content struct {
		Parts []geminiPart `json:"parts"`
		Role  string       `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason,omitempty"`
	Index        int    `json:"index"`
}

type geminiPart struct {
	Text         *string             `json:"text,omitempty"`
	FunctionCall *geminiFunctionCall `json:"functionCall,omitempty"`
	Signature    string              `json:"thoughtSignature,omitempty"`
}

type geminiFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
	PromptTokensDetails  []struct {
		Modality   string `json:"modality"`
		TokenCount int    `json:"tokenCount"`
	} `json:"promptTokensDetails"`
	ThoughtsTokenCount int `json:"thoughtsTokenCount"`
}

func newGeminiUsage(prompt, candidates int) geminiUsage {
	u := geminiUsage{
		PromptTokenCount: prompt, CandidatesTokenCount: candidates,
		TotalTokenCount: prompt + candidates + geminiThoughts, ThoughtsTokenCount: geminiThoughts,
	}
	u.PromptTokensDetails = append(u.PromptTokensDetails, struct {
		Modality   string `json:"modality"`
		TokenCount int    `json:"tokenCount"`
	}{"TEXT", prompt})
	return u
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
	responseID := rnd.chars(alnumChars+"-_", 23)
	chunk := func(part geminiPart, finish string, usage geminiUsage) geminiResponse {
		var c geminiCandidate
		c.Content.Parts, c.Content.Role, c.FinishReason = []geminiPart{part}, "model", finish
		return geminiResponse{Candidates: []geminiCandidate{c}, UsageMetadata: usage, ModelVersion: model, ResponseID: responseID}
	}
	text := func(s string) geminiPart { return geminiPart{Text: &s} }

	// The answer as the non-streamed response and as stream chunks.
	var whole geminiResponse
	var parts []geminiResponse
	if turn == 1 {
		call := geminiPart{FunctionCall: &geminiFunctionCall{Name: l.Tool, Args: l.argsCompact}, Signature: rnd.base64(96)}
		usage := newGeminiUsage(geminiPromptTurn1, 10)
		whole = chunk(call, "STOP", usage)
		parts = []geminiResponse{chunk(call, "", usage), chunk(text(""), "STOP", usage)}
	} else {
		ws := words(l.Answer)
		usage := newGeminiUsage(geminiPromptTurn2, len(ws))
		whole = chunk(text(l.Answer), "STOP", usage)
		// Gemini streams text in a few large pieces: the first word, then the
		// rest in up to two parts.
		var pieces []string
		switch {
		case len(ws) <= 1:
			pieces = []string{l.Answer}
		case len(ws) <= 4:
			pieces = []string{ws[0], strings.Join(ws[1:], "")}
		default:
			mid := 1 + (len(ws)-1)/2
			pieces = []string{ws[0], strings.Join(ws[1:mid], ""), strings.Join(ws[mid:], "")}
		}
		for i, p := range pieces {
			finish := ""
			if i == len(pieces)-1 {
				finish = "STOP"
			}
			parts = append(parts, chunk(text(p), finish, usage))
		}
	}

	switch {
	case method == "generateContent":
		return &Response{Header: providerHeader(gemini, false), Body: append(indent(marshal(whole), "  "), '\n')}
	case queryValue(req.RawQuery, "alt") == "sse":
		var events [][]byte
		for _, p := range parts {
			ev := append([]byte("data: "), googleSpacing(marshal(p))...)
			events = append(events, append(ev, "\r\n\r\n"...))
		}
		return &Response{Header: providerHeader(gemini, true), Events: events}
	default:
		// One JSON array, streamed: "[{…}\n", ",\r\n{…}\n", …, "]".
		var events [][]byte
		for i, p := range parts {
			lead := ",\r\n"
			if i == 0 {
				lead = "["
			}
			ev := append([]byte(lead), indent(marshal(p), "  ")...)
			events = append(events, append(ev, '\n'))
		}
		events = append(events, []byte("]"))
		return &Response{Header: providerHeader(gemini, false), Events: events}
	}
}

// queryValue returns the first value of key in a raw query, "" when absent or
// unparsable.
func queryValue(rawQuery, key string) string {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return ""
	}
	return q.Get(key)
}
