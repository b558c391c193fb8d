package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
)

const fcResult = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`

// weatherAgent runs the weather tool loop with openai-go against base and
// returns what the application saw.
func weatherAgent(ctx context.Context, base string, stream bool) (string, error) {
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "weather", Parameters: openai.FunctionParameters{"type": "object"}})},
	}
	var seen []string
	for range 2 {
		var msg openai.ChatCompletionMessage
		if stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				return strings.Join(seen, "\n"), err
			}
			msg = acc.Choices[0].Message
		} else {
			cc, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return strings.Join(seen, "\n"), err
			}
			msg = cc.Choices[0].Message
		}
		for _, tc := range msg.ToolCalls {
			seen = append(seen, fmt.Sprintf("call %s %s %s", tc.ID, tc.Function.Name, sortedJSON(tc.Function.Arguments)))
		}
		if len(msg.ToolCalls) == 0 {
			return strings.Join(append(seen, "answer "+msg.Content), "\n"), nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage(fcResult, tc.ID))
		}
	}
	return strings.Join(seen, "\n"), fmt.Errorf("no answer after two turns")
}

func sortedJSON(s string) string {
	v := jsonValue([]byte(s))
	return fmt.Sprint(v)
}

// Record, scrub, convert, mock: the application sees the same conversation
// from the scenario as from the cassette.
func TestFromCassetteReproducesTheConversation(t *testing.T) {
	// weather is scrubbed into fixtures; get_weather is mapped to the
	// weather preset, and stays a function call of its own in the scenario.
	for _, tool := range []string{"weather", "get_weather"} {
		t.Run(tool, func(t *testing.T) { fromCassetteRound(t, tool) })
	}
}

func fromCassetteRound(t *testing.T, tool string) {
	up := fake.New(t, fake.OpenAIChat(fake.ToolLoop{Tool: tool, Args: `{"location":"Paris","unit":"celsius"}`, CallID: "call_w1", Answer: "Sunny, 21 °C."}))
	dir := t.TempDir()
	cas := filepath.Join(dir, "agent.cassette")
	rec, err := proxytest.Start(cas, proxytest.Mode(proxy.ModeRecord), proxytest.Upstream("openai", up.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var recorded [2]string
	for n, stream := range []bool{false, true} {
		if recorded[n], err = weatherAgent(ctx, rec.URL("openai"), stream); err != nil {
			t.Fatalf("record: %v", err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"scrub", "--cassette", cas, "--map", tool + "=weather"},
		{"scenario", "from-cassette", "--cassette", cas, "--out", filepath.Join(dir, "agent.yaml")},
		{"scenario", "check", filepath.Join(dir, "agent.yaml")},
	} {
		if code, stdout, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	text, _ := os.ReadFile(filepath.Join(dir, "agent.yaml"))
	want := "tool-result:"
	if tool == "weather" {
		want = "fixture: call_weather_2"
	}
	if !strings.Contains(string(text), want) {
		t.Errorf("the scenario lacks %q:\n%s", want, text)
	}
	// What replay of the scrubbed cassette shows (scrub renamed the calls).
	rep := proxytest.New(t, cas)
	for n, stream := range []bool{false, true} {
		if recorded[n], err = weatherAgent(ctx, rep.URL("openai"), stream); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	m := proxytest.NewScenario(t, filepath.Join(dir, "agent.yaml"))
	for n, stream := range []bool{false, true} {
		got, err := weatherAgent(ctx, m.BaseURL(), stream)
		if err != nil {
			t.Fatalf("mock: %v (so far %s)", err, got)
		}
		if got != recorded[n] {
			t.Errorf("conversation %d (stream %v):\nmock   %s\nreplay %s", n, stream, got, recorded[n])
		}
	}
}
