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
	// A Titan body cannot carry the step's tool call: the error says so.
	_, err = c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String("amazon.titan-text-express-v1"), ContentType: aws.String("application/json"),
		Body: []byte(`{"inputText":"What's the weather in Paris?"}`)})
	if err == nil || !strings.Contains(err.Error(), "carries no tool calls") {
		t.Errorf("InvokeModel with a Titan body and a tool call step: %v, want an error saying Titan carries no tool calls", err)
	}
	// A body of no model family is refused, naming the ones answered:
	// Cohere's, and Mistral's chat, whose turns hold strings where Nova's
	// hold arrays of blocks (it must not be answered in Nova's shape).
	for model, body := range map[string]string{
		"cohere.command-r-v1:0":           `{"message":"What's the weather in Paris?"}`,
		"mistral.mistral-large-2402-v1:0": `{"messages":[{"role":"user","content":"What's the weather in Paris?"}],"max_tokens":100}`,
	} {
		_, err = c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(model), ContentType: aws.String("application/json"),
			Body: []byte(body)})
		if err == nil || !strings.Contains(err.Error(), "anthropic_version") || !strings.Contains(err.Error(), "inputText") {
			t.Errorf("InvokeModel with a %s body: %v, want a refusal naming the bodies answered", model, err)
		}
	}
}

// sunnyScenario answers any request with one text.
const sunnyScenario = `version: 1
name: sunny
steps:
  - id: say
    respond: {text: "Paris is sunny, 21 °C.", usage: {input: 9, output: 7}}
    complete: true
`

// TestBedrockInvokeModelsSDKMock: mock answers InvokeModel and
// InvokeModelWithResponseStream for Nova (the weather round, its call and
// then its text), Titan and Llama bodies in each model's own shape,
// through aws-sdk-go-v2 (which checks every message's CRCs).
func TestBedrockInvokeModelsSDKMock(t *testing.T) {
	ctx := context.Background()
	m := startMock(t, []string{weatherScenario})
	c := bedrockClientVia(t, m.srv.URL, m.srv.URL+"/bedrock", bedrockReplayCreds, nil)
	saw, err := invokeRound(ctx, c, novaModel, novaBody)
	if want := `call=call_paris/weather text="Paris is sunny, 21 °C."`; err != nil || saw != want {
		t.Errorf("Nova round: saw %s (%v), want %s", saw, err, want)
	}
	sunny := startMock(t, []string{sunnyScenario})
	c = bedrockClientVia(t, sunny.srv.URL, sunny.srv.URL+"/bedrock", bedrockReplayCreds, nil)
	for _, tc := range []struct{ model, body, whole, chunk string }{
		{"amazon.titan-text-express-v1", `{"inputText":"User: Weather in Paris?\nBot:","textGenerationConfig":{"maxTokenCount":64}}`, "results.0.outputText", "outputText"},
		{"meta.llama3-8b-instruct-v1:0", `{"prompt":"Weather in Paris?","max_gen_len":64}`, "generation", "generation"},
	} {
		out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(tc.model), ContentType: aws.String("application/json"), Body: []byte(tc.body)})
		if err != nil || gjson.GetBytes(out.Body, tc.whole).Str != "Paris is sunny, 21 °C." {
			t.Errorf("%s InvokeModel: %v %s", tc.model, err, bodyOf(out))
		}
		stream, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(tc.model),
			ContentType: aws.String("application/json"), Body: []byte(tc.body)})
		if err != nil {
			t.Fatalf("%s InvokeModelWithResponseStream: %v", tc.model, err)
		}
		var text, last string
		es := stream.GetStream()
		for ev := range es.Events() {
			if ch, ok := ev.(*types.ResponseStreamMemberChunk); ok {
				text += gjson.GetBytes(ch.Value.Bytes, tc.chunk).Str
				last = string(ch.Value.Bytes)
			}
		}
		es.Close()
		if err := es.Err(); err != nil || text != "Paris is sunny, 21 °C." || gjson.Get(last, "amazon-bedrock-invocationMetrics.outputTokenCount").Int() != 7 {
			t.Errorf("%s stream: text %q, last chunk %s, %v", tc.model, text, last, err)
		}
	}
}

// bodyOf is an InvokeModel output's body, nil without one.
func bodyOf(out *bedrockruntime.InvokeModelOutput) []byte {
	if out == nil {
		return nil
	}
	return out.Body
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
