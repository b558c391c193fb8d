package proxytest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
	"github.com/llmproxy/llmproxy/wire"
)

// TestPresetAsThroughExecutor: a fixture called by the application's name
// (as: get_weather) reaches the SDK under that name, fixture.Executor
// fetches its result by the call id, and sending that result back gets the
// next step.
func TestPresetAsThroughExecutor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "named.yaml")
	if err := os.WriteFile(path, []byte(`version: 1
name: named
fixtures:
  paris:
    preset: weather
    as: get_weather
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - respond: {tool-calls: [{fixture: paris}]}
  - when: {tool-result: {fixture: paris}}
    respond: {text: "Sunny, 21 °C."}
    complete: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	m := proxytest.NewScenario(t, path)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(m.BaseURL()+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}}
	cc, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	msg := cc.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || msg.ToolCalls[0].ID != "call_get_weather" {
		t.Fatalf("tool calls %+v", msg.ToolCalls)
	}
	exec, err := fixture.NewProxyExecutor(m.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	tc := msg.ToolCalls[0]
	result, err := exec.Execute(ctx, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(tc.Function.Arguments)})
	if err != nil {
		t.Fatal(err)
	}
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(string(result.Content), tc.ID))
	if cc, err = client.Chat.Completions.New(ctx, params); err != nil || cc.Choices[0].Message.Content != "Sunny, 21 °C." {
		t.Fatalf("second answer %+v, %v", cc, err)
	}
}
