package fake_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
)

// withStream returns a captured request body with "stream" set to stream.
func withStream(t testing.TB, name string, stream bool) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fake.Captured(name), &m); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	m["stream"] = stream
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encode %s: %v", name, err)
	}
	return string(b)
}

// capturedSSE parses a captured SSE file.
func capturedSSE(t testing.TB, name, sep string) []sseEvent {
	t.Helper()
	return parseSSE(t, fake.Captured(name), sep)
}

func TestOpenAIChatStream(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris))
	url := u.URL() + "/v1/chat/completions"

	t.Run("tool call", func(t *testing.T) {
		ex := mustPost(t, url, string(fake.Captured("openai-chat-stream-toolcalls.request.json")))
		if ct := ex.header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
			t.Errorf("Content-Type = %q", ct)
		}
		got := parseSSE(t, ex.body, "\n\n")
		want := capturedSSE(t, "openai-chat-stream-toolcalls.sse", "\n\n")
		if last := got[len(got)-1].raw; last != "data: [DONE]\n\n" {
			t.Fatalf("last event %q, want data: [DONE]", last)
		}
		for i, ev := range got[:len(got)-1] {
			if ev.name != "" {
				t.Errorf("event %d has an event: line %q; OpenAI sends data only", i, ev.name)
			}
			validJSON(t, "chunk", ev.data)
		}
		n := len(got)
		sameShape(t, "first chunk", got[0].data, want[0].data)
		sameShape(t, "argument chunk", got[1].data, want[1].data)
		sameShape(t, "finish chunk", got[n-3].data, want[len(want)-3].data)
		sameShape(t, "usage chunk", got[n-2].data, want[len(want)-2].data)

		var args strings.Builder
		for i, ev := range got[:n-2] {
			var c struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							ID       string
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
				}
			}
			_ = json.Unmarshal([]byte(ev.data), &c)
			for _, tc := range c.Choices[0].Delta.ToolCalls {
				if (tc.ID != "") != (i == 0) || (tc.Function.Name != "") != (i == 0) {
					t.Errorf("chunk %d: id %q name %q; they belong on the first delta only", i, tc.ID, tc.Function.Name)
				}
				if i == 0 && (tc.ID != paris.CallID || tc.Function.Name != paris.Tool) {
					t.Errorf("first delta: id %q name %q, want %q %q", tc.ID, tc.Function.Name, paris.CallID, paris.Tool)
				}
				args.WriteString(tc.Function.Arguments)
			}
		}
		if args.String() != paris.Args {
			t.Errorf("arguments reassemble to %q, want %q", args.String(), paris.Args)
		}
		if !strings.Contains(got[n-2].data, `"choices":[]`) {
			t.Errorf("usage chunk %s lacks \"choices\":[]", got[n-2].data)
		}
	})

	t.Run("answer", func(t *testing.T) {
		ex := mustPost(t, url, string(fake.Captured("openai-chat-stream-toolresult.request.json")))
		got := parseSSE(t, ex.body, "\n\n")
		want := capturedSSE(t, "openai-chat-stream-text-after-toolresult.sse", "\n\n")
		n := len(got)
		sameShape(t, "first chunk", got[0].data, want[0].data)
		sameShape(t, "content chunk", got[1].data, want[1].data)
		sameShape(t, "finish chunk", got[n-3].data, want[len(want)-3].data)
		sameShape(t, "usage chunk", got[n-2].data, want[len(want)-2].data)
		var text strings.Builder
		for _, ev := range got[:n-1] {
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Fatalf("chunk %s: %v", ev.data, err)
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
			}
		}
		if text.String() != paris.Answer {
			t.Errorf("content reassembles to %q, want %q", text.String(), paris.Answer)
		}
	})

	t.Run("without include_usage", func(t *testing.T) {
		ex := mustPost(t, url, `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Paris?"}]}`)
		for _, ev := range parseSSE(t, ex.body, "\n\n") {
			if strings.Contains(ev.data, `"usage"`) || strings.Contains(ev.data, `"choices":[]`) {
				t.Errorf("chunk %s carries usage though include_usage was not asked for", ev.data)
			}
		}
	})

	t.Run("without obfuscation", func(t *testing.T) {
		ex := mustPost(t, url, `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_obfuscation":false},"messages":[{"role":"user","content":"Paris?"}]}`)
		if strings.Contains(string(ex.body), "obfuscation") {
			t.Errorf("obfuscation sent though include_obfuscation is false")
		}
	})
}

func TestOpenAIChatJSON(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris))
	url := u.URL() + "/v1/chat/completions"
	want := string(fake.Captured("openai-chat-toolcalls.response.json"))

	ex := mustPost(t, url, string(fake.Captured("openai-chat-toolcalls.request.json")))
	if ex.status != 200 || ex.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d Content-Type %q", ex.status, ex.header.Get("Content-Type"))
	}
	if ex.header.Get("X-Request-Id") == "" || ex.header.Get("X-Ratelimit-Limit-Requests") == "" {
		t.Errorf("captured OpenAI headers missing: %v", ex.header)
	}
	if ex.header.Get("Content-Encoding") != "" {
		t.Errorf("Content-Encoding %q on a plain body", ex.header.Get("Content-Encoding"))
	}
	sameShape(t, "tool call completion", string(ex.body), want)
	if !strings.HasPrefix(string(ex.body), "{\n  \"id\": \"chatcmpl-") || !strings.HasSuffix(string(ex.body), "}\n") {
		t.Errorf("body is not pretty-printed like the capture: %.40q…", ex.body)
	}
	if !strings.Contains(string(ex.body), `"arguments": "{\"location\":\"Paris\",\"unit\":\"celsius\"}"`) {
		t.Errorf("arguments not sent verbatim:\n%s", ex.body)
	}

	ex = mustPost(t, url, string(fake.Captured("openai-chat-toolresult.request.json")))
	sameShape(t, "answer completion", string(ex.body), want, ".choices[].message")
	var c struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal(ex.body, &c); err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content != paris.Answer || c.Choices[0].FinishReason != "stop" {
		t.Errorf("answer %q finish %q", c.Choices[0].Message.Content, c.Choices[0].FinishReason)
	}
}

func TestOpenAIResponses(t *testing.T) {
	u := fake.New(t, fake.OpenAIResponses(paris))
	url := u.URL() + "/v1/responses"
	skip := []string{".response.tools", ".tools"}

	check := func(t *testing.T, body []byte, capture string) []sseEvent {
		got := parseSSE(t, body, "\n\n")
		want := map[string]string{}
		for _, ev := range capturedSSE(t, capture, "\n\n") {
			want[ev.name] = ev.data
		}
		for i, ev := range got {
			validJSON(t, ev.name, ev.data)
			if typ := field(t, ev.data, "type"); typ != ev.name {
				t.Errorf("event %d: event %q carries type %q", i, ev.name, typ)
			}
			var seq struct {
				N *int `json:"sequence_number"`
			}
			_ = json.Unmarshal([]byte(ev.data), &seq)
			if seq.N == nil || *seq.N != i {
				t.Errorf("event %d (%s): sequence_number %v", i, ev.name, seq.N)
			}
			w, ok := want[ev.name]
			if !ok {
				t.Errorf("event %s is not in the capture", ev.name)
				continue
			}
			sameShape(t, ev.name, ev.data, w, skip...)
		}
		if countDistinct(got) != len(want) {
			t.Errorf("the stream sends %d kinds of event, the capture %d", countDistinct(got), len(want))
		}
		return got
	}

	t.Run("function call stream", func(t *testing.T) {
		ex := mustPost(t, url, withStream(t, "openai-responses-functioncall.request.json", true))
		got := check(t, ex.body, "openai-responses-stream-functioncall.sse")
		var args strings.Builder
		for _, ev := range got {
			if ev.name == "response.function_call_arguments.delta" {
				args.WriteString(field(t, ev.data, "delta"))
			}
		}
		if args.String() != paris.Args {
			t.Errorf("deltas give %q, want %q", args.String(), paris.Args)
		}
		last := got[len(got)-1]
		if last.name != "response.completed" || !strings.Contains(last.data, `"call_id":"call_paris"`) {
			t.Errorf("last event %s does not complete with the call", last.name)
		}
	})

	t.Run("answer stream", func(t *testing.T) {
		ex := mustPost(t, url, withStream(t, "openai-responses-functioncall-output.request.json", true))
		got := check(t, ex.body, "openai-responses-stream-text-after-output.sse")
		var text strings.Builder
		for _, ev := range got {
			if ev.name == "response.output_text.delta" {
				text.WriteString(field(t, ev.data, "delta"))
			}
		}
		if text.String() != paris.Answer {
			t.Errorf("deltas give %q, want %q", text.String(), paris.Answer)
		}
	})

	t.Run("json", func(t *testing.T) {
		ex := mustPost(t, url, string(fake.Captured("openai-responses-functioncall.request.json")))
		sameShape(t, "function call response", string(ex.body), string(fake.Captured("openai-responses-functioncall.response.json")), skip...)
		ex = mustPost(t, url, string(fake.Captured("openai-responses-functioncall-output.request.json")))
		sameShape(t, "answer response", string(ex.body), string(fake.Captured("openai-responses-functioncall-output.response.json")), skip...)
		if !strings.Contains(string(ex.body), `"text": "It is 21 °C and sunny in Paris."`) {
			t.Errorf("answer missing:\n%s", ex.body)
		}
		if !strings.Contains(string(ex.body), `"name": "multiply"`) {
			t.Errorf("request tools not echoed:\n%s", ex.body)
		}
	})
}

func countDistinct(evs []sseEvent) int {
	seen := map[string]bool{}
	for _, ev := range evs {
		seen[ev.name] = true
	}
	return len(seen)
}

var padded = regexp.MustCompile(`\S {1,}}$`)

func TestAnthropicMessages(t *testing.T) {
	u := fake.New(t, fake.AnthropicMessages(paris))
	url := u.URL() + "/v1/messages"
	recent := capturedSSE(t, "anthropic-messages-stream-parallel-tooluse.sse", "\n\n")
	older := capturedSSE(t, "anthropic-messages-stream-tooluse.sse", "\n\n")

	names := func(evs []sseEvent) string {
		var out []string
		for _, ev := range evs {
			if len(out) == 0 || out[len(out)-1] != ev.name {
				out = append(out, ev.name)
			}
		}
		return strings.Join(out, " ")
	}
	common := func(t *testing.T, got []sseEvent) {
		t.Helper()
		pads := 0
		for _, ev := range got {
			validJSON(t, ev.name, ev.data)
			if typ := field(t, ev.data, "type"); typ != ev.name {
				t.Errorf("event %q carries type %q", ev.name, typ)
			}
			if padded.MatchString(ev.data) {
				pads++
			}
		}
		if pads == 0 {
			t.Errorf("no event is padded with spaces before its closing brace")
		}
		if got[2].raw != "event: ping\ndata: {\"type\": \"ping\"}\n\n" {
			t.Errorf("third event %q, want the ping", got[2].raw)
		}
	}

	t.Run("tool use stream", func(t *testing.T) {
		ex := mustPost(t, url, withStream(t, "anthropic-messages-tooluse.request.json", true))
		if ct := ex.header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
			t.Errorf("Content-Type = %q", ct)
		}
		got := parseSSE(t, ex.body, "\n\n")
		common(t, got)
		// The capture makes two calls; one call has the same events but one
		// block fewer.
		if n, w := names(got), "message_start content_block_start ping content_block_delta content_block_stop message_delta message_stop"; n != w {
			t.Errorf("event order\n got: %s\nwant: %s", n, w)
		}
		n := len(got)
		sameShape(t, "message_start", got[0].data, recent[0].data)
		sameShape(t, "content_block_start", got[1].data, recent[1].data)
		sameShape(t, "message_delta", got[n-2].data, recent[len(recent)-2].data)
		sameShape(t, "message_stop", got[n-1].data, recent[len(recent)-1].data)
		var args strings.Builder
		for i, ev := range got[3 : n-3] {
			var d struct {
				Delta struct {
					Type        string
					PartialJSON *string `json:"partial_json"`
				}
			}
			_ = json.Unmarshal([]byte(ev.data), &d)
			if d.Delta.Type != "input_json_delta" || d.Delta.PartialJSON == nil {
				t.Fatalf("delta %s", ev.data)
			}
			if i == 0 && *d.Delta.PartialJSON != "" {
				t.Errorf("first partial_json %q, want empty", *d.Delta.PartialJSON)
			}
			args.WriteString(*d.Delta.PartialJSON)
		}
		if args.String() != paris.Args {
			t.Errorf("partial_json gives %q, want %q", args.String(), paris.Args)
		}
	})

	t.Run("answer stream", func(t *testing.T) {
		ex := mustPost(t, url, string(fake.Captured("anthropic-messages-toolresult.request.json")))
		got := parseSSE(t, ex.body, "\n\n")
		common(t, got)
		sameShape(t, "message_start", got[0].data, recent[0].data)
		sameShape(t, "text block start", got[1].data, older[1].data)
		sameShape(t, "text delta", got[3].data, older[3].data)
		var text strings.Builder
		for _, ev := range got[3 : len(got)-3] {
			var d struct{ Delta struct{ Text string } }
			_ = json.Unmarshal([]byte(ev.data), &d)
			text.WriteString(d.Delta.Text)
		}
		if text.String() != paris.Answer {
			t.Errorf("text deltas give %q, want %q", text.String(), paris.Answer)
		}
		if !strings.Contains(got[len(got)-2].data, `"stop_reason":"end_turn"`) {
			t.Errorf("message_delta %s does not end the turn", got[len(got)-2].data)
		}
	})

	t.Run("json", func(t *testing.T) {
		want := string(fake.Captured("anthropic-messages-tooluse.response.json"))
		ex := mustPost(t, url, string(fake.Captured("anthropic-messages-tooluse.request.json")))
		sameShape(t, "tool use message", string(ex.body), want, ".content[].input")
		if ex.header.Get("Request-Id") == "" || ex.header.Get("Anthropic-Ratelimit-Requests-Limit") == "" {
			t.Errorf("captured Anthropic headers missing: %v", ex.header)
		}
		ex = mustPost(t, url, string(fake.Captured("anthropic-messages-toolresult-blocks.request.json")))
		if !strings.Contains(string(ex.body), `"content":[{"type":"text","text":"It is 21 °C and sunny in Paris."}],"stop_reason":"end_turn"`) {
			t.Errorf("answer message %s", ex.body)
		}
		sameShape(t, "text message", string(ex.body), want, ".content")
	})
}

func TestGemini(t *testing.T) {
	u := fake.New(t, fake.Gemini(paris))
	base := u.URL() + "/v1beta/models/gemini-2.5-flash"
	call := string(fake.Captured("gemini-generatecontent-functioncall.request.json"))
	answer := string(fake.Captured("gemini-generatecontent-functionresponse.request.json"))
	snake := string(fake.Captured("gemini-streamgeneratecontent-jsonarray-functionresponse.request.json"))
	skip := ".candidates[].content.parts[].functionCall.args."

	t.Run("sse function call", func(t *testing.T) {
		ex := mustPost(t, base+":streamGenerateContent?alt=sse", call)
		if ct := ex.header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type = %q", ct)
		}
		got := parseSSE(t, ex.body, "\r\n\r\n")
		want := capturedSSE(t, "gemini-streamgeneratecontent-sse-functioncall.sse", "\r\n\r\n")
		if len(got) != len(want) {
			t.Fatalf("%d events, capture has %d", len(got), len(want))
		}
		for i := range got {
			validJSON(t, "event", got[i].data)
			sameShape(t, "event", got[i].data, want[i].data, skip)
		}
		if !strings.HasPrefix(got[0].data, `{"candidates": [{"content": {"parts": [{"functionCall": {"name": "weather","args": {"location": "Paris","unit": "celsius"}},"thoughtSignature": "`) {
			t.Errorf("event not in Google's spacing: %.120s", got[0].data)
		}
		if strings.Contains(got[0].data, `"id"`) {
			t.Errorf("functionCall carries an id; the Gemini API sends none")
		}
		if field(t, got[0].data, "modelVersion") != "gemini-2.5-flash" {
			t.Errorf("modelVersion not taken from the path: %s", got[0].data)
		}
	})

	for name, body := range map[string]string{"camelCase": answer, "snake_case": snake} {
		t.Run("sse answer "+name, func(t *testing.T) {
			ex := mustPost(t, base+":streamGenerateContent?alt=sse&key=k", body)
			got := parseSSE(t, ex.body, "\r\n\r\n")
			var text strings.Builder
			for i, ev := range got {
				var r struct {
					Candidates []struct {
						Content      struct{ Parts []struct{ Text string } }
						FinishReason string
					}
				}
				if err := json.Unmarshal([]byte(ev.data), &r); err != nil {
					t.Fatal(err)
				}
				text.WriteString(r.Candidates[0].Content.Parts[0].Text)
				if last := i == len(got)-1; (r.Candidates[0].FinishReason == "STOP") != last {
					t.Errorf("event %d finishReason %q", i, r.Candidates[0].FinishReason)
				}
			}
			if text.String() != paris.Answer {
				t.Errorf("text parts give %q, want %q", text.String(), paris.Answer)
			}
		})
	}

	t.Run("generateContent", func(t *testing.T) {
		ex := mustPost(t, base+":generateContent", call)
		if ct := ex.header.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
			t.Errorf("Content-Type = %q", ct)
		}
		validJSON(t, "response", string(ex.body))
		if !strings.Contains(string(ex.body), "\"functionCall\": {\n              \"name\": \"weather\",") {
			t.Errorf("no pretty functionCall in\n%s", ex.body)
		}
		ex = mustPost(t, base+":generateContent", answer)
		if !strings.Contains(string(ex.body), `"text": "It is 21 °C and sunny in Paris."`) {
			t.Errorf("no answer in\n%s", ex.body)
		}
	})

	t.Run("json array stream", func(t *testing.T) {
		ex := mustPost(t, base+":streamGenerateContent", call)
		var chunks []json.RawMessage
		if err := json.Unmarshal(ex.body, &chunks); err != nil {
			t.Fatalf("not one JSON array: %v\n%s", err, ex.body)
		}
		if len(chunks) != 2 || !strings.Contains(string(ex.body), "}\n,\r\n{") {
			t.Errorf("%d chunks, or no captured separator", len(chunks))
		}
	})
}

func TestOllama(t *testing.T) {
	u := fake.New(t, fake.Ollama(paris))
	url := u.URL() + "/api/chat"
	want := ndjsonLines(t, fake.Captured("ollama-api-chat-stream-toolcalls.ndjson"))

	ex := mustPost(t, url, string(fake.Captured("ollama-api-chat-stream-toolcalls.request.json")))
	if ct := ex.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type = %q", ct)
	}
	got := ndjsonLines(t, ex.body)
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(got), ex.body)
	}
	sameShape(t, "tool call line", got[0], want[0], ".message.tool_calls")
	sameShape(t, "done line", got[1], want[1])
	if !strings.Contains(got[0], `"tool_calls":[{"id":"call_paris","function":{"index":0,"name":"weather","arguments":{"location":"Paris","unit":"celsius"}}}]`) {
		t.Errorf("tool call line %s", got[0])
	}

	// Ollama streams unless told not to.
	ex = mustPost(t, url, `{"model":"llama3.2","messages":[{"role":"user","content":"Paris?"},{"role":"tool","content":"21"}]}`)
	lines := ndjsonLines(t, ex.body)
	var text strings.Builder
	for _, l := range lines {
		var m struct {
			Message struct{ Content string }
			Done    bool
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		text.WriteString(m.Message.Content)
	}
	if text.String() != paris.Answer {
		t.Errorf("lines give %q, want %q", text.String(), paris.Answer)
	}

	ex = mustPost(t, url, string(fake.Captured("ollama-api-chat-toolresult.request.json")))
	if ct := ex.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	sameShape(t, "answer", string(ex.body), want[1], ".message")
	if !strings.Contains(string(ex.body), `"message":{"role":"assistant","content":"It is 21 °C and sunny in Paris."},"done_reason":"stop","done":true`) {
		t.Errorf("answer %s", ex.body)
	}
}

func TestScriptsAreDeterministic(t *testing.T) {
	tests := []struct {
		script func(fake.ToolLoop) fake.Script
		path   string
		body   string
	}{
		{fake.OpenAIChat, "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`},
		{fake.OpenAIResponses, "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`},
		{fake.AnthropicMessages, "/v1/messages", `{"model":"m","stream":true,"messages":[]}`},
		{fake.Gemini, "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[]}`},
		{fake.Ollama, "/api/chat", `{"model":"m","messages":[]}`},
	}
	for _, tt := range tests {
		a := mustPost(t, fake.New(t, tt.script(paris)).URL()+tt.path, tt.body)
		b := mustPost(t, fake.New(t, tt.script(paris)).URL()+tt.path, tt.body)
		if string(a.body) != string(b.body) {
			t.Errorf("%s: two upstreams answer differently", tt.path)
		}
		if a.header.Get("Date") == "" || a.header.Get("Date") != b.header.Get("Date") {
			t.Errorf("%s: Date %q then %q", tt.path, a.header.Get("Date"), b.header.Get("Date"))
		}
		other := paris
		other.Answer = "Something else."
		c := mustPost(t, fake.New(t, tt.script(other)).URL()+tt.path, tt.body)
		if string(a.body) == string(c.body) {
			t.Errorf("%s: another loop gives the same bytes", tt.path)
		}
	}
}

func TestScriptsRejectWrongRoutesAndBadJSON(t *testing.T) {
	tests := []struct {
		script fake.Script
		path   string
		want   string
	}{
		{fake.OpenAIChat(paris), "/v1/chat/completions", `"type": "invalid_request_error"`},
		{fake.OpenAIResponses(paris), "/v1/responses", `"type": "invalid_request_error"`},
		{fake.AnthropicMessages(paris), "/v1/messages", `{"type":"error","error":{"type":"invalid_request_error"`},
		{fake.Gemini(paris), "/v1beta/models/m:generateContent", `"status": "INVALID_ARGUMENT"`},
		{fake.Ollama(paris), "/api/chat", `{"error":"`},
	}
	for _, tt := range tests {
		u := fake.New(t, tt.script)
		ex := mustPost(t, u.URL()+tt.path, `{"model":`)
		if ex.status != http.StatusBadRequest || !strings.Contains(string(ex.body), tt.want) {
			t.Errorf("%s with bad JSON: %d %s", tt.path, ex.status, ex.body)
		}
		ex = mustPost(t, u.URL()+"/v1/nowhere", `{}`)
		if ex.status != http.StatusNotFound {
			t.Errorf("%s script on /v1/nowhere: status %d, want 404", tt.path, ex.status)
		}
	}
}

func TestToolLoopDefaultsAndChecks(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(fake.ToolLoop{Tool: "current_time"}))
	ex := mustPost(t, u.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"time?"}]}`)
	if !strings.Contains(string(ex.body), `"id": "call_current_time"`) || !strings.Contains(string(ex.body), `"arguments": "{}"`) {
		t.Errorf("defaults not applied:\n%s", ex.body)
	}
	for _, bad := range []fake.ToolLoop{{}, {Tool: "x", Args: "[1]"}, {Tool: "x", Args: "{"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ToolLoop %+v accepted", bad)
				}
			}()
			fake.OpenAIChat(bad)
		}()
	}
}

// Anthropic on Vertex AI: the model is the path's, :rawPredict answers
// whole and :streamRawPredict streams; a Vertex path of another publisher,
// or another method, is not the Messages API.
func TestAnthropicMessagesOnVertex(t *testing.T) {
	u := fake.New(t, fake.AnthropicMessages(paris))
	const models = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/"
	body := `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"Weather?"}]}`
	ex := mustPost(t, u.URL()+models+"claude-3-5-haiku@20241022:rawPredict", body)
	if ex.status != http.StatusOK || field(t, string(ex.body), "model") != "claude-3-5-haiku@20241022" || !strings.Contains(string(ex.body), `"type":"tool_use"`) {
		t.Errorf(":rawPredict: %d %s", ex.status, ex.body)
	}
	streamed := strings.Replace(body, `{"anthropic_version"`, `{"stream":true,"anthropic_version"`, 1)
	ex = mustPost(t, u.URL()+models+"claude-3-5-haiku@20241022:streamRawPredict", streamed)
	if ex.status != http.StatusOK || !strings.HasPrefix(string(ex.body), "event: message_start") {
		t.Errorf(":streamRawPredict: %d %.80s", ex.status, ex.body)
	}
	for _, p := range []string{"/v1/projects/p/locations/l/publishers/google/models/g:rawPredict", models + "m:predict"} {
		if ex := mustPost(t, u.URL()+p, body); ex.status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, ex.status)
		}
	}
}
