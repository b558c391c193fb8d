package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

// compact returns the compact form of JSON text, or the text itself if it is
// not JSON.
func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// call and result are ToolCall and ToolResult with compacted JSON, for
// comparing.
type call struct{ ID, Name, Args string }

type result struct {
	CallID, Name, Content string
	IsError               bool
	Path                  string
}

func calls(cs []wire.ToolCall) []call {
	var out []call
	for _, c := range cs {
		out = append(out, call{c.ID, c.Name, compact(c.Arguments)})
	}
	return out
}

func results(rs []wire.ToolResult) []result {
	var out []result
	for _, r := range rs {
		out = append(out, result{r.CallID, r.Name, compact(r.Content), r.IsError, r.Path})
	}
	return out
}

func roles(ts []wire.Turn) []string {
	var out []string
	for i, t := range ts {
		if t.Index != i {
			out = append(out, "bad index")
		}
		out = append(out, t.Role+"@"+t.Path)
	}
	return out
}

func TestParseRequestCaptured(t *testing.T) {
	tests := []struct {
		file    string
		kind    wire.Kind
		path    string
		model   string
		stream  bool
		turns   []string
		tools   []string
		calls   []call
		results []result
	}{
		{
			file: "openai-chat-toolcalls.request.json", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			model: "gpt-4o-mini", turns: []string{"user@messages.0"},
			tools: []string{"lookup_population", "can_have_dragons"},
		},
		{
			file: "openai-chat-toolresult.request.json", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			model: "gpt-4o-mini", turns: []string{"user@messages.0", "assistant@messages.1", "tool@messages.2"},
			tools:   []string{"lookup_population", "can_have_dragons"},
			calls:   []call{{"call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", `{"country":"Crumpet"}`}},
			results: []result{{"call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", `"123124"`, false, "messages.2.content"}},
		},
		{
			file: "openai-chat-stream-toolcalls.request.json", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			model: "gpt-4o-mini", stream: true, turns: []string{"user@messages.0"}, tools: []string{"get_capital"},
		},
		{
			file: "openai-chat-stream-toolresult.request.json", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			model: "gpt-4o-mini", stream: true, turns: []string{"user@messages.0", "assistant@messages.1", "tool@messages.2"},
			tools:   []string{"get_capital"},
			calls:   []call{{"call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`}},
			results: []result{{"call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `"London"`, false, "messages.2.content"}},
		},
		{
			file: "openai-responses-functioncall.request.json", kind: wire.KindOpenAIResponses, path: "/v1/responses",
			model: "gpt-5.5", turns: []string{"user@input.0"}, tools: []string{"multiply"},
		},
		{
			file: "openai-responses-functioncall-output.request.json", kind: wire.KindOpenAIResponses, path: "/v1/responses",
			model: "gpt-5.5", turns: []string{"user@input.0", "function_call@input.1", "function_call_output@input.2"},
			tools:   []string{"multiply"},
			calls:   []call{{"call_nJmCK7SJe3ajdYYplIbH0KgL", "multiply", `{"a":1231,"b":2331}`}},
			results: []result{{"call_nJmCK7SJe3ajdYYplIbH0KgL", "multiply", `"2869461"`, false, "input.2.output"}},
		},
		{
			file: "anthropic-messages-tooluse.request.json", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			model: "claude-sonnet-4-6", turns: []string{"user@messages.0"}, tools: []string{"get_weather", "deep_tool"},
		},
		{
			file: "anthropic-messages-toolresult.request.json", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			model: "claude-haiku-4-5-20251001", stream: true,
			turns: []string{"user@messages.0", "assistant@messages.1", "user@messages.2"},
			tools: []string{"pelican_name_generator"},
			calls: []call{
				{"toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", `{}`},
				{"toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", `{}`},
			},
			results: []result{
				{"toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", `"Charles"`, false, "messages.2.content.0.content"},
				{"toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", `"Sammy"`, false, "messages.2.content.1.content"},
			},
		},
		{
			file: "anthropic-messages-toolresult-blocks.request.json", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			model: "claude-3-opus-20240229", turns: []string{"user@messages.0", "assistant@messages.1", "user@messages.2"},
			tools:   []string{"get_weather"},
			calls:   []call{{"toolu_01DYJo37oETVsCdLTTcCWcdq", "get_weather", `{"location":"San Francisco, CA"}`}},
			results: []result{{"toolu_01DYJo37oETVsCdLTTcCWcdq", "get_weather", `[{"type":"text","text":"The weather is 73f"}]`, false, "messages.2.content.0.content"}},
		},
		{
			file: "gemini-generatecontent-functioncall.request.json", kind: wire.KindGemini, path: "/v1beta/models/gemini-2.0-flash:generateContent",
			model: "gemini-2.0-flash", turns: []string{"user@contents.0"}, tools: []string{"get_user_country", "final_result"},
		},
		{
			file: "gemini-generatecontent-functionresponse.request.json", kind: wire.KindGemini, path: "/v1beta/models/gemini-2.0-flash:generateContent",
			model: "gemini-2.0-flash", turns: []string{"user@contents.0", "model@contents.1", "user@contents.2"},
			tools:   []string{"get_user_country", "final_result"},
			calls:   []call{{"pyd_ai_3fa5644dae1d4aad997ae39c70006fbd", "get_user_country", `{}`}},
			results: []result{{"pyd_ai_3fa5644dae1d4aad997ae39c70006fbd", "get_user_country", `{"return_value":"Mexico"}`, false, "contents.2.parts.0.functionResponse.response"}},
		},
		{
			file: "gemini-streamgeneratecontent-sse-functioncall.request.json", kind: wire.KindGemini, path: "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
			model: "gemini-3-pro-preview", stream: true, turns: []string{"user@contents.0"}, tools: []string{"get_country"},
		},
		{
			file: "gemini-streamgeneratecontent-sse-functionresponse.request.json", kind: wire.KindGemini, path: "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
			model: "gemini-3-pro-preview", stream: true, turns: []string{"user@contents.0", "model@contents.1", "user@contents.2"},
			tools:   []string{"get_country"},
			calls:   []call{{"pyd_ai_29bf73b69e02448588e15893d47a3e7e", "get_country", `{}`}},
			results: []result{{"pyd_ai_29bf73b69e02448588e15893d47a3e7e", "get_country", `{"return_value":"Mexico"}`, false, "contents.2.parts.0.functionResponse.response"}},
		},
		{
			file: "gemini-streamgeneratecontent-jsonarray-functionresponse.request.json", kind: wire.KindGemini, path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
			model: "gemini-2.5-flash", stream: true, turns: []string{"user@contents.0", "model@contents.1", "user@contents.2"},
			tools:   []string{"pelican_name_generator"},
			calls:   []call{{"call_27db36357f594e73b557ec8f70da9e87", "pelican_name_generator", `{}`}},
			results: []result{{"call_27db36357f594e73b557ec8f70da9e87", "pelican_name_generator", `{"output":"Charles"}`, false, "contents.2.parts.0.function_response.response"}},
		},
		{
			file: "ollama-api-chat-stream-toolcalls.request.json", kind: wire.KindOllama, path: "/api/chat",
			model: "llama3.2", stream: true, turns: []string{"user@messages.0"}, tools: []string{"get_weather"},
		},
		{
			file: "ollama-api-chat-toolresult.request.json", kind: wire.KindOllama, path: "/api/chat",
			model: "llama3.2", turns: []string{"user@messages.0", "assistant@messages.1", "tool@messages.2"},
			tools:   []string{"get_weather"},
			calls:   []call{{"", "get_weather", `{"city":"Toronto"}`}},
			results: []result{{"", "get_weather", `"11 degrees celsius"`, false, "messages.2.content"}},
		},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			body := mustRead(t, tt.file)
			if got := wire.Detect("POST", tt.path); got != tt.kind {
				t.Fatalf("Detect(%q) = %q, want %q", tt.path, got, tt.kind)
			}
			req, err := wire.ParseRequest(tt.kind, tt.path, body)
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if req.Kind != tt.kind || req.Model != tt.model || req.Stream != tt.stream {
				t.Errorf("kind, model, stream = %q, %q, %v; want %q, %q, %v", req.Kind, req.Model, req.Stream, tt.kind, tt.model, tt.stream)
			}
			if got := roles(req.Turns); !reflect.DeepEqual(got, tt.turns) {
				t.Errorf("turns = %q, want %q", got, tt.turns)
			}
			if !reflect.DeepEqual(req.Tools, tt.tools) {
				t.Errorf("tools = %q, want %q", req.Tools, tt.tools)
			}
			if got := calls(req.ToolCalls); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("tool calls = %+v\nwant %+v", got, tt.calls)
			}
			if got := results(req.ToolResults); !reflect.DeepEqual(got, tt.results) {
				t.Errorf("tool results = %+v\nwant %+v", got, tt.results)
			}
			for _, r := range req.ToolResults {
				if raw := gjson.GetBytes(body, r.Path).Raw; raw != string(r.Content) {
					t.Errorf("result %s: body at %s is %q, Content is %q", r.CallID, r.Path, raw, r.Content)
				}
			}
			checkCallPaths(t, body, req.ToolCalls)
		})
	}
	for _, f := range capturedFiles(t, "*.request.json") {
		if !seen[f] {
			t.Errorf("captured file %s has no ParseRequest test", f)
		}
	}
}

func TestParseRequestShapes(t *testing.T) {
	tests := []struct {
		name   string
		kind   wire.Kind
		path   string
		body   string
		model  string
		stream bool
		turns  []string
		calls  []call
		res    []result
	}{
		{
			name: "responses string input", kind: wire.KindOpenAIResponses, path: "/v1/responses",
			body: `{"model":"gpt-4.1","input":"hi","stream":true}`, model: "gpt-4.1", stream: true,
			turns: []string{"user@input"},
		},
		{
			name: "ollama generate streams by default", kind: wire.KindOllama, path: "/api/generate",
			body: `{"model":"llama3.2","prompt":"why is the sky blue?"}`, model: "llama3.2", stream: true,
			turns: []string{"user@prompt"},
		},
		{
			name: "ollama chat with ids and stream default", kind: wire.KindOllama, path: "/api/chat",
			body:  `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"call_ab12cd34","function":{"index":0,"name":"weather","arguments":{"location":"Paris"}}}]},{"role":"tool","tool_call_id":"call_ab12cd34","content":"{\"temperature\":12}"}]}`,
			model: "m", stream: true, turns: []string{"assistant@messages.0", "tool@messages.1"},
			calls: []call{{"call_ab12cd34", "weather", `{"location":"Paris"}`}},
			res:   []result{{"call_ab12cd34", "weather", `"{\"temperature\":12}"`, false, "messages.1.content"}},
		},
		{
			name: "anthropic error result without content", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			body:  `{"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true}]}]}`,
			model: "c", turns: []string{"user@messages.0"},
			res: []result{{"toolu_1", "", "", true, "messages.0.content.0.content"}},
		},
		{
			name: "gemini error response, id-less, no role", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			body:  `{"contents":[{"parts":[{"functionCall":{"name":"f"}}]},{"parts":[{"functionResponse":{"name":"f","response":{"error":{"code":"x"}}}}]}]}`,
			model: "g", turns: []string{"@contents.0", "@contents.1"},
			calls: []call{{"", "f", `{}`}},
			res:   []result{{"", "f", `{"error":{"code":"x"}}`, true, "contents.1.parts.0.functionResponse.response"}},
		},
		{
			name: "embeddings", kind: wire.KindEmbeddings, path: "/v1/embeddings",
			body: `{"model":"text-embedding-3-small","input":["a","b"]}`, model: "text-embedding-3-small",
		},
		{
			name: "generic json", kind: wire.KindGeneric, path: "/v1/models", body: `{"model":"x"}`, model: "x",
		},
		{
			name: "generic not json", kind: wire.KindGeneric, path: "/upload", body: "\x00\x01binary",
		},
		{
			name: "generic empty", kind: wire.KindGeneric, path: "/v1/models",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := wire.ParseRequest(tt.kind, tt.path, []byte(tt.body))
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if req.Model != tt.model || req.Stream != tt.stream {
				t.Errorf("model, stream = %q, %v; want %q, %v", req.Model, req.Stream, tt.model, tt.stream)
			}
			if got := roles(req.Turns); !reflect.DeepEqual(got, tt.turns) {
				t.Errorf("turns = %q, want %q", got, tt.turns)
			}
			if got := calls(req.ToolCalls); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("tool calls = %+v, want %+v", got, tt.calls)
			}
			if got := results(req.ToolResults); !reflect.DeepEqual(got, tt.res) {
				t.Errorf("tool results = %+v, want %+v", got, tt.res)
			}
			checkCallPaths(t, []byte(tt.body), req.ToolCalls)
		})
	}
}

// checkCallPaths checks that each call's Path locates it: the object there
// names its function, inside the call's turn, after the calls before it.
func checkCallPaths(t *testing.T, body []byte, calls []wire.ToolCall) {
	t.Helper()
	last := -1
	for _, c := range calls {
		v := gjson.GetBytes(body, c.Path)
		name := v.Get("name").String()
		if !v.Get("name").Exists() {
			name = v.Get("function.name").String()
		}
		if !v.IsObject() || name != c.Name || v.Index <= last {
			t.Errorf("call %s %s: body at Path %q is %.80s", c.ID, c.Name, c.Path, v.Raw)
		}
		last = v.Index
	}
}

func TestParseRequestMalformed(t *testing.T) {
	kinds := map[wire.Kind]string{
		wire.KindOpenAIChat:        "/v1/chat/completions",
		wire.KindOpenAIResponses:   "/v1/responses",
		wire.KindAnthropicMessages: "/v1/messages",
		wire.KindGemini:            "/v1beta/models/g:generateContent",
		wire.KindOllama:            "/api/chat",
		wire.KindEmbeddings:        "/v1/embeddings",
	}
	full := string(mustRead(t, "openai-chat-toolresult.request.json"))
	bodies := []struct {
		name, body, wantInErr string
	}{
		{"empty", "", "empty body"},
		{"not json", "hello", "byte 1"},
		{"truncated", full[:len(full)/2], "unexpected end of JSON input"},
		{"trailing garbage", `{"model":"x"} x`, "byte"},
		{"array root", `[{"model":"x"}]`, "not a JSON object"},
		{"string root", `"x"`, "not a JSON object"},
		{"deep", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "nesting deeper than"},
		{"deep unclosed", `{"a":` + strings.Repeat("[", 100000), "nesting deeper than"},
	}
	for kind, path := range kinds {
		for _, b := range bodies {
			_, err := wire.ParseRequest(kind, path, []byte(b.body))
			if !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("%s %s: err = %v, want ErrMalformed", kind, b.name, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, b.wantInErr) || !strings.HasPrefix(msg, string(kind)+" request: ") {
				t.Errorf("%s %s: err = %q, want it to start with the kind and contain %q", kind, b.name, msg, b.wantInErr)
			}
		}
	}
	shapes := []struct {
		kind      wire.Kind
		body, err string
	}{
		{wire.KindOpenAIChat, `{"messages":5}`, "messages: not an array"},
		{wire.KindOpenAIChat, `{"messages":[1]}`, "messages.0: not an object"},
		{wire.KindOpenAIChat, `{"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages.0.tool_calls: not an array"},
		{wire.KindOpenAIChat, `{"messages":[],"tools":"x"}`, "tools: not an array"},
		{wire.KindOpenAIResponses, `{"input":{}}`, "input: not an array"},
		{wire.KindAnthropicMessages, `{"messages":[null]}`, "messages.0: not an object"},
		{wire.KindGemini, `{"contents":{}}`, "contents: not an array"},
		{wire.KindGemini, `{"contents":[],"tools":{}}`, "tools: not an array"},
		{wire.KindOllama, `{"messages":"hi"}`, "messages: not an array"},
	}
	for _, s := range shapes {
		_, err := wire.ParseRequest(s.kind, kinds[s.kind], []byte(s.body))
		if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), s.err) {
			t.Errorf("%s %s: err = %v, want ErrMalformed naming %q", s.kind, s.body, err, s.err)
		}
	}
	if _, err := wire.ParseRequest("future-kind", "/x", []byte(`{}`)); !errors.Is(err, wire.ErrUnsupported) {
		t.Errorf("unknown kind: err = %v, want ErrUnsupported", err)
	}
	// null is "absent", not malformed.
	if _, err := wire.ParseRequest(wire.KindOpenAIChat, "/v1/chat/completions", []byte(`{"messages":null,"tools":null}`)); err != nil {
		t.Errorf("null fields: %v", err)
	}
}

func TestDescribePath(t *testing.T) {
	chat := mustRead(t, "openai-chat-toolresult.request.json")
	gem := mustRead(t, "gemini-generatecontent-functionresponse.request.json")
	resp := mustRead(t, "openai-responses-functioncall-output.request.json")
	anth := mustRead(t, "anthropic-messages-toolresult.request.json")
	tests := []struct {
		kind wire.Kind
		body []byte
		path string
		want string
	}{
		{wire.KindOpenAIChat, chat, "messages.2.content", "messages[2] (tool)"},
		{wire.KindOpenAIChat, chat, "messages.1.tool_calls.0.function.arguments", "messages[1] (assistant)"},
		{wire.KindOpenAIChat, chat, "messages.0", "messages[0] (user)"},
		{wire.KindOpenAIChat, chat, "messages", ""},
		{wire.KindOpenAIChat, chat, "messages.9.content", ""},
		{wire.KindOpenAIChat, chat, "messages.01", ""},
		{wire.KindOpenAIChat, chat, "model", ""},
		{wire.KindOpenAIChat, chat, "tools.0.function.name", ""},
		{wire.KindGemini, gem, "contents.1.parts.0.functionCall.id", "contents[1] (model)"},
		{wire.KindGemini, gem, "contents.2", "contents[2] (user)"},
		{wire.KindOpenAIResponses, resp, "input.1.arguments", "input[1] (function_call)"},
		{wire.KindOpenAIResponses, resp, "input.2.output", "input[2] (function_call_output)"},
		{wire.KindOpenAIResponses, []byte(`{"input":"hi"}`), "input", "input (user)"},
		{wire.KindAnthropicMessages, anth, "messages.2.content.1.content", "messages[2] (user)"},
		{wire.KindAnthropicMessages, anth, "system", ""},
		{wire.KindOllama, []byte(`{"messages":[{"role":"tool"}]}`), "messages.0.content", "messages[0] (tool)"},
		{wire.KindGemini, []byte(`{"contents":[{"parts":[]}]}`), "contents.0.parts", "contents[0]"},
		{wire.KindEmbeddings, []byte(`{"input":["a"]}`), "input.0", ""},
		{wire.KindOpenAIChat, []byte(`{"messages":[`), "messages.0", ""},
	}
	for _, tt := range tests {
		if got := wire.DescribePath(tt.kind, tt.body, tt.path); got != tt.want {
			t.Errorf("DescribePath(%s, %q) = %q, want %q", tt.kind, tt.path, got, tt.want)
		}
	}
}
