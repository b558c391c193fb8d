package wire_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

// idsOf returns the tool call and tool result ids of a request or response.
func idsOf(t *testing.T, kind wire.Kind, f wire.Framing, path string, body []byte, request bool) (callIDs, resultIDs []string) {
	t.Helper()
	if request {
		req, err := wire.ParseRequest(kind, path, body)
		if err != nil {
			t.Fatalf("ParseRequest: %v", err)
		}
		for _, c := range req.ToolCalls {
			callIDs = append(callIDs, c.ID)
		}
		for _, r := range req.ToolResults {
			resultIDs = append(resultIDs, r.CallID)
		}
		return callIDs, resultIDs
	}
	resp, err := wire.ParseResponse(kind, f, body)
	if err != nil {
		t.Fatalf("ParseResponse: %v", err)
	}
	for _, c := range resp.ToolCalls {
		callIDs = append(callIDs, c.ID)
	}
	return callIDs, nil
}

func TestRewriteCallIDsCaptured(t *testing.T) {
	tests := []struct {
		file    string
		kind    wire.Kind
		framing wire.Framing
		path    string // set for requests
		ids     map[string]string
	}{
		{file: "openai-chat-toolcalls.response.json", kind: wire.KindOpenAIChat,
			ids: map[string]string{"call_TTY8UFNo7rNCaOBUNtlRSvMG": "call_lookup_population"}},
		{file: "openai-chat-stream-toolcalls.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			ids: map[string]string{"call_ZR5UUuTt3pf61kjwAJIYdVMj": "call_get_capital"}},
		{file: "openai-chat-stream-parallel-toolcalls.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			ids: map[string]string{"call_q2UyBRP7eXNTzAoR8lEhjc9Z": "call_a", "call_b51ijcpFkDiTQG1bQzsrmtW5": "call_b_with_a_longer_id"}},
		{file: "openrouter-chat-stream-toolcalls-quirks.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			ids: map[string]string{"llm_version:0": "call_llm_version"}},
		{file: "openai-chat-toolresult.request.json", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			ids: map[string]string{"call_TTY8UFNo7rNCaOBUNtlRSvMG": "call_lookup_population"}},
		{file: "openai-chat-stream-toolresult.request.json", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			ids: map[string]string{"call_ZR5UUuTt3pf61kjwAJIYdVMj": "c"}},
		{file: "openai-responses-functioncall.response.json", kind: wire.KindOpenAIResponses,
			ids: map[string]string{"call_nJmCK7SJe3ajdYYplIbH0KgL": "call_multiply"}},
		{file: "openai-responses-stream-functioncall.sse", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE,
			ids: map[string]string{"call_sVidsfFJ6zlzRpelrPkTPlpd": "call_multiply"}},
		{file: "openai-responses-functioncall-output.request.json", kind: wire.KindOpenAIResponses, path: "/v1/responses",
			ids: map[string]string{"call_nJmCK7SJe3ajdYYplIbH0KgL": "call_multiply"}},
		{file: "anthropic-messages-tooluse.response.json", kind: wire.KindAnthropicMessages,
			ids: map[string]string{"toolu_01SPFDdcu8vF1EsjtoTa6cYx": "call_weather"}},
		{file: "anthropic-messages-stream-tooluse.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE,
			ids: map[string]string{"toolu_01DYJo37oETVsCdLTTcCWcdq": "call_weather"}},
		{file: "anthropic-messages-stream-parallel-tooluse.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE,
			ids: map[string]string{"toolu_01LtHJmixrs9NcWQkK8hu8hj": "call_p", "toolu_01N8a4jWyf116qKTMqKKmjyt": "call_p_2"}},
		{file: "anthropic-messages-toolresult.request.json", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			ids: map[string]string{"toolu_01LtHJmixrs9NcWQkK8hu8hj": "call_p", "toolu_01N8a4jWyf116qKTMqKKmjyt": "call_p_2"}},
		{file: "anthropic-messages-toolresult-blocks.request.json", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			ids: map[string]string{"toolu_01DYJo37oETVsCdLTTcCWcdq": "call_weather"}},
		{file: "gemini-generatecontent-functionresponse.request.json", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			ids: map[string]string{"pyd_ai_3fa5644dae1d4aad997ae39c70006fbd": "call_get_user_country"}},
		{file: "gemini-streamgeneratecontent-sse-functionresponse.request.json", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			ids: map[string]string{"pyd_ai_29bf73b69e02448588e15893d47a3e7e": "call_get_country"}},
		{file: "gemini-streamgeneratecontent-jsonarray-functionresponse.request.json", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			ids: map[string]string{"call_27db36357f594e73b557ec8f70da9e87": "call_pelican"}},
		{file: "aimock/openai-chat-stream-toolcall.sse", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			ids: map[string]string{"call_paris": "call_weather"}},
		{file: "aimock/openai-responses-functioncall.response.json", kind: wire.KindOpenAIResponses,
			ids: map[string]string{"call_paris": "call_weather"}},
		{file: "aimock/openai-responses-stream-functioncall.sse", kind: wire.KindOpenAIResponses, framing: wire.FramingSSE,
			ids: map[string]string{"call_paris": "call_weather"}},
		{file: "aimock/anthropic-messages-tooluse.response.json", kind: wire.KindAnthropicMessages,
			ids: map[string]string{"call_paris": "call_weather"}},
		{file: "aimock/anthropic-messages-stream-tooluse.sse", kind: wire.KindAnthropicMessages, framing: wire.FramingSSE,
			ids: map[string]string{"call_paris": "call_weather"}},
		{file: "aimock/gemini-functioncall.response.json", kind: wire.KindGemini,
			ids: map[string]string{"call_paris": "call_weather"}},
		{file: "aimock/gemini-stream-functioncall.sse", kind: wire.KindGemini, framing: wire.FramingSSE,
			ids: map[string]string{"call_paris": "call_weather"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := mustRead(t, tt.file)
			orig := bytes.Clone(body)
			out, err := wire.RewriteCallIDs(tt.kind, tt.framing, body, tt.ids)
			if err != nil {
				t.Fatalf("RewriteCallIDs: %v", err)
			}
			if !bytes.Equal(body, orig) {
				t.Fatal("RewriteCallIDs modified its input")
			}
			// Every occurrence of an old id is an id site, so the rewrite must
			// equal a plain textual replacement.
			want := body
			for from, to := range tt.ids {
				if !bytes.Contains(body, []byte(from)) {
					t.Fatalf("test data: %s does not contain %q", tt.file, from)
				}
				want = bytes.ReplaceAll(want, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
			}
			if !bytes.Equal(out, want) {
				t.Errorf("rewrite differs from replacing the ids:\n got %q\nwant %q", out, want)
			}
			request := tt.path != ""
			calls0, results0 := idsOf(t, tt.kind, tt.framing, tt.path, body, request)
			calls1, results1 := idsOf(t, tt.kind, tt.framing, tt.path, out, request)
			mapped := func(ids []string) []string {
				var o []string
				for _, id := range ids {
					if to, ok := tt.ids[id]; ok {
						id = to
					}
					o = append(o, id)
				}
				return o
			}
			if len(calls0) == 0 || !reflect.DeepEqual(calls1, mapped(calls0)) || !reflect.DeepEqual(results1, mapped(results0)) {
				t.Errorf("ids after rewrite: calls %q results %q; before: calls %q results %q", calls1, results1, calls0, results0)
			}
			if tt.framing != wire.FramingNone {
				before, after := wire.Split(tt.framing, body), wire.Split(tt.framing, out)
				if len(before) != len(after) {
					t.Fatalf("events: %d after rewrite, %d before", len(after), len(before))
				}
				for i := range before {
					if before[i].Name != after[i].Name {
						t.Errorf("event %d: name %q became %q", i, before[i].Name, after[i].Name)
					}
				}
			}
		})
	}
}

func TestRewriteCallIDsEscaping(t *testing.T) {
	body := mustRead(t, "anthropic-messages-stream-tooluse.sse")
	odd := "call \"quoted\" \\ <tag> é \u2028 \x01"
	out, err := wire.RewriteCallIDs(wire.KindAnthropicMessages, wire.FramingSSE, body, map[string]string{"toolu_01DYJo37oETVsCdLTTcCWcdq": odd})
	if err != nil {
		t.Fatal(err)
	}
	r, err := wire.ParseResponse(wire.KindAnthropicMessages, wire.FramingSSE, out)
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != odd {
		t.Fatalf("after rewrite: %+v, %v; want the id %q", r.ToolCalls, err, odd)
	}
	if bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte{1}) {
		t.Error("U+2028 and control characters must be escaped inside an SSE data line")
	}
}

func TestRewriteCallIDsSynthetic(t *testing.T) {
	tests := []struct {
		name    string
		kind    wire.Kind
		framing wire.Framing
		path    string // set for requests
		body    string
		ids     map[string]string
		want    string
	}{
		{
			name: "gemini sse crlf", kind: wire.KindGemini, framing: wire.FramingSSE,
			body: string(mustRead(t, "gemini-streamgeneratecontent-sse-functioncall.sse")),
			ids:  map[string]string{"#get_country#1": "call_get_country"},
			want: strings.Replace(string(mustRead(t, "gemini-streamgeneratecontent-sse-functioncall.sse")),
				`"args": {}}`, `"args": {},"id":"call_get_country"}`, 1),
		},
		{
			name: "gemini pretty json", kind: wire.KindGemini,
			body: string(mustRead(t, "gemini-generatecontent-functioncall.response.json")),
			ids:  map[string]string{"#get_user_country#1": "call_get_user_country"},
			want: strings.Replace(string(mustRead(t, "gemini-generatecontent-functioncall.response.json")),
				`"name": "get_user_country"`, `"name": "get_user_country","id":"call_get_user_country"`, 1),
		},
		{
			name: "gemini streamed array", kind: wire.KindGemini,
			body: string(mustRead(t, "gemini-streamgeneratecontent-jsonarray-functioncall.json")),
			ids:  map[string]string{"#pelican_name_generator#1": "call_pelican"},
			want: strings.Replace(string(mustRead(t, "gemini-streamgeneratecontent-jsonarray-functioncall.json")),
				`"args": {}`, `"args": {},"id":"call_pelican"`, 1),
		},
		{
			name: "gemini counts id-less calls across events, skipping explicit ids", kind: wire.KindGemini, framing: wire.FramingSSE,
			body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"id\":\"x\"}},{\"functionCall\":{\"name\":\"f\"}}]}}]}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"g\"}},{\"functionCall\":{\"name\":\"f\",\"id\":null}}]}}]}\r\n\r\n",
			ids: map[string]string{"#f#2": "call_f_2", "#g#1": "call_g"},
			want: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"id\":\"x\"}},{\"functionCall\":{\"name\":\"f\"}}]}}]}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"g\",\"id\":\"call_g\"}},{\"functionCall\":{\"name\":\"f\",\"id\":\"call_f_2\"}}]}}]}\r\n\r\n",
		},
		{
			name: "gemini request pairs calls and responses", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			body: `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"functionCall":{"name":"f","args":{"a":2}}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"v":1}}},{"function_response":{"name":"f","response":{"v":2}}}]}]}`,
			ids: map[string]string{"#f#2": "call_f_2"},
			want: `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"functionCall":{"name":"f","args":{"a":2},"id":"call_f_2"}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"v":1}}},{"function_response":{"name":"f","response":{"v":2},"id":"call_f_2"}}]}]}`,
		},
		{
			name: "empty object", kind: wire.KindGemini,
			body: `{"candidates":[{"content":{"parts":[{"functionCall":{ }}]}}]}`,
			ids:  map[string]string{wire.SyntheticID("", 1): "call_x"},
			want: `{"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_x" }}]}}]}`,
		},
		{
			name: "ollama ndjson", kind: wire.KindOllama, framing: wire.FramingNDJSON,
			body: string(mustRead(t, "aimock/ollama-chat-stream-toolcall.ndjson")),
			ids:  map[string]string{"#weather#1": "call_weather"},
			want: strings.Replace(string(mustRead(t, "aimock/ollama-chat-stream-toolcall.ndjson")),
				`"unit":"celsius"}}}`, `"unit":"celsius"}},"id":"call_weather"}`, 1),
		},
		{
			// The echoed call gets the id, as the client echoes the message
			// it got; the tool message answers by tool_name and stays so,
			// as the documented client will send it again.
			name: "ollama request, result by name", kind: wire.KindOllama, path: "/api/chat",
			body: string(mustRead(t, "ollama-api-chat-toolresult.request.json")),
			ids:  map[string]string{"#get_weather#1": "call_get_weather"},
			want: strings.Replace(string(mustRead(t, "ollama-api-chat-toolresult.request.json")),
				"\"city\": \"Toronto\"\n            }\n          }", "\"city\": \"Toronto\"\n            }\n          },\"id\":\"call_get_weather\"", 1),
		},
		{
			name: "ollama request, server id, result by name", kind: wire.KindOllama, path: "/api/chat",
			body: `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_k3x9q2mw","function":{"index":0,"name":"f","arguments":{}}},{"function":{"index":1,"name":"f","arguments":{}}}]},` +
				`{"role":"tool","content":"1","tool_name":"f"},{"role":"tool","content":"2","tool_name":"f"}]}`,
			ids: map[string]string{"call_k3x9q2mw": "call_f", "#f#1": "call_f_2"},
			want: `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_f","function":{"index":0,"name":"f","arguments":{}}},{"function":{"index":1,"name":"f","arguments":{}},"id":"call_f_2"}]},` +
				`{"role":"tool","content":"1","tool_name":"f"},{"role":"tool","content":"2","tool_name":"f"}]}`,
		},
		{
			name: "ollama request, result by tool_call_id", kind: wire.KindOllama, path: "/api/chat",
			body: `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_k3x9q2mw","function":{"index":0,"name":"f","arguments":{}}}]},` +
				`{"role":"tool","content":"1","tool_name":"f","tool_call_id":"call_k3x9q2mw"},{"role":"tool","content":"2","tool_name":"f","tool_call_id":null}]}`,
			ids: map[string]string{"call_k3x9q2mw": "call_f", "#f#1": "call_f_2"},
			want: `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_f","function":{"index":0,"name":"f","arguments":{}}}]},` +
				`{"role":"tool","content":"1","tool_name":"f","tool_call_id":"call_f"},{"role":"tool","content":"2","tool_name":"f","tool_call_id":null}]}`,
		},
		{
			name: "no synthetic ids for openai", kind: wire.KindOpenAIChat, framing: wire.FramingSSE,
			body: string(mustRead(t, "openai-chat-stream-toolcalls.sse")),
			ids:  map[string]string{"#get_capital#1": "call_x", "#get_capital#2": "call_y"},
			want: string(mustRead(t, "openai-chat-stream-toolcalls.sse")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := wire.RewriteCallIDs(tt.kind, tt.framing, []byte(tt.body), tt.ids)
			if err != nil {
				t.Fatalf("RewriteCallIDs: %v", err)
			}
			if string(out) != tt.want {
				t.Fatalf("got  %q\nwant %q", out, tt.want)
			}
			calls, res := idsOf(t, tt.kind, tt.framing, tt.path, out, tt.path != "")
			for _, to := range tt.ids {
				if strings.Contains(tt.want, to) && !contains(calls, to) {
					t.Errorf("calls %q lack %q", calls, to)
				}
			}
			if tt.path != "" && tt.kind == wire.KindGemini && !reflect.DeepEqual(res, calls[len(calls)-len(res):]) {
				t.Errorf("results %q do not pair with calls %q", res, calls)
			}
			if tt.framing != wire.FramingNone && len(wire.Split(tt.framing, out)) != len(wire.Split(tt.framing, []byte(tt.body))) {
				t.Error("event count changed")
			}
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRewriteCallIDsNoop(t *testing.T) {
	body := mustRead(t, "openai-chat-toolcalls.response.json")
	for _, tt := range []struct {
		kind wire.Kind
		ids  map[string]string
	}{
		{wire.KindOpenAIChat, nil},
		{wire.KindOpenAIChat, map[string]string{"call_unknown": "x"}},
		{wire.KindGeneric, map[string]string{"call_TTY8UFNo7rNCaOBUNtlRSvMG": "x"}},
		{wire.KindEmbeddings, map[string]string{"call_TTY8UFNo7rNCaOBUNtlRSvMG": "x"}},
	} {
		out, err := wire.RewriteCallIDs(tt.kind, wire.FramingNone, body, tt.ids)
		if err != nil || !bytes.Equal(out, body) {
			t.Errorf("%s %v: changed the body (err %v)", tt.kind, tt.ids, err)
		}
	}
	ids := map[string]string{"a": "b"}
	if _, err := wire.RewriteCallIDs("future-kind", wire.FramingNone, body, ids); !errors.Is(err, wire.ErrUnsupported) {
		t.Errorf("unknown kind: err = %v, want ErrUnsupported", err)
	}
	for _, bad := range []string{"", "{", "data: {\n\n"} {
		if _, err := wire.RewriteCallIDs(wire.KindOpenAIChat, wire.FramingNone, []byte(bad), ids); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("body %q: err = %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := wire.RewriteCallIDs(wire.KindOpenAIChat, wire.FramingSSE, []byte("data: {\"x\n\n"), ids); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("bad event: err = %v, want ErrMalformed", err)
	}
}

// splice replaces the value at a gjson path of body by raw.
func splice(t *testing.T, body []byte, path, raw string) []byte {
	t.Helper()
	v := gjson.GetBytes(body, path)
	if !v.Exists() || v.Index == 0 {
		t.Fatalf("no value at %s", path)
	}
	out := append([]byte{}, body[:v.Index]...)
	out = append(out, raw...)
	return append(out, body[v.Index+len(v.Raw):]...)
}

func TestRewriteCallIDsMultiLineData(t *testing.T) {
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		body := "\ufeffevent: content_block_start" + nl +
			`data: {"type":"content_block_start","index":0,` + nl +
			": a comment between data lines" + nl +
			`data:"content_block":{"type":"tool_use","id":"toolu_A","name":"f","input":{}}}` + nl + nl +
			`data: {"type":"content_block_start","index":1,"content_block":` + nl +
			`data: {"type":"tool_use","id":"toolu_B","name":"g","input":{}}}` + nl + nl
		out, err := wire.RewriteCallIDs(wire.KindAnthropicMessages, wire.FramingSSE, []byte(body), map[string]string{"toolu_A": "call_f", "toolu_B": "call_g_longer"})
		if err != nil {
			t.Fatalf("%q: %v", nl, err)
		}
		want := strings.NewReplacer(`"toolu_A"`, `"call_f"`, `"toolu_B"`, `"call_g_longer"`).Replace(body)
		if string(out) != want {
			t.Errorf("line ending %q:\n got %q\nwant %q", nl, out, want)
		}
		r, err := wire.ParseResponse(wire.KindAnthropicMessages, wire.FramingSSE, out)
		if err != nil || len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "call_f" || r.ToolCalls[1].ID != "call_g_longer" {
			t.Errorf("line ending %q: parsed %+v, %v", nl, r.ToolCalls, err)
		}
	}
}
