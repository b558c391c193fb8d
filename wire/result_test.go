package wire_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestOutputAndSetOutput reads the tool's output from each captured
// tool-result request and writes another one back the way it was carried:
// only that value changes.
func TestOutputAndSetOutput(t *testing.T) {
	const next = `{"value":42,"note":"é <b>"}`
	const asString = `"{\"value\":42,\"note\":\"é <b>\"}"`
	tests := []struct {
		file   string
		kind   wire.Kind
		result int    // which result
		output string // its output as sent
		shape  wire.Shape
		path   string // where the new value goes
		want   string // the raw value placed there
	}{
		{"openai-chat-toolresult.request.json", wire.KindOpenAIChat, 0, "123124", wire.ShapeString, "messages.2.content", asString},
		{"openai-responses-functioncall-output.request.json", wire.KindOpenAIResponses, 0, "2869461", wire.ShapeString, "input.2.output", asString},
		{"anthropic-messages-toolresult.request.json", wire.KindAnthropicMessages, 1, "Sammy", wire.ShapeString, "messages.2.content.1.content", asString},
		{"anthropic-messages-toolresult-blocks.request.json", wire.KindAnthropicMessages, 0, "The weather is 73f", wire.ShapeTextBlock, "messages.2.content.0.content.0.text", asString},
		{"gemini-generatecontent-functionresponse.request.json", wire.KindGemini, 0, `{
              "return_value": "Mexico"
            }`, wire.ShapeObject, "contents.2.parts.0.functionResponse.response", next},
		{"ollama-api-chat-toolresult.request.json", wire.KindOllama, 0, "11 degrees celsius", wire.ShapeString, "messages.2.content", asString},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := mustRead(t, tt.file)
			orig := bytes.Clone(body)
			before, err := wire.ParseRequest(tt.kind, "", body)
			if err != nil {
				t.Fatal(err)
			}
			r := before.ToolResults[tt.result]
			out, shape, err := r.Output(tt.kind)
			if err != nil || string(out) != tt.output || shape != tt.shape {
				t.Fatalf("Output = %q, %d, %v; want %q, %d", out, shape, err, tt.output, tt.shape)
			}
			got, err := wire.SetOutput(body, r.Path, shape, []byte(next))
			if err != nil {
				t.Fatalf("SetOutput: %v", err)
			}
			if !bytes.Equal(body, orig) {
				t.Fatal("SetOutput modified its input")
			}
			if want := splice(t, body, tt.path, tt.want); !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			after, err := wire.ParseRequest(tt.kind, "", got)
			if err != nil {
				t.Fatalf("ParseRequest after: %v", err)
			}
			if out, shape2, err := after.ToolResults[tt.result].Output(tt.kind); err != nil || string(out) != next || shape2 != shape {
				t.Errorf("output after = %q, %d, %v; want %s, %d", out, shape2, err, next, shape)
			}
			// The turn that holds the result says the new output as its
			// text; every other field of every turn stays.
			if !reflect.DeepEqual(after.ToolCalls, before.ToolCalls) || !reflect.DeepEqual(withoutTextAt(after.Turns, r.Path), withoutTextAt(before.Turns, r.Path)) {
				t.Error("calls or turns changed")
			}
		})
	}
}

func TestOutputShapes(t *testing.T) {
	for _, tt := range []struct {
		kind    wire.Kind
		content string
		output  string
		shape   wire.Shape
		fails   bool
	}{
		{wire.KindGemini, `{"output":{"a":1}}`, `{"a":1}`, wire.ShapeOutputObject, false},
		{wire.KindGemini, `{"output":"{\"a\":1}"}`, `{"a":1}`, wire.ShapeOutputString, false},
		{wire.KindGemini, `{"output":1,"more":2}`, `{"output":1,"more":2}`, wire.ShapeObject, false},
		{wire.KindOpenAIChat, `[{"type":"input_text","text":"x"}]`, `x`, wire.ShapeTextBlock, false},
		{wire.KindOpenAIChat, `{"a":1}`, "", 0, true},
		{wire.KindAnthropicMessages, `[{"type":"text","text":"{"},{"type":"text","text":"}"}]`, "", 0, true},
		{wire.KindAnthropicMessages, `[{"type":"image"}]`, "", 0, true},
		{wire.KindOpenAIChat, ``, "", 0, true},
		{wire.KindOpenAIChat, `12`, "", 0, true},
	} {
		out, shape, err := wire.ToolResult{Content: []byte(tt.content)}.Output(tt.kind)
		if (err != nil) != tt.fails || string(out) != tt.output || shape != tt.shape {
			t.Errorf("%s %s: Output = %q, %d, %v; want %q, %d, failing %v", tt.kind, tt.content, out, shape, err, tt.output, tt.shape, tt.fails)
		}
	}
	for _, tt := range []struct {
		shape  wire.Shape
		output string
		want   error
	}{
		{wire.ShapeObject, `[1]`, wire.ErrMalformed},
		{0, `{}`, wire.ErrUnsupported},
	} {
		if _, err := wire.SetOutput([]byte(`{"r":{}}`), "r", tt.shape, []byte(tt.output)); !errors.Is(err, tt.want) {
			t.Errorf("SetOutput(shape %d, %s) error = %v, want %v", tt.shape, tt.output, err, tt.want)
		}
	}
	// A result without content gets one, and its other fields stay.
	body := []byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true}]}]}`)
	out, err := wire.SetOutput(body, "messages.0.content.0.content", wire.ShapeString, []byte(`{"error":{"code":"E","message":"m","retryable":false}}`))
	want := `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"{\"error\":{\"code\":\"E\",\"message\":\"m\",\"retryable\":false}}"}]}]}`
	if err != nil || string(out) != want {
		t.Errorf("insert content: got %s, %v\nwant %s", out, err, want)
	}
}

// TestAnswers pairs results with the echoed calls they answer, per API.
func TestAnswers(t *testing.T) {
	for _, tt := range []struct {
		name string
		kind wire.Kind
		path string
		body string
		want []int
	}{
		{"by id", wire.KindOpenAIChat, "/v1/chat/completions",
			`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"b","content":"1"},{"role":"tool","tool_call_id":"a","content":"2"},{"role":"tool","tool_call_id":"zz","content":"3"}]}`,
			[]int{1, 0, -1}},
		{"openai without id", wire.KindOpenAIChat, "/v1/chat/completions",
			`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}}]},{"role":"tool","name":"f","content":"1"}]}`,
			[]int{-1}},
		{"ollama by tool_name, ids first", wire.KindOllama, "/api/chat",
			`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"w","arguments":{}}},{"id":"x","function":{"name":"w","arguments":{}}}]},{"role":"tool","tool_name":"w","content":"1"},{"role":"tool","tool_call_id":"x","tool_name":"w","content":"2"},{"role":"tool","tool_name":"w","content":"3"}]}`,
			[]int{0, 1, -1}},
		{"ollama only calls of earlier turns", wire.KindOllama, "/api/chat",
			`{"messages":[{"role":"tool","tool_name":"w","content":"1"},{"role":"assistant","tool_calls":[{"function":{"name":"w","arguments":{}}}]}]}`,
			[]int{-1}},
		{"gemini n-th id-less", wire.KindGemini, "/v1beta/models/m:generateContent",
			`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"g","args":{}}},{"functionCall":{"name":"h","args":{}}},{"functionCall":{"name":"g","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"g","response":{}}},{"functionResponse":{"name":"g","response":{}}},{"functionResponse":{"name":"h","response":{}}}]}]}`,
			[]int{0, 2, 1}},
	} {
		req, err := wire.ParseRequest(tt.kind, tt.path, []byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := req.Answers(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Answers() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestKindIDRules(t *testing.T) {
	for _, k := range []wire.Kind{wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini, wire.KindOllama} {
		idless, drop := k == wire.KindGemini || k == wire.KindOllama, k == wire.KindOllama
		if k.IDlessCalls() != idless || k.EchoesDropIDs() != drop || !k.CallsTools() {
			t.Errorf("%s: IDlessCalls %v, EchoesDropIDs %v, CallsTools %v; want %v, %v, true", k, k.IDlessCalls(), k.EchoesDropIDs(), k.CallsTools(), idless, drop)
		}
	}
	for _, k := range []wire.Kind{wire.KindEmbeddings, wire.KindGeneric, "nope"} {
		if k.CallsTools() {
			t.Errorf("%s: CallsTools, want not", k)
		}
	}
}

// withoutTextAt returns turns with the Text of the turn holding path cleared.
func withoutTextAt(turns []wire.Turn, path string) []wire.Turn {
	out := slices.Clone(turns)
	for i := range out {
		if strings.HasPrefix(path, out[i].Path+".") || path == out[i].Path {
			out[i].Text = ""
		}
	}
	return out
}
