package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/wire"
)

func TestDetectBedrockAndVertex(t *testing.T) {
	for path, want := range map[string]wire.Kind{
		"/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse":                                      wire.KindBedrockConverse,
		"/model/us.amazon.nova-lite-v1%3A0/converse-stream":                                               wire.KindBedrockConverse,
		"/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke":                                        wire.KindBedrockInvoke,
		"/model/meta.llama3-8b-instruct-v1%3A0/invoke-with-response-stream":                               wire.KindBedrockInvoke,
		"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-5-haiku:rawPredict":       wire.KindAnthropicMessages,
		"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-5-haiku:streamRawPredict": wire.KindAnthropicMessages,
		"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent":  wire.KindGemini,
		"/model/x/converse/extra": wire.KindGeneric,
		"/model/converse":         wire.KindGeneric,
	} {
		if got := wire.Detect("POST", path); got != want {
			t.Errorf("Detect(%s) = %s, want %s", path, got, want)
		}
	}
	if got := wire.KindBedrockConverse.Provider(); got != "bedrock" {
		t.Errorf("Provider = %q", got)
	}
	if got := wire.BedrockModel("/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream?x=1"); got != "anthropic.claude-3-5-haiku-20241022-v1:0" {
		t.Errorf("BedrockModel = %q", got)
	}
}

// converseToolRound is the second request of a Converse tool round: the
// assistant's toolUse and the user's toolResult.
const converseToolRound = `{"messages":[` +
	`{"role":"user","content":[{"text":"Weather in Paris?"}]},` +
	`{"role":"assistant","content":[{"text":"Let me look."},{"toolUse":{"toolUseId":"tooluse_paris01","name":"weather","input":{"location":"Paris","unit":"celsius"}}}]},` +
	`{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_paris01","content":[{"json":{"temperature":21}}],"status":"success"}}]}],` +
	`"system":[{"text":"Be brief."}],` +
	`"toolConfig":{"tools":[{"toolSpec":{"name":"weather","inputSchema":{"json":{"type":"object"}}}}]},` +
	`"inferenceConfig":{"maxTokens":256}}`

func TestParseConverseRequest(t *testing.T) {
	req, err := wire.ParseRequest(wire.KindBedrockConverse, "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream", []byte(converseToolRound))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "anthropic.claude-3-5-haiku-20241022-v1:0" || !req.Stream || req.System != "Be brief." || len(req.Turns) != 3 || req.Turns[1].Text != "Let me look." {
		t.Errorf("request %+v", req)
	}
	if len(req.Tools) != 1 || req.Tools[0] != "weather" {
		t.Errorf("tools %v", req.Tools)
	}
	if len(req.ToolCalls) != 1 || req.ToolCalls[0].ID != "tooluse_paris01" || string(req.ToolCalls[0].Arguments) != `{"location":"Paris","unit":"celsius"}` || req.ToolCalls[0].Path != "messages.1.content.1.toolUse" {
		t.Errorf("calls %+v", req.ToolCalls)
	}
	r := req.ToolResults
	if len(r) != 1 || r[0].CallID != "tooluse_paris01" || r[0].Name != "weather" || string(r[0].Content) != `[{"json":{"temperature":21}}]` || r[0].Path != "messages.2.content.0.toolResult.content" {
		t.Errorf("results %+v", r)
	}
	if got := gjson.Get(converseToolRound, r[0].Path).Raw; got != string(r[0].Content) {
		t.Errorf("the result's path leads to %s", got)
	}
	if got := wire.DescribePath(wire.KindBedrockConverse, []byte(converseToolRound), "messages.2.content.0.toolResult.content.0.json.temperature"); got != "messages[2] (user)" {
		t.Errorf("DescribePath = %q", got)
	}
	if _, err := wire.ParseRequest(wire.KindBedrockConverse, "/model/m/converse", []byte(`{"messages":{}}`)); !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "messages: not an array") {
		t.Errorf("a messages object: %v, want ErrMalformed naming messages", err)
	}
}

func TestParseInvokeRequest(t *testing.T) {
	anth := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":256,"messages":[{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"weather","input":{"location":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"21 C"}]}],"tools":[{"name":"weather","input_schema":{"type":"object"}}]}`
	req, err := wire.ParseRequest(wire.KindBedrockInvoke, "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke", []byte(anth))
	if err != nil || req.Model != "anthropic.claude-3-5-haiku-20241022-v1:0" || req.Stream || len(req.ToolCalls) != 1 || len(req.ToolResults) != 1 || req.ToolResults[0].Name != "weather" {
		t.Errorf("anthropic body: %+v, %v", req, err)
	}
	for body, text := range map[string]string{
		`{"inputText":"Hello Titan","textGenerationConfig":{}}`:                                          "Hello Titan",
		`{"prompt":"Hello Llama","max_gen_len":64}`:                                                      "Hello Llama",
		`{"schemaVersion":"messages-v1","messages":[{"role":"user","content":[{"text":"Hello Nova"}]}]}`: "Hello Nova",
	} {
		req, err := wire.ParseRequest(wire.KindBedrockInvoke, "/model/m/invoke-with-response-stream", []byte(body))
		if err != nil || len(req.Turns) != 1 || req.Turns[0].Text != text || !req.Stream {
			t.Errorf("%s: %+v, %v", body, req, err)
		}
	}
}

func TestParseBedrockResponses(t *testing.T) {
	weather := `{"location": "Paris", "unit": "celsius"}`
	for _, tc := range []struct {
		name   string
		kind   wire.Kind
		f      wire.Framing
		body   string
		text   string
		call   string // id name args
		stop   string
		finish wire.Finish
		usage  [2]int
		err    string
	}{
		{"converse-stream tool use", wire.KindBedrockConverse, wire.FramingEventStream, string(fake.Captured("bedrock/converse-stream-tooluse.eventstream")),
			"", "tooluse_paris01 weather " + weather, "tool_use", wire.FinishToolCalls, [2]int{402, 58}, ""},
		{"converse-stream text", wire.KindBedrockConverse, wire.FramingEventStream, string(fake.Captured("bedrock/converse-stream-text.eventstream")),
			"It is 21 °C and sunny in Paris.", "", "end_turn", wire.FinishStop, [2]int{489, 14}, ""},
		{"converse-stream exception", wire.KindBedrockConverse, wire.FramingEventStream, string(fake.Captured("bedrock/converse-stream-exception-throttling.eventstream")),
			"", "", "", "", [2]int{}, "throttlingException: Too many requests, please wait before trying again."},
		{"invoke stream, anthropic", wire.KindBedrockInvoke, wire.FramingEventStream, string(fake.Captured("bedrock/invoke-stream-anthropic-tooluse.eventstream")),
			"", "toolu_bdrk_01Paris weather " + weather, "tool_use", wire.FinishToolCalls, [2]int{380, 55}, ""},
		{"converse whole", wire.KindBedrockConverse, wire.FramingNone,
			`{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"s"}}},{"text":"Looking."},{"toolUse":{"toolUseId":"t1","name":"weather","input":{"location":"Paris"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":9,"outputTokens":4,"totalTokens":13},"metrics":{"latencyMs":5}}`,
			"Looking.", `t1 weather {"location":"Paris"}`, "tool_use", wire.FinishToolCalls, [2]int{9, 4}, ""},
		{"invoke whole, anthropic", wire.KindBedrockInvoke, wire.FramingNone,
			`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`,
			"Hi.", "", "end_turn", wire.FinishStop, [2]int{3, 2}, ""},
		{"invoke whole, titan", wire.KindBedrockInvoke, wire.FramingNone,
			`{"inputTextTokenCount":3,"results":[{"tokenCount":2,"outputText":"Hi.","completionReason":"FINISH"}]}`,
			"Hi.", "", "FINISH", wire.FinishStop, [2]int{}, ""},
		{"invoke whole, llama", wire.KindBedrockInvoke, wire.FramingNone,
			`{"generation":"Hi.","prompt_token_count":3,"generation_token_count":2,"stop_reason":"stop"}`,
			"Hi.", "", "stop", wire.FinishStop, [2]int{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := wire.ParseResponse(tc.kind, tc.f, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			call := ""
			if len(r.ToolCalls) == 1 {
				c := r.ToolCalls[0]
				call = c.ID + " " + c.Name + " " + string(c.Arguments)
			}
			if r.Text != tc.text || call != tc.call || r.Stop != tc.stop || r.Finish != tc.finish || r.Error != tc.err ||
				(tc.usage != [2]int{} && (r.Usage.Input != tc.usage[0] || r.Usage.Output != tc.usage[1])) {
				t.Errorf("read %+v, want text %q call %q stop %q/%q usage %v error %q", r, tc.text, tc.call, tc.stop, tc.finish, tc.usage, tc.err)
			}
		})
	}
	cut := fake.Captured("bedrock/converse-stream-text.eventstream")
	if _, err := wire.ParseResponse(wire.KindBedrockConverse, wire.FramingEventStream, cut[:len(cut)-5]); !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "event stream message 5: cut short") {
		t.Errorf("a stream cut short: %v, want ErrMalformed naming message 5", err)
	}
}

func TestBedrockErrorBody(t *testing.T) {
	ct, body := wire.ErrorBody(wire.KindBedrockConverse, 400, "cassette_miss", "no recording")
	if ct != "application/json" || string(body) != `{"message":"no recording","__type":"cassette_miss"}` || wire.ErrorMessage(body) != "no recording" {
		t.Errorf("ErrorBody = %s %s", ct, body)
	}
}

// A Converse tool result's output is found in a {"text"} or {"json"}
// block and written back in the same shape.
func TestConverseToolResultOutput(t *testing.T) {
	for content, want := range map[string]string{
		`[{"text":"{\"temperature\":21}"}]`: `{"temperature":21}`,
		`[{"json":{"temperature":21}}]`:     `{"temperature":21}`,
	} {
		body := `{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":` + content + `}}]}]}`
		req, err := wire.ParseRequest(wire.KindBedrockConverse, "/model/m/converse", []byte(body))
		if err != nil || len(req.ToolResults) != 1 {
			t.Fatalf("%s: %v", content, err)
		}
		out, shape, err := req.ToolResults[0].Output(wire.KindBedrockConverse)
		if err != nil || string(out) != want {
			t.Errorf("%s: output %s (%v), want %s", content, out, err, want)
		}
		again, err := wire.SetOutput([]byte(body), req.ToolResults[0].Path, shape, []byte(`{"temperature":5}`))
		if err != nil {
			t.Fatal(err)
		}
		req, err = wire.ParseRequest(wire.KindBedrockConverse, "/model/m/converse", again)
		if err != nil {
			t.Fatal(err)
		}
		if out, shape2, err := req.ToolResults[0].Output(wire.KindBedrockConverse); string(out) != `{"temperature":5}` || shape2 != shape || err != nil {
			t.Errorf("%s: after SetOutput the output is %s (shape %d, %v)", content, out, shape2, err)
		}
	}
}

// Call ids are renamed in a ConverseStream's messages, each changed message
// framed anew, and in a Converse request's toolUse and toolResult.
func TestRewriteConverseCallIDs(t *testing.T) {
	ids := map[string]string{"tooluse_paris01": "call_weather"}
	body := fake.Captured("bedrock/converse-stream-tooluse.eventstream")
	out, err := wire.RewriteCallIDs(wire.KindBedrockConverse, wire.FramingEventStream, body, ids)
	if err != nil {
		t.Fatal(err)
	}
	if evs := wire.Split(wire.FramingEventStream, out); len(evs) != 8 {
		t.Fatalf("rewritten stream has %d messages, want 8", len(evs))
	}
	r, err := wire.ParseResponse(wire.KindBedrockConverse, wire.FramingEventStream, out)
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "call_weather" {
		t.Errorf("read back %+v, %v", r.ToolCalls, err)
	}
	req, err := wire.RewriteCallIDs(wire.KindBedrockConverse, wire.FramingNone, []byte(converseToolRound), ids)
	if err != nil || strings.Count(string(req), `"toolUseId":"call_weather"`) != 2 {
		t.Errorf("rewritten request %s, %v", req, err)
	}
	cut := body[:len(body)-3]
	if _, err := wire.RewriteCallIDs(wire.KindBedrockConverse, wire.FramingEventStream, cut, ids); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("a cut stream: %v, want ErrMalformed", err)
	}
}

func TestConverseTranscript(t *testing.T) {
	msgs, err := wire.Transcript(wire.KindBedrockConverse, "/model/m/converse", []byte(converseToolRound))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || msgs[0].Role != "system" || msgs[0].Text != "Be brief." || msgs[2].Text != "Let me look." ||
		len(msgs[2].ToolCalls) != 1 || len(msgs[3].ToolResults) != 1 {
		t.Errorf("transcript %+v", msgs)
	}
}

// Errors on the Bedrock wires: the exception name in X-Amzn-Errortype and
// __type, and a ConverseStream that ends with an exception message the
// reader takes for the error.
func TestBedrockWriteErrors(t *testing.T) {
	w, err := wire.WriteError(wire.KindBedrockConverse, wire.ErrorAnswer{Status: 429, Message: "slow down"})
	if err != nil || w.Header.Get("X-Amzn-Errortype") != "ThrottlingException" || string(w.Body) != `{"message":"slow down","__type":"ThrottlingException"}` {
		t.Errorf("WriteError = %v %s, %v", w.Header, w.Body, err)
	}
	ev, err := wire.StreamError(wire.KindBedrockConverse, wire.WriteOptions{Stream: true}, wire.ErrorAnswer{Status: 429, Message: "slow down"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.DecodeEventStream(ev.Raw)
	if err != nil || m.Header(":message-type") != "exception" || m.Header(":exception-type") != "throttlingException" || ev.Name != "throttlingException" {
		t.Fatalf("stream error %+v, %v", m, err)
	}
	a, err := wire.Write(wire.KindBedrockConverse, wire.Answer{ID: "x", Text: "Hi there"}, wire.WriteOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	body := append(a.Events[0].Raw, ev.Raw...)
	r, err := wire.ParseResponse(wire.KindBedrockConverse, wire.FramingEventStream, body)
	if err != nil || r.Error != "throttlingException: slow down" {
		t.Errorf("read back error %q, %v", r.Error, err)
	}
}
