package wire_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/wire"
)

// TestParseInvokeModelBodies: the Nova, Titan and Llama bodies of
// InvokeModel (captured/bedrock, documented shapes), whole and as
// InvokeModelWithResponseStream chunks, read as text, tool calls, stop
// reason and usage; their requests as turns, tools, calls and results.
func TestParseInvokeModelBodies(t *testing.T) {
	weather := `{"location":"Paris","unit":"celsius"}`
	for _, tc := range []struct {
		file  string
		text  string
		call  string // id name args
		stop  string
		usage [2]int
	}{
		{"invoke-nova-tooluse.response.json", "Let me check the weather.", "tooluse_nova01Paris weather " + weather, "tool_use", [2]int{418, 37}},
		{"invoke-stream-nova-tooluse.eventstream", "Let me check the weather.", "tooluse_nova01Paris weather " + weather, "tool_use", [2]int{418, 37}},
		{"invoke-nova-text.response.json", "It is 21 °C and sunny in Paris.", "", "end_turn", [2]int{470, 14}},
		{"invoke-titan-text.response.json", "\nMild, often sunny, around 15 °C.", "", "FINISH", [2]int{11, 9}},
		{"invoke-stream-titan-text.eventstream", "Paris is sunny, 21 °C.", "", "FINISH", [2]int{11, 9}},
		{"invoke-llama-text.response.json", "Mild, often sunny, around 15 °C.", "", "stop", [2]int{23, 12}},
		{"invoke-stream-llama-text.eventstream", "Paris is sunny, 21 °C.", "", "stop", [2]int{23, 8}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := wire.FramingNone
			if strings.HasSuffix(tc.file, ".eventstream") {
				f = wire.FramingEventStream
			}
			r, err := wire.ParseResponse(wire.KindBedrockInvoke, f, fake.Captured("bedrock/"+tc.file))
			if err != nil {
				t.Fatal(err)
			}
			call := ""
			for _, c := range r.ToolCalls {
				call = c.ID + " " + c.Name + " " + string(c.Arguments)
			}
			if r.Text != tc.text || call != tc.call || r.Stop != tc.stop || r.Usage.Input != tc.usage[0] || r.Usage.Output != tc.usage[1] {
				t.Errorf("read text %q call %q stop %q usage %+v, want %q %q %q %v", r.Text, call, r.Stop, r.Usage, tc.text, tc.call, tc.stop, tc.usage)
			}
		})
	}
	req, err := wire.ParseRequest(wire.KindBedrockInvoke, "/model/us.amazon.nova-lite-v1%3A0/invoke", fake.Captured("bedrock/invoke-nova-toolresult.request.json"))
	if err != nil || req.System != "Answer briefly." || len(req.Turns) != 3 || len(req.Tools) != 1 || len(req.ToolCalls) != 1 || len(req.ToolResults) != 1 ||
		req.ToolResults[0].Name != "weather" || req.ToolResults[0].Path != "messages.2.content.0.toolResult.content" {
		t.Errorf("nova request %+v, %v", req, err)
	}
	out, shape, err := req.ToolResults[0].Output(wire.KindBedrockInvoke)
	if err != nil || string(out) != `{"location":"Paris","temperature":21,"unit":"celsius","conditions":"sunny"}` || shape != wire.ShapeJSONBlock {
		t.Errorf("nova tool result output %s (%d), %v", out, shape, err)
	}
	for file, text := range map[string]string{"invoke-titan-text.request.json": "User: What is", "invoke-llama-text.request.json": "<|begin_of_text|>"} {
		msgs, err := wire.Transcript(wire.KindBedrockInvoke, "/model/m/invoke", fake.Captured("bedrock/"+file))
		if err != nil || len(msgs) != 1 || msgs[0].Role != "user" || !strings.HasPrefix(msgs[0].Text, text) {
			t.Errorf("%s: transcript %+v, %v", file, msgs, err)
		}
	}
	msgs, err := wire.Transcript(wire.KindBedrockInvoke, "/model/m/invoke", fake.Captured("bedrock/invoke-nova-toolresult.request.json"))
	if err != nil || len(msgs) != 4 || msgs[0].Role != "system" || msgs[2].Text != "Let me check the weather." || len(msgs[2].ToolCalls) != 1 || len(msgs[3].ToolResults) != 1 {
		t.Errorf("nova transcript %+v, %v", msgs, err)
	}
	// A miss names JSON paths of the model's own body.
	if got := wire.DescribePath(wire.KindBedrockInvoke, fake.Captured("bedrock/invoke-nova-toolresult.request.json"), "messages.2.content.0.toolResult.content.0.json.temperature"); got != "messages[2] (user)" {
		t.Errorf("DescribePath = %q", got)
	}
}

// TestRewriteInvokeCallIDs: call ids are renamed inside the base64 bytes
// of InvokeModelWithResponseStream chunks (Anthropic's and Nova's events),
// each changed message framed anew and every other message kept byte for
// byte, and in Anthropic and Nova request bodies; a chunk whose bytes are
// not base64 is ErrMalformed.
func TestRewriteInvokeCallIDs(t *testing.T) {
	for file, old := range map[string]string{
		"invoke-stream-anthropic-tooluse.eventstream": "toolu_bdrk_01Paris",
		"invoke-stream-nova-tooluse.eventstream":      "tooluse_nova01Paris",
	} {
		body := fake.Captured("bedrock/" + file)
		out, err := wire.RewriteCallIDs(wire.KindBedrockInvoke, wire.FramingEventStream, body, map[string]string{old: "call_weather"})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		before, after := wire.Split(wire.FramingEventStream, body), wire.Split(wire.FramingEventStream, out)
		changed := 0
		for i := range before {
			if !bytes.Equal(before[i].Raw, after[i].Raw) {
				changed++
			}
			if _, err := wire.DecodeEventStream(after[i].Raw); err != nil {
				t.Errorf("%s message %d: %v", file, i, err)
			}
		}
		r, err := wire.ParseResponse(wire.KindBedrockInvoke, wire.FramingEventStream, out)
		if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "call_weather" || changed != 1 || len(after) != len(before) {
			t.Errorf("%s: read back %+v (%v); %d of %d messages changed, want 1", file, r.ToolCalls, err, changed, len(before))
		}
	}
	for file, old := range map[string]string{"invoke-nova-toolresult.request.json": "tooluse_nova01Paris"} {
		out, err := wire.RewriteCallIDs(wire.KindBedrockInvoke, wire.FramingNone, fake.Captured("bedrock/"+file), map[string]string{old: "call_weather"})
		if err != nil || strings.Count(string(out), `"toolUseId":"call_weather"`) != 2 {
			t.Errorf("%s: %s, %v", file, out, err)
		}
	}
	anth := `{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"21"}]}]}`
	if out, err := wire.RewriteCallIDs(wire.KindBedrockInvoke, wire.FramingNone, []byte(anth), map[string]string{"toolu_1": "call_w"}); err != nil || strings.Count(string(out), `"call_w"`) != 2 {
		t.Errorf("anthropic request: %s, %v", out, err)
	}
	bad, _ := wire.EncodeEventStream([]wire.EventStreamHeader{wire.StringHeader(":event-type", "chunk"), wire.StringHeader(":message-type", "event")}, []byte(`{"bytes":"not base64!"}`))
	if _, err := wire.RewriteCallIDs(wire.KindBedrockInvoke, wire.FramingEventStream, bad, map[string]string{"a": "b"}); !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("bad base64: %v, want ErrMalformed naming bytes", err)
	}
	// The bytes of a rewritten chunk are the event rewritten, nothing else.
	out, _ := wire.RewriteCallIDs(wire.KindBedrockInvoke, wire.FramingEventStream, fake.Captured("bedrock/invoke-stream-nova-tooluse.eventstream"), map[string]string{"tooluse_nova01Paris": "call_weather"})
	m, _ := wire.DecodeEventStream(wire.Split(wire.FramingEventStream, out)[3].Raw)
	dec, _ := base64.StdEncoding.DecodeString(gjson.GetBytes(m.Payload, "bytes").Str)
	if string(dec) != `{"contentBlockStart":{"start":{"toolUse":{"toolUseId":"call_weather","name":"weather"}},"contentBlockIndex":1}}` || gjson.GetBytes(m.Payload, "p").Str == "" {
		t.Errorf("rewritten chunk %s holds %s", m.Payload, dec)
	}
}

// An InvokeModel body's prompt is a prompt for the review, whichever the
// model; an Anthropic body's forced tool is its structured output.
func TestInvokePartAndOutput(t *testing.T) {
	for _, p := range []string{"inputText", "prompt", "messages.0.content.0.text", "system.0.text"} {
		if got := wire.Part(wire.KindBedrockInvoke, p); got != wire.PartPrompt {
			t.Errorf("Part(%s) = %q, want the prompt", p, got)
		}
	}
	body := `{"anthropic_version":"bedrock-2023-05-31","messages":[],"tools":[{"name":"answer","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"answer"}}`
	out, err := wire.OutputOf(wire.KindBedrockInvoke, []byte(body))
	if err != nil || len(out.Schema) == 0 || out.Tool != "answer" {
		t.Errorf("OutputOf an Anthropic InvokeModel body = %+v, %v", out, err)
	}
}

// The echoes of a Bedrock request — the model's turns and the call id each
// tool result names — are found in Converse's, Nova's and Anthropic's
// bodies.
func TestBedrockEchoes(t *testing.T) {
	anth := `{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"21"}]}]}`
	for _, tc := range []struct {
		kind wire.Kind
		body string
		want string
	}{
		{wire.KindBedrockConverse, converseToolRound, "messages.1 messages.2.content.0.toolResult.toolUseId"},
		{wire.KindBedrockInvoke, string(fake.Captured("bedrock/invoke-nova-toolresult.request.json")), "messages.1 messages.2.content.0.toolResult.toolUseId"},
		{wire.KindBedrockInvoke, anth, "messages.1 messages.2.content.0.tool_use_id"},
	} {
		req, err := wire.ParseRequest(tc.kind, "/model/m/invoke", []byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(req.Echoes([]byte(tc.body)), " "); got != tc.want {
			t.Errorf("%s echoes %q, want %q", tc.kind, got, tc.want)
		}
	}
}
