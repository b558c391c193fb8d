package proxy_test

// A scenario answers InvokeModel and InvokeModelWithResponseStream for an
// Anthropic model in mock, through aws-sdk-go-v2 (which checks every
// event stream message's CRCs) and through anthropic-sdk-go's Bedrock
// client (which reads the chunks as Anthropic stream events).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"
)

// invokeBody is an Anthropic-on-Bedrock request: the weather question, and
// with a call id the tool round's second turn answering it.
func invokeBody(callID string) []byte {
	msgs := []any{map[string]any{"role": "user", "content": weatherPrompt}}
	if callID != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": callID, "name": "weather", "input": map[string]any{"location": "Paris", "unit": "celsius"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": callID, "content": weatherResult}}})
	}
	b, _ := json.Marshal(map[string]any{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 256, "messages": msgs})
	return b
}

// invokeSaw summarises an Anthropic message or its stream events.
func invokeSaw(docs []gjson.Result) string {
	var text, calls, stop string
	for _, d := range docs {
		text += d.Get("delta.text").Str
		for _, b := range d.Get("content").Array() {
			text += b.Get("text").Str
			if b.Get("type").Str == "tool_use" {
				calls += b.Get("id").Str + "/" + b.Get("name").Str + "/" + b.Get("input").Raw
			}
		}
		if cb := d.Get("content_block"); cb.Get("type").Str == "tool_use" {
			calls += cb.Get("id").Str + "/" + cb.Get("name").Str + "/"
		}
		calls += d.Get("delta.partial_json").Str
		stop += d.Get("stop_reason").Str + d.Get("delta.stop_reason").Str
	}
	return fmt.Sprintf("text=%q calls=%s stop=%s", text, calls, stop)
}

func TestBedrockInvokeSDKMock(t *testing.T) {
	ctx := context.Background()
	m := startMock(t, []string{weatherScenario})
	c := bedrockClientVia(t, m.srv.URL, m.srv.URL+"/bedrock", bedrockReplayCreds, nil)
	out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"), Body: invokeBody("")})
	if err != nil {
		t.Fatalf("InvokeModel: %v", err)
	}
	if got, want := invokeSaw([]gjson.Result{gjson.ParseBytes(out.Body)}), `text="" calls=call_paris/weather/{"location":"Paris","unit":"celsius"} stop=tool_use`; got != want {
		t.Errorf("InvokeModel: saw %s, want %s", got, want)
	}
	for _, tc := range []struct{ callID, want string }{
		{"", `text="" calls=call_paris/weather/{"location":"Paris","unit":"celsius"} stop=tool_use`},
		{"call_paris", `text="Paris is sunny, 21 °C." calls= stop=end_turn`},
	} {
		stream, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(bedrockModel),
			ContentType: aws.String("application/json"), Body: invokeBody(tc.callID)})
		if err != nil {
			t.Fatalf("InvokeModelWithResponseStream: %v", err)
		}
		var docs []gjson.Result
		es := stream.GetStream()
		for ev := range es.Events() {
			if ch, ok := ev.(*types.ResponseStreamMemberChunk); ok {
				docs = append(docs, gjson.ParseBytes(ch.Value.Bytes))
			}
		}
		es.Close()
		if err := es.Err(); err != nil {
			t.Fatalf("InvokeModelWithResponseStream: %v", err)
		}
		if got := invokeSaw(docs); got != tc.want {
			t.Errorf("InvokeModelWithResponseStream (turn after %q): saw %s, want %s", tc.callID, got, tc.want)
		}
	}
	// A Titan body is refused with a message naming what mock answers.
	_, err = c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String("amazon.titan-text-express-v1"), ContentType: aws.String("application/json"),
		Body: []byte(`{"inputText":"What's the weather in Paris?"}`)})
	if err == nil || !strings.Contains(err.Error(), "anthropic_version") {
		t.Errorf("InvokeModel with a Titan body: %v, want a refusal naming anthropic_version", err)
	}
}

// TestAnthropicBedrockSDKMock: the weather round through anthropic-sdk-go's
// Bedrock client, Messages.New (InvokeModel) then Messages.NewStreaming
// (InvokeModelWithResponseStream) with the tool result, answered by a
// scenario.
func TestAnthropicBedrockSDKMock(t *testing.T) {
	ctx := context.Background()
	m := startMock(t, []string{weatherScenario})
	c := anthropicBedrockClient(t, m.srv.URL, m.srv.URL+"/bedrock", bedrockReplayCreds)
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(weatherPrompt))}
	first, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: bedrockModel, MaxTokens: 256, Messages: msgs})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	if len(first.Content) != 1 || first.Content[0].Type != "tool_use" || first.Content[0].ID != "call_paris" || string(first.Content[0].Input) != `{"location":"Paris","unit":"celsius"}` {
		t.Fatalf("Messages.New: %+v, want the scripted call", first.Content)
	}
	msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_paris", weatherResult, false)))
	stream := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: bedrockModel, MaxTokens: 256, Messages: msgs})
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("Messages.NewStreaming: %v", err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "Paris is sunny, 21 °C." || acc.StopReason != "end_turn" {
		t.Errorf("Messages.NewStreaming: %+v %s, want the scripted answer", acc.Content, acc.StopReason)
	}
	entries := m.log()
	if len(entries) != 2 || entries[0].Kind != "bedrock-invoke" || entries[1].Step != "answer" || !entries[1].Stream || len(entries[1].ToolResults) != 1 {
		t.Errorf("log %+v, want two bedrock-invoke answers, the second streamed with the tool result", entries)
	}
}

// A raw InvokeModelWithResponseStream answer has the AWS event stream
// content type and Bedrock's request id.
func TestBedrockInvokeMockHeaders(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	resp, err := http.Post(m.srv.URL+"/bedrock/model/"+strings.ReplaceAll(bedrockModel, ":", "%3A")+"/invoke-with-response-stream", "application/json", strings.NewReader(string(invokeBody(""))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != eventStreamType || resp.Header.Get("X-Amzn-Requestid") == "" || len(b) == 0 {
		t.Errorf("got %d %v (%d bytes)", resp.StatusCode, resp.Header, len(b))
	}
}
