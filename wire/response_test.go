package wire_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// rawCalls keeps arguments byte-exact: stream reassembly must be exact.
func rawCalls(cs []wire.ToolCall) []call {
	var out []call
	for _, c := range cs {
		out = append(out, call{c.ID, c.Name, string(c.Arguments)})
	}
	return out
}

// capturedBody returns a captured file's body; for .http files, what follows
// the headers.
func capturedBody(t testing.TB, name string) []byte {
	b := mustRead(t, name)
	if strings.HasSuffix(name, ".http") {
		_, body, ok := bytes.Cut(b, []byte("\n\n"))
		if !ok {
			t.Fatalf("%s: no blank line after the headers", name)
		}
		return body
	}
	return b
}

const anthropicThinking = "<thinking>\nThe get_weather tool is relevant for answering this question as it provides weather information for a specified location.\n\nThe tool has one required parameter:\n- location (string): The user has provided the location as \"San Francisco, CA\".\n\nNo other tools are needed as the location is fully specified. We can proceed with calling the get_weather tool.\n</thinking>"

func TestParseResponseCaptured(t *testing.T) {
	paris := []call{{"call_paris", "weather", `{"location":"Paris","unit":"celsius"}`}}
	tests := []struct {
		file    string
		kind    wire.Kind
		framing wire.Framing
		text    string
		calls   []call
		stop    string
		err     string // Response.Error
	}{
		{file: "openai-chat-toolcalls.response.json", kind: wire.KindOpenAIChat,
			calls: []call{{"call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", `{"country":"Crumpet"}`}}, stop: "tool_calls"},
		{file: "openai-chat-stream-toolcalls.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			calls: []call{{"call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`}}, stop: "tool_calls"},
		{file: "openai-chat-stream-parallel-toolcalls.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			calls: []call{{"call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", `{}`}, {"call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", `{}`}}, stop: "tool_calls"},
		{file: "openai-chat-stream-text-after-toolresult.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			text: "The capital of the UK is London.", stop: "stop"},
		{file: "openrouter-chat-stream-toolcalls-quirks.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			calls: []call{{"llm_version:0", "llm_version", `{}`}}, stop: "tool_calls"},
		{file: "openai-error-401-invalid-api-key.http", kind: wire.KindOpenAIChat,
			err: "invalid_request_error: Incorrect API key provided: sk-wrong****-key. You can find your API key at https://platform.openai.com/account/api-keys."},
		{file: "openai-error-429-rate-limit.json", kind: wire.KindOpenAIChat,
			err: "requests: Rate limit reached for gpt-4o-mini in organization org-2UNBOwAjq6LkaA8Fl347aXVc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to learn more."},
		{file: "openai-error-429-insufficient-quota.json", kind: wire.KindOpenAIResponses,
			err: "insufficient_quota: You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."},
		{file: "openai-responses-functioncall.response.json", kind: wire.KindOpenAIResponses,
			calls: []call{{"call_nJmCK7SJe3ajdYYplIbH0KgL", "multiply", `{"a":1231,"b":2331}`}}, stop: "completed"},
		{file: "openai-responses-functioncall-output.response.json", kind: wire.KindOpenAIResponses,
			text: "1231 * 2331 = 2,869,461", stop: "completed"},
		{file: "openai-responses-stream-functioncall.sse", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE,
			calls: []call{{"call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", `{"a":1231,"b":2331}`}}, stop: "completed"},
		{file: "openai-responses-stream-text-after-output.sse", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE,
			text: "1231 × 2331 = **2,869,461**", stop: "completed"},
		{file: "anthropic-messages-tooluse.response.json", kind: wire.KindAnthropicMessages,
			calls: []call{{"toolu_01SPFDdcu8vF1EsjtoTa6cYx", "get_weather", `{"location":"San Francisco, CA"}`}}, stop: "tool_use"},
		{file: "anthropic-messages-stream-tooluse.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE,
			text:  anthropicThinking,
			calls: []call{{"toolu_01DYJo37oETVsCdLTTcCWcdq", "get_weather", `{"location": "San Francisco, CA"}`}}, stop: "tool_use"},
		{file: "anthropic-messages-stream-parallel-tooluse.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE,
			calls: []call{{"toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", `{}`}, {"toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", `{}`}}, stop: "tool_use"},
		{file: "anthropic-messages-stream-error-overloaded.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE,
			err: "overloaded_error: Overloaded"},
		{file: "anthropic-error-529-overloaded.json", kind: wire.KindAnthropicMessages, err: "overloaded_error: Overloaded"},
		{file: "anthropic-error-401-authentication.http", kind: wire.KindAnthropicMessages, err: "authentication_error: invalid x-api-key"},
		{file: "anthropic-error-400-invalid-request.http", kind: wire.KindAnthropicMessages,
			err: "invalid_request_error: messages.0: Input does not match the expected shape."},
		{file: "gemini-generatecontent-functioncall.response.json", kind: wire.KindGemini,
			calls: []call{{"", "get_user_country", `{}`}}, stop: "STOP"},
		{file: "gemini-generatecontent-functioncall-thinking.response.json", kind: wire.KindGemini,
			calls: []call{{"", "now", `{}`}}, stop: "STOP"},
		{file: "gemini-streamgeneratecontent-sse-functioncall.sse", kind: wire.KindGemini, framing: wire.FramingSSE,
			calls: []call{{"", "get_country", `{}`}}, stop: "STOP"},
		{file: "gemini-streamgeneratecontent-jsonarray-functioncall.json", kind: wire.KindGemini,
			calls: []call{{"", "pelican_name_generator", `{}`}}, stop: "STOP"},
		{file: "gemini-error-400-api-key-invalid.json", kind: wire.KindGemini,
			err: "INVALID_ARGUMENT: API key not valid. Please pass a valid API key."},
		{file: "ollama-api-chat-stream-toolcalls.ndjson", kind: wire.KindOllama, framing: wire.FramingNDJSON,
			calls: []call{{"", "get_weather", `{"city":"Tokyo"}`}}, stop: "stop"},
		{file: "aimock/openai-chat-stream-toolcall.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE, calls: paris, stop: "tool_calls"},
		{file: "aimock/openai-responses-functioncall.response.json", kind: wire.KindOpenAIResponses, calls: paris, stop: "completed"},
		{file: "aimock/openai-responses-stream-functioncall.sse", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE, calls: paris, stop: "completed"},
		{file: "aimock/anthropic-messages-tooluse.response.json", kind: wire.KindAnthropicMessages, calls: paris, stop: "tool_use"},
		{file: "aimock/anthropic-messages-stream-tooluse.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE, calls: paris, stop: "tool_use"},
		{file: "aimock/gemini-functioncall.response.json", kind: wire.KindGemini, calls: paris, stop: "FUNCTION_CALL"},
		{file: "aimock/gemini-stream-functioncall.sse", kind: wire.KindGemini, framing: wire.FramingSSE, calls: paris, stop: "FUNCTION_CALL"},
		{file: "aimock/ollama-chat-stream-toolcall.ndjson", kind: wire.KindOllama, framing: wire.FramingNDJSON,
			calls: []call{{"", "weather", `{"location":"Paris","unit":"celsius"}`}}, stop: "stop"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			body := capturedBody(t, tt.file)
			r, err := wire.ParseResponse(tt.kind, tt.framing, body)
			if err != nil {
				t.Fatalf("ParseResponse: %v", err)
			}
			if r.Text != tt.text {
				t.Errorf("text = %q\nwant   %q", r.Text, tt.text)
			}
			if got := rawCalls(r.ToolCalls); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("tool calls = %+v\nwant       %+v", got, tt.calls)
			}
			if r.Stop != tt.stop || r.Error != tt.err {
				t.Errorf("stop, error = %q, %q; want %q, %q", r.Stop, r.Error, tt.stop, tt.err)
			}
		})
	}
	for _, f := range capturedFiles(t, "*.response.json", "*.sse", "*.ndjson", "*error*.json", "*.http", "*jsonarray-functioncall.json", "*thinking.response.json") {
		if !seen[f] {
			t.Errorf("captured file %s has no ParseResponse test", f)
		}
	}
}

func TestParseResponseShapes(t *testing.T) {
	tests := []struct {
		name    string
		kind    wire.Kind
		framing wire.Framing
		body    string
		want    wire.Response
	}{
		{
			name: "openai chunk error mid-stream", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n" +
				"data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n",
			want: wire.Response{Text: "Hel", Error: "server_error: The server had an error"},
		},
		{
			name: "openai other choices ignored", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			body: "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"}},{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\n\ndata: [DONE]\n\n",
			want: wire.Response{Text: "A"},
		},
		{
			name: "openai parallel calls interleaved", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\""}},{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"y\":2}"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n",
			want: wire.Response{ToolCalls: []wire.ToolCall{
				{ID: "a", Name: "f", Arguments: []byte(`{"x":1}`)},
				{ID: "b", Name: "g", Arguments: []byte(`{"y":2}`)},
			}, Stop: "tool_calls", Finish: wire.FinishToolCalls},
		},
		{
			name: "responses error event", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE,
			body: "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null,\"sequence_number\":3}\n\n",
			want: wire.Response{Error: "server_error: boom"},
		},
		{
			name: "responses completed only", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE,
			body: `data: {"type":"response.completed","response":{"object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}}` + "\n\n",
			want: wire.Response{Text: "hi", Stop: "completed", Finish: wire.FinishStop},
		},
		{
			name: "responses incomplete", kind: wire.KindOpenAIResponses,
			body: `{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`,
			want: wire.Response{Stop: "max_output_tokens", Finish: wire.FinishLength},
		},
		{
			name: "anthropic text and thinking", kind: wire.KindAnthropicMessages,
			body: `{"type":"message","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3}}`,
			want: wire.Response{Text: "Hi", Reasoning: "hmm", Stop: "end_turn", Finish: wire.FinishStop, Usage: wire.Usage{Input: 7, Output: 3}},
		},
		{
			name: "gemini thought apart, text joined over events", kind: wire.KindGemini, framing: wire.FramingSSE,
			body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"think\",\"thought\":true},{\"text\":\"Hel\"}]}}],\"usageMetadata\":{\"promptTokenCount\":5}}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":5,\"candidatesTokenCount\":2,\"thoughtsTokenCount\":4}}\r\n\r\n",
			want: wire.Response{Text: "Hello", Reasoning: "think", Stop: "STOP", Finish: wire.FinishStop, Usage: wire.Usage{Input: 5, Output: 6, Reasoning: 4}},
		},
		{
			name: "gemini blocked prompt", kind: wire.KindGemini,
			body: `{"promptFeedback":{"blockReason":"SAFETY"}}`,
			want: wire.Response{Stop: "SAFETY", Finish: "SAFETY"},
		},
		{
			name: "ollama ids and generate text", kind: wire.KindOllama, framing: wire.FramingNDJSON,
			body: `{"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","function":{"index":0,"name":"w","arguments":{"a":1}}}]},"done":false}` + "\n" +
				`{"response":"ok","done":true,"done_reason":"stop","prompt_eval_count":9,"eval_count":4}` + "\n",
			want: wire.Response{Text: "ok", ToolCalls: []wire.ToolCall{{ID: "call_x1", Name: "w", Arguments: []byte(`{"a":1}`)}}, Stop: "stop",
				Finish: wire.FinishToolCalls, Usage: wire.Usage{Input: 9, Output: 4}},
		},
		{
			name: "ollama ndjson served without content type", kind: wire.KindOllama,
			body: "{\"message\":{\"content\":\"a\"}}\n{\"message\":{\"content\":\"b\"},\"done\":true}\n",
			want: wire.Response{Text: "ab"},
		},
		{
			name: "ollama error", kind: wire.KindOllama, body: `{"error":"model 'x' not found"}`,
			want: wire.Response{Error: "model 'x' not found"},
		},
		{
			name: "embeddings", kind: wire.KindEmbeddings, body: `{"object":"list","data":[{"embedding":[0.1]}]}`,
		},
		{
			name: "generic not json", kind: wire.KindGeneric, body: "<html>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.ParseResponse(tt.kind, tt.framing, []byte(tt.body))
			if err != nil {
				t.Fatalf("ParseResponse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseResponseMalformed(t *testing.T) {
	stream := string(mustRead(t, "openai-chat-stream-toolcalls.sse"))
	anth := string(mustRead(t, "anthropic-messages-stream-tooluse.sse"))
	array := string(mustRead(t, "gemini-streamgeneratecontent-jsonarray-functioncall.json"))
	whole := string(mustRead(t, "openai-responses-functioncall.response.json"))
	tests := []struct {
		name      string
		kind      wire.Kind
		framing   wire.Framing
		body      string
		wantInErr string
		partial   string // Text read before the fault
	}{
		{"truncated json", wire.KindOpenAIResponses, wire.FramingNone, whole[:len(whole)/2], "byte", ""},
		{"not json", wire.KindOpenAIChat, wire.FramingNone, "<html>oops</html>", "byte 1", ""},
		{"empty", wire.KindAnthropicMessages, wire.FramingNone, "", "empty body", ""},
		{"embeddings not json", wire.KindEmbeddings, wire.FramingNone, "nope", "byte 2", ""},
		{"truncated stream", wire.KindOpenAIChat, wire.FramingSSE, stream[:len(stream)/2], "event 3: byte 362: unexpected end of JSON input", ""},
		{"truncated anthropic", wire.KindAnthropicMessages, wire.FramingSSE, anth[:len(anth)-10], "event 84", anthropicThinking},
		{"non-json event", wire.KindAnthropicMessages, wire.FramingSSE, "event: ping\ndata: pong\n\n", "event 0", ""},
		{"truncated array", wire.KindGemini, wire.FramingNone, array[:len(array)-10], "unexpected end", ""},
		{"truncated ndjson", wire.KindOllama, wire.FramingNDJSON, "{\"message\":{\"content\":\"a\"}}\n{\"message\":", "line 1", "a"},
		{"gemini deep", wire.KindGemini, wire.FramingSSE, "data: " + strings.Repeat("[", 50000) + "\n\n", "nesting", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := wire.ParseResponse(tt.kind, tt.framing, []byte(tt.body))
			if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Fatalf("err = %v, want ErrMalformed containing %q", err, tt.wantInErr)
			}
			if r.Text != tt.partial {
				t.Errorf("partial text = %q, want %q", r.Text, tt.partial)
			}
		})
	}
	if _, err := wire.ParseResponse("future-kind", wire.FramingNone, []byte("{}")); !errors.Is(err, wire.ErrUnsupported) {
		t.Errorf("unknown kind: err = %v, want ErrUnsupported", err)
	}
}
