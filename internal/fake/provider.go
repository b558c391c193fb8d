package fake

import (
	"net/http"
	"strings"

	"github.com/llmproxy/llmproxy/wire"
)

// provider names the API family whose headers and error shapes to use.
type provider int

const (
	openAI provider = iota
	anthropic
	gemini
	ollama
)

// providerOfPath guesses the provider from a request path, for answers that
// are not up to a script (the authentication failure).
func providerOfPath(path string) provider {
	switch {
	case strings.Contains(path, ":generateContent"), strings.Contains(path, ":streamGenerateContent"),
		strings.Contains(path, "/v1beta/"):
		return gemini
	case strings.HasSuffix(path, "/messages"), strings.Contains(path, "/v1/messages/"):
		return anthropic
	case strings.HasPrefix(path, "/api/"):
		return ollama
	}
	return openAI
}

// providerOfName reads the provider from a captured file name.
func providerOfName(name string) provider {
	switch {
	case strings.HasPrefix(name, "anthropic-"):
		return anthropic
	case strings.HasPrefix(name, "gemini-"):
		return gemini
	case strings.HasPrefix(name, "ollama-"):
		return ollama
	}
	return openAI
}

// providerHeader returns the response headers a provider sends with a
// successful answer: the captured ones where a capture exists, else only the
// Content-Type the provider is known to use.
func providerHeader(p provider, stream bool) http.Header {
	switch p {
	case openAI:
		if stream {
			// The one captured OpenAI stream header set (a Responses call);
			// it serves for Chat Completions streams too.
			return servable(CapturedHeaders("openai-responses-stream-functioncall.response.headers.txt"))
		}
		return servable(CapturedHeaders("openai-chat-toolcalls.response.headers.txt"))
	case anthropic:
		h := servable(CapturedHeaders("anthropic-messages-tooluse.response.headers.txt"))
		if stream {
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
		}
		return h
	case gemini:
		if stream {
			return http.Header{"Content-Type": {"text/event-stream"}}
		}
		return http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	default: // ollama
		if stream {
			return http.Header{"Content-Type": {"application/x-ndjson"}}
		}
		return http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	}
}

// authFailure is the provider's authentic answer to a missing or wrong key.
// Ollama has no authentication of its own; a gateway in front of it is taken
// to answer like OpenAI.
func authFailure(p provider) *Response {
	switch p {
	case anthropic:
		status, h, body := CapturedHTTP("anthropic-error-401-authentication.http")
		return &Response{Status: status, Header: servable(h), Body: body}
	case gemini:
		return &Response{
			Status: http.StatusBadRequest,
			Header: providerHeader(gemini, false),
			Body:   Captured("gemini-error-400-api-key-invalid.json"),
		}
	default:
		status, h, body := CapturedHTTP("openai-error-401-invalid-api-key.http")
		return &Response{Status: status, Header: servable(h), Body: body}
	}
}

// apiError answers in the provider's own error shape, for requests a script
// cannot serve (wrong route, unparsable body).
func apiError(p provider, status int, msg string) *Response {
	var body []byte
	h := http.Header{}
	switch p {
	case anthropic:
		typ := "invalid_request_error"
		if status == http.StatusNotFound {
			typ = "not_found_error"
		}
		h.Set("Content-Type", "application/json")
		h.Set("X-Should-Retry", "false")
		type detail struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		body = marshal(struct {
			Type  string `json:"type"`
			Error detail `json:"error"`
		}{"error", detail{typ, msg}})
	case gemini:
		st := "INVALID_ARGUMENT"
		if status == http.StatusNotFound {
			st = "NOT_FOUND"
		}
		h.Set("Content-Type", "application/json; charset=UTF-8")
		type googleStatus struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		}
		body = append(indent(marshal(struct {
			Error googleStatus `json:"error"`
		}{googleStatus{status, msg, st}}), "  "), '\n')
	case ollama:
		h.Set("Content-Type", "application/json; charset=utf-8")
		body = marshal(struct {
			Error string `json:"error"`
		}{msg})
	default:
		h.Set("Content-Type", "application/json; charset=utf-8")
		type detail struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		}
		body = append(indent(marshal(struct {
			Error detail `json:"error"`
		}{detail{Message: msg, Type: "invalid_request_error"}}), "    "), '\n')
	}
	return &Response{Status: status, Header: h, Body: body}
}

// write answers a request with a, written by package wire as the provider
// of kind writes it (streamed or not, include_usage, alt=sse, … as the
// request asks), over the provider's usual headers.
func write(p provider, kind wire.Kind, req *Request, a wire.Answer) *Response {
	path := req.Path
	if req.RawQuery != "" {
		path += "?" + req.RawQuery
	}
	o, err := wire.OptionsFor(kind, path, req.Body)
	if err != nil {
		return apiError(p, http.StatusBadRequest, err.Error())
	}
	w, err := wire.Write(kind, a, o)
	if err != nil {
		// A checked ToolLoop always makes a writable answer.
		return apiError(p, http.StatusInternalServerError, "fake: "+err.Error())
	}
	h := providerHeader(p, w.Streamed())
	for k, v := range w.Header {
		h[k] = v
	}
	resp := &Response{Status: w.Status, Header: h}
	if !w.Streamed() {
		resp.Body = w.Body
		return resp
	}
	resp.Events = make([][]byte, len(w.Events))
	for i, e := range w.Events {
		resp.Events[i] = e.Raw
	}
	return resp
}
