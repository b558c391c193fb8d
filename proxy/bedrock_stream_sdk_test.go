package proxy_test

// The four Bedrock Runtime operations through aws-sdk-go-v2: recorded from a
// fake Bedrock that checks signatures and answers with the captured event
// streams, replayed with other credentials, instantly and paced, byte for
// byte, and a ConverseStream tool round whose calls the log names.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

const eventStreamType = "application/vnd.amazon.eventstream"

// invokeAnswer is the fake's InvokeModel answer for an Anthropic model.
const invokeAnswer = `{"id":"msg_bdrk_02","type":"message","role":"assistant","model":"claude-3-5-haiku-20241022",` +
	`"content":[{"type":"text","text":"Paris is sunny."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":5}}`

// bedrockAnswer answers each operation as Bedrock does; a ConverseStream
// request holding a toolResult gets the text turn, any other the tool use.
func bedrockAnswer(path string, body []byte) (string, []byte) {
	switch {
	case strings.HasSuffix(path, "/converse-stream") && bytes.Contains(body, []byte(`"toolResult"`)):
		return eventStreamType, fake.Captured("bedrock/converse-stream-text.eventstream")
	case strings.HasSuffix(path, "/converse-stream"):
		return eventStreamType, fake.Captured("bedrock/converse-stream-tooluse.eventstream")
	case strings.HasSuffix(path, "/invoke-with-response-stream"):
		return eventStreamType, fake.Captured("bedrock/invoke-stream-anthropic-tooluse.eventstream")
	case strings.HasSuffix(path, "/invoke"):
		return "application/json", []byte(invokeAnswer)
	}
	return "application/json", []byte(converseAnswer)
}

// bedrockOp runs one operation and says what the application saw.
type bedrockOp func(ctx context.Context, c *bedrockruntime.Client) (string, error)

// converseStreamRound runs the weather tool round over ConverseStream.
func converseStreamRound(ctx context.Context, c *bedrockruntime.Client) (string, error) {
	return converseStreamRoundOf(ctx, c, "Weather in Paris?")
}

// converseStreamRoundOf runs the weather tool round over ConverseStream,
// asking prompt.
func converseStreamRoundOf(ctx context.Context, c *bedrockruntime.Client, prompt string) (string, error) {
	msgs := []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: prompt}}}}
	tools := &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name: aws.String("weather"), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})}}}}}
	var seen []string
	for turn := 0; turn < 2; turn++ {
		out, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel), Messages: msgs, ToolConfig: tools})
		if err != nil {
			return "", err
		}
		var text, id, name, input, stop string
		var usage int32
		stream := out.GetStream()
		for ev := range stream.Events() {
			switch e := ev.(type) {
			case *types.ConverseStreamOutputMemberContentBlockStart:
				if tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
					id, name = aws.ToString(tu.Value.ToolUseId), aws.ToString(tu.Value.Name)
				}
			case *types.ConverseStreamOutputMemberContentBlockDelta:
				switch d := e.Value.Delta.(type) {
				case *types.ContentBlockDeltaMemberText:
					text += d.Value
				case *types.ContentBlockDeltaMemberToolUse:
					input += aws.ToString(d.Value.Input)
				}
			case *types.ConverseStreamOutputMemberMessageStop:
				stop = string(e.Value.StopReason)
			case *types.ConverseStreamOutputMemberMetadata:
				usage = aws.ToInt32(e.Value.Usage.TotalTokens)
			}
		}
		if err := stream.Close(); err != nil {
			return "", err
		}
		if err := stream.Err(); err != nil {
			return "", err
		}
		seen = append(seen, fmt.Sprintf("text=%q call=%s/%s/%s stop=%s usage=%d", text, id, name, input, stop, usage))
		if id == "" {
			break
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(input), &args); err != nil {
			return "", fmt.Errorf("tool input %q: %w", input, err)
		}
		msgs = append(msgs,
			types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(id), Name: aws.String(name), Input: document.NewLazyDocument(args)}}}},
			types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
				ToolUseId: aws.String(id), Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: weatherResult}}}}}})
	}
	return strings.Join(seen, "; "), nil
}

func converseOnce(ctx context.Context, c *bedrockruntime.Client) (string, error) {
	out, err := c.Converse(ctx, converseInput("Weather in Paris?"))
	if err != nil {
		return "", err
	}
	var text string
	if msg, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, b := range msg.Value.Content {
			if tb, ok := b.(*types.ContentBlockMemberText); ok {
				text += tb.Value
			}
		}
	}
	return fmt.Sprintf("text=%q stop=%s", text, out.StopReason), nil
}

const anthropicOnBedrock = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":128,"messages":[{"role":"user","content":"Weather in Paris?"}]}`

func invokeOnce(ctx context.Context, c *bedrockruntime.Client) (string, error) {
	out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
		ContentType: aws.String("application/json"), Body: []byte(anthropicOnBedrock)})
	if err != nil {
		return "", err
	}
	return string(out.Body), nil
}

func invokeStream(ctx context.Context, c *bedrockruntime.Client) (string, error) {
	out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(bedrockModel),
		ContentType: aws.String("application/json"), Body: []byte(anthropicOnBedrock)})
	if err != nil {
		return "", err
	}
	var chunks []string
	stream := out.GetStream()
	for ev := range stream.Events() {
		if c, ok := ev.(*types.ResponseStreamMemberChunk); ok {
			chunks = append(chunks, string(c.Value.Bytes))
		}
	}
	stream.Close()
	if err := stream.Err(); err != nil {
		return "", err
	}
	return strings.Join(chunks, "\n"), nil
}

// TestBedrockSDKOperations records each operation, then replays it with
// other credentials, instantly and at the recorded pace: the application
// sees what it saw while recording, each body is the recorded bytes, and
// the cassette holds the kind, the event stream framing and no credential.
func TestBedrockSDKOperations(t *testing.T) {
	for _, tc := range []struct {
		name, kind  string
		op          bedrockOp
		stream      bool
		interaction int
		want        []string // in what the application saw
	}{
		{"Converse", "bedrock-converse", converseOnce, false, 1, []string{"Paris is sunny, 22 C.", "stop=end_turn"}},
		{"ConverseStream tool round", "bedrock-converse", converseStreamRound, true, 2, []string{
			`call=tooluse_paris01/weather/{"location": "Paris", "unit": "celsius"} stop=tool_use usage=460`,
			`text="It is 21 °C and sunny in Paris." call=// stop=end_turn usage=503`}},
		{"InvokeModel", "bedrock-invoke", invokeOnce, false, 1, []string{`"Paris is sunny."`}},
		{"InvokeModelWithResponseStream", "bedrock-invoke", invokeStream, true, 1, []string{`"partial_json":", \"unit\": \"celsius\"}"`, `"amazon-bedrock-invocationMetrics"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			up := newSigv4Upstream(t, bedrockRecordCreds, bedrockAnswer)
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
			recTap := &tapeTransport{}
			saw, err := tc.op(ctx, bedrockClientVia(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds, recTap))
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(saw, w) {
					t.Errorf("record: the application saw %s, want %s in it", saw, w)
				}
			}
			rec.stop()
			up.srv.Close()
			checkNoAWSSecrets(t, "the cassette file", rawCassette(t, path), bedrockRecordCreds, signatures(up.requests))
			checkBedrockCassette(t, path, tc.kind, tc.stream, tc.interaction)

			for _, pace := range []proxy.Pace{proxy.PaceInstant, proxy.PaceRecorded} {
				rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{}; c.Pace = pace }, withBedrock(up.srv.URL))
				repTap := &tapeTransport{}
				again, err := tc.op(ctx, bedrockClientVia(t, up.srv.URL, rep.URL()+"/bedrock", bedrockReplayCreds, repTap))
				if err != nil {
					t.Fatalf("replay (pace %v): %v", pace, err)
				}
				if again != saw {
					t.Errorf("replay (pace %v): the application saw %s, want %s", pace, again, saw)
				}
				got, want := repTap.bodies(), recTap.bodies()
				if len(got) != len(want) {
					t.Fatalf("replay delivered %d bodies, want %d", len(got), len(want))
				}
				for n := range got {
					if !bytes.Equal(got[n], want[n]) {
						t.Errorf("replay (pace %v) body %d differs from the recorded one:\n%q\n%q", pace, n+1, got[n], want[n])
					}
				}
				if tc.stream && tc.interaction == 2 {
					checkBedrockLog(t, rep.URL())
				}
				rep.stop()
			}
		})
	}
}

// checkBedrockLog checks that /_llmproxy/log names the ConverseStream
// round's tool call (read from the event stream) and its tool result.
func checkBedrockLog(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/_llmproxy/log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log struct{ Entries []proxy.LogEntry }
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		t.Fatal(err)
	}
	entries := log.Entries
	if len(entries) != 2 || len(entries[0].ToolCalls) != 1 || len(entries[1].ToolResults) != 1 {
		t.Fatalf("log %+v, want a call in the first entry and a result in the second", entries)
	}
	c, r := entries[0].ToolCalls[0], entries[1].ToolResults[0]
	if c.ID != "tooluse_paris01" || c.Name != "weather" || r.ID != "tooluse_paris01" || r.Name != "weather" || !strings.Contains(string(r.Content), "sunny") {
		t.Errorf("logged call %+v and result %+v", c, r)
	}
	if entries[0].Model != bedrockModel || !entries[0].Stream {
		t.Errorf("logged model %q stream %v", entries[0].Model, entries[0].Stream)
	}
}

// checkBedrockCassette checks the recorded interactions' kind and framing.
func checkBedrockCassette(t *testing.T, path, kind string, stream bool, n int) {
	t.Helper()
	all := recordedIn(t, path)
	if len(all) != n {
		t.Fatalf("cassette holds %d interactions, want %d", len(all), n)
	}
	for _, i := range all {
		framing := ""
		if stream {
			framing = "eventstream"
		}
		if i.Upstream != "bedrock" || i.Kind != kind || i.Provider != "bedrock" || i.Response.Framing != framing {
			t.Errorf("interaction %d: upstream %s kind %s provider %s framing %q, want bedrock %s bedrock %q",
				i.ID, i.Upstream, i.Kind, i.Provider, i.Response.Framing, kind, framing)
		}
		if stream && len(i.Response.Events) < 2 {
			t.Errorf("interaction %d: %d events, want one a message", i.ID, len(i.Response.Events))
		}
	}
}

// A replay miss is an error the SDK reads: code cassette_miss, and a
// message naming the JSON path of a Converse body where the request
// differs.
func TestBedrockSDKMiss(t *testing.T) {
	ctx := context.Background()
	up := newSigv4Upstream(t, bedrockRecordCreds, bedrockAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	if _, err := converseOnce(ctx, bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds)); err != nil {
		t.Fatal(err)
	}
	rec.stop()
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
	_, err := bedrockClient(t, up.srv.URL, rep.URL()+"/bedrock", bedrockReplayCreds).Converse(ctx, converseInput("Weather in Lyon?"))
	if err == nil {
		t.Fatal("a changed prompt replayed, want a miss")
	}
	for _, w := range []string{"StatusCode: 400", "cassette_miss", "messages.0.content.0.text", "messages[0] (user)", "Lyon"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("miss %q does not say %q", err, w)
		}
	}
}
