package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The bench speaks OpenAI Chat Completions: the shapes below follow the
// captured traffic in internal/fake/captured (openai-chat-toolcalls.*,
// openai-chat-stream-toolcalls.sse), with the sizes the scenarios need.
// The answers carry exactly the fields aimock renders from a fixture, in
// its order (OpenAI's, minus annotations, the token details and
// service_tier), so that every peer can serve the very same bytes.

const (
	chatPath  = "/v1/chat/completions"
	jsonSize  = 2048 // bytes of the non-streamed response body
	sseEvents = 200  // events of the streamed response
	// sseChunk is the length of the content of each streamed content
	// event: aimock splits a fixture's text into chunks of this many
	// characters (its --chunk-size).
	sseChunk = 11
)

// requestBody is the body of request n: a chat request offering two tools,
// distinct per n so that a cassette of many interactions has as many match
// keys. stream selects the streamed variant, whose question also reads
// differently, so that a peer matching on the user's text alone (aimock)
// tells the two apart.
func requestBody(n int, stream bool) []byte {
	q := fmt.Sprintf("Question %d:", n)
	if stream {
		q = fmt.Sprintf("Question %d, streamed:", n)
	}
	return fmt.Appendf(nil, `{"messages":[{"role":"system","content":"You are a careful assistant for a fictional atlas. Use the tools when a question needs data."},`+
		`{"role":"user","content":"%s can the country of Crumpet have dragons? Answer with only YES or NO"}],`+
		`"model":"gpt-4o-mini","stream":%t,"temperature":0,`+
		`"tools":[{"type":"function","function":{"name":"lookup_population","description":"Returns the current population of the specified fictional country","parameters":{"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}}},`+
		`{"type":"function","function":{"name":"can_have_dragons","description":"Returns True if the specified population can have dragons, False otherwise","parameters":{"properties":{"population":{"type":"integer"}},"required":["population"],"type":"object"}}}]}`,
		q, stream)
}

// userText is the user message of request n, which aimock's fixtures match
// on (a substring of it).
func userText(n int, stream bool) string {
	if stream {
		return fmt.Sprintf("Question %d, streamed: can", n)
	}
	return fmt.Sprintf("Question %d: can", n)
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

// The envelope of both answers.
const (
	chatAnswerID      = "chatcmpl-BWpGNGdPONTwxHkZVxbqctQSBDmTn"
	answerCreatedText = "1747163251"
	answerModel       = "gpt-4o-mini-2024-07-18"
	answerFingerprint = "fp_0392822090"
)

// jsonResponse is a chat.completion of exactly jsonSize bytes.
func jsonResponse() []byte { return jsonAnswer(chatAnswerID) }

// scaleAnswer is the answer to request n of the scale scenario: the 2 KB
// JSON with an id of the same length naming n, so that no two recorded
// answers are the same bytes.
func scaleAnswer(n int) []byte {
	return jsonAnswer(fmt.Sprintf("%s%010d", chatAnswerID[:len(chatAnswerID)-10], n))
}

// jsonContent is the assistant's text in the 2 KB JSON answer with the
// given id: as long as makes the body jsonSize bytes.
func jsonContent(id string) string {
	head, tail := jsonEnvelope(id)
	var b strings.Builder
	words := strings.Fields("Crumpet is a small island nation whose population has grown slowly over the last century and whose dragons are a matter of legend rather than record")
	room := jsonSize - len(head) - len(tail)
	for i := 0; b.Len() < room; i++ {
		w := words[i%len(words)]
		if i > 0 {
			w = " " + w
		}
		if b.Len()+len(w) > room {
			w = strings.Repeat(".", room-b.Len())
		}
		b.WriteString(w)
	}
	return b.String()
}

func jsonEnvelope(id string) (head, tail string) {
	head = `{"id":"` + id + `","object":"chat.completion","created":` + answerCreatedText + `,"model":"` + answerModel + `",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail = `","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":92,"completion_tokens":417,"total_tokens":509},"system_fingerprint":"` + answerFingerprint + `"}`
	return head, tail
}

func jsonAnswer(id string) []byte {
	head, tail := jsonEnvelope(id)
	return []byte(head + jsonContent(id) + tail)
}

// sseContent is the text of the streamed answer: one piece of sseChunk
// characters per content event.
func sseContent() string {
	var b strings.Builder
	for i := 1; i < sseEvents-2; i++ {
		fmt.Fprintf(&b, " token %04d", i)
	}
	return b.String()
}

// sseEvent is event i of the streamed response: the role, sseEvents-3
// content pieces, the finish reason, then [DONE]. id, when ≥ 0, is written
// as the event's SSE id field: the record scenario puts the upstream's write
// time there. The replayed stream has none.
func sseEvent(i int, id int64) []byte {
	const chunk = `{"id":"` + chatAnswerID + `","object":"chat.completion.chunk","created":` + answerCreatedText + `,"model":"` + answerModel + `","choices":[{"index":0,`
	const end = `,"system_fingerprint":"` + answerFingerprint + `"}`
	b := make([]byte, 0, 300)
	if id >= 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	switch {
	case i == sseEvents-1:
		b = append(b, "[DONE]"...)
	case i == 0:
		b = append(b, chunk...)
		b = append(b, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		b = append(b, end...)
	case i == sseEvents-2:
		b = append(b, chunk...)
		b = append(b, `"delta":{},"logprobs":null,"finish_reason":"stop"}]`...)
		b = append(b, end...)
	default:
		b = append(b, chunk...)
		b = fmt.Appendf(b, `"delta":{"content":" token %04d"},"logprobs":null,"finish_reason":null}]`, i)
		b = append(b, end...)
	}
	return append(b, "\n\n"...)
}

// sseStream is the streamed response as replay serves it.
func sseStream() [][]byte {
	evs := make([][]byte, sseEvents)
	for i := range evs {
		evs[i] = sseEvent(i, -1)
	}
	return evs
}
