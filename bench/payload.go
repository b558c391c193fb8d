package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The bench speaks OpenAI Chat Completions: the shapes below follow the
// captured traffic in internal/fake/captured (openai-chat-toolcalls.*,
// openai-chat-stream-toolcalls.sse), with the sizes the scenarios need.

const (
	chatPath  = "/v1/chat/completions"
	jsonSize  = 2048 // bytes of the non-streamed response body
	sseEvents = 200  // events of the streamed response
)

// requestBody is the body of request n: a chat request offering two tools,
// distinct per n so that a cassette of many interactions has as many match
// keys. stream selects the streamed variant.
func requestBody(n int, stream bool) []byte {
	return fmt.Appendf(nil, `{"messages":[{"role":"system","content":"You are a careful assistant for a fictional atlas. Use the tools when a question needs data."},`+
		`{"role":"user","content":"Question %d: can the country of Crumpet have dragons? Answer with only YES or NO"}],`+
		`"model":"gpt-4o-mini","stream":%t,"temperature":0,`+
		`"tools":[{"type":"function","function":{"name":"lookup_population","description":"Returns the current population of the specified fictional country","parameters":{"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}}},`+
		`{"type":"function","function":{"name":"can_have_dragons","description":"Returns True if the specified population can have dragons, False otherwise","parameters":{"properties":{"population":{"type":"integer"}},"required":["population"],"type":"object"}}}]}`,
		n, stream)
}

// responseHeaders are the headers of both recorded responses, as an
// upstream sends them (minus the ones a recording drops).
func responseHeaders(contentType string) http.Header {
	return http.Header{
		"Content-Type":                   {contentType},
		"Openai-Organization":            {"user-bench"},
		"Openai-Processing-Ms":           {"574"},
		"Openai-Version":                 {"2020-10-01"},
		"X-Request-Id":                   {"req_1e7dabaf1f0dba1ec89a134d3bde8476"},
		"X-Ratelimit-Remaining-Requests": {"29999"},
	}
}

// jsonResponse is a chat.completion of exactly jsonSize bytes.
func jsonResponse() []byte {
	head := `{"id":"chatcmpl-BWpGNGdPONTwxHkZVxbqctQSBDmTn","object":"chat.completion","created":1747163251,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail := `","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":92,"completion_tokens":417,"total_tokens":509,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
		`"service_tier":"default","system_fingerprint":"fp_0392822090"}`
	var b bytes.Buffer
	b.WriteString(head)
	words := strings.Fields("Crumpet is a small island nation whose population has grown slowly over the last century and whose dragons are a matter of legend rather than record")
	for i := 0; b.Len()+len(tail) < jsonSize; i++ {
		w := words[i%len(words)]
		if i > 0 {
			w = " " + w
		}
		if b.Len()+len(w)+len(tail) > jsonSize {
			w = strings.Repeat(".", jsonSize-b.Len()-len(tail))
		}
		b.WriteString(w)
	}
	b.WriteString(tail)
	return b.Bytes()
}

// sseEvent is event i of the streamed response, with id as its SSE id
// field. The record scenario puts the upstream's write time there; replay
// uses the index.
func sseEvent(i int, id int64) []byte {
	const chunk = `{"id":"chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl","object":"chat.completion.chunk","created":1782955817,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_d0469e1700","choices":[{"index":0,`
	b := make([]byte, 0, 400)
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, "\ndata: "...)
	switch {
	case i == sseEvents-1:
		b = append(b, "[DONE]"...)
	case i == 0:
		b = append(b, chunk...)
		b = append(b, `"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"C63r"}`...)
	case i == sseEvents-2:
		b = append(b, chunk...)
		b = append(b, `"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"qfQVOw"}`...)
	default:
		b = append(b, chunk...)
		b = append(b, `"delta":{"content":" token`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"UqdZk18gUR"}`...)
	}
	return append(b, "\n\n"...)
}

// sseStream is the streamed response as replay serves it: the events with
// their index as id.
func sseStream() [][]byte {
	evs := make([][]byte, sseEvents)
	for i := range evs {
		evs[i] = sseEvent(i, int64(i))
	}
	return evs
}
