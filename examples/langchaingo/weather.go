// Package weather is an application built on langchaingo that asks a model
// about the weather through a tool, and whose tests run under llmproxy:
//
//	llmproxy record --cassette weather.cassette -- go test ./...   # once, against the provider
//	llmproxy scrub  --cassette weather.cassette                    # tool results become fixtures
//	llmproxy replay --cassette weather.cassette -- go test ./...   # in CI: no network, no key
//
// llmproxy points the SDKs at itself through the environment; nothing in
// this package knows about it but the tool, which answers with the recorded
// result (the call's fixture) when llmproxy serves one.
package weather

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Tool is the weather tool the model may call.
var Tool = llms.Tool{
	Type: "function",
	Function: &llms.FunctionDefinition{
		Name:        "weather",
		Description: "Report the current weather at a location.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"location": map[string]any{"type": "string"},
				"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			},
			"required":             []string{"location"},
			"additionalProperties": false,
		},
	},
}

// Ask runs one tool round on model: the question, the model's weather call,
// the tool's result, and the model's answer, which it returns. With stream,
// both model turns are streamed.
func Ask(ctx context.Context, model llms.Model, question string, stream bool) (string, error) {
	messages := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, question)}
	opts := []llms.CallOption{llms.WithTools([]llms.Tool{Tool}), llms.WithMaxTokens(1024)}
	if stream {
		opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	}
	first, err := model.GenerateContent(ctx, messages, opts...)
	if err != nil {
		return "", fmt.Errorf("first turn: %w", err)
	}
	calls := first.Choices[0].ToolCalls
	if len(calls) != 1 || calls[0].FunctionCall == nil || calls[0].FunctionCall.Name != "weather" {
		return "", fmt.Errorf("first turn: want one weather call, got %+v", calls)
	}
	call := calls[0]
	result, err := weather(ctx, call.ID, call.FunctionCall.Arguments)
	if err != nil {
		return "", err
	}
	messages = append(messages,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: call.ID, Name: "weather", Content: result},
		}},
	)
	second, err := model.GenerateContent(ctx, messages, opts...)
	if err != nil {
		return "", fmt.Errorf("second turn: %w", err)
	}
	return second.Choices[0].Content, nil
}

// weather is the tool: the call's fixture when llmproxy serves one, else a
// "measured" result whose temperature changes from run to run, so that a
// replay only matches through the fixture.
func weather(ctx context.Context, callID, arguments string) (string, error) {
	if fixture, err := fetchFixture(ctx, callID); err != nil || fixture != "" {
		return fixture, err
	}
	var args struct {
		Location string `json:"location"`
		Unit     string `json:"unit"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", fmt.Errorf("weather arguments %q: %w", arguments, err)
	}
	if args.Unit == "" {
		args.Unit = "celsius"
	}
	b, err := json.Marshal(map[string]any{
		"location": args.Location, "temperature": 15 + rand.IntN(10), "unit": args.Unit, "condition": "sunny",
	})
	return string(b), err
}

// fetchFixture returns the result recorded for callID, from
// $LLMPROXY_URL/_llmproxy/fixtures/CALL_ID, or "" when there is none.
func fetchFixture(ctx context.Context, callID string) (string, error) {
	base := os.Getenv("LLMPROXY_URL")
	if base == "" {
		return "", nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_llmproxy/fixtures/"+url.PathEscape(callID), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("fixture %s: %w", callID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "", fmt.Errorf("fixture %s: %w", callID, err)
	case resp.StatusCode == http.StatusNotFound:
		return "", nil
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("fixture %s: HTTP %d: %s", callID, resp.StatusCode, strings.TrimSpace(string(body)))
	case len(body) == 0:
		return "", errors.New("fixture " + callID + ": empty")
	}
	return string(body), nil
}
