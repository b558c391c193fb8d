package proxytest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
)

// A test records a tool loop once, then replays it with no upstream at all.
// In a real test, proxytest.New(t, "testdata/agent.cassette") does both:
// LLMPROXY_MODE=record picks recording, and replay is the default.
func Example() {
	// A stand-in for api.openai.com.
	upstream := fake.Start(fake.OpenAIChat(fake.ToolLoop{
		Tool: "weather", Args: `{"location":"Paris"}`, CallID: "call_weather", Answer: "Sunny, 21 °C.",
	}))
	dir, _ := os.MkdirTemp("", "proxytest-example")
	defer os.RemoveAll(dir)
	cassette := filepath.Join(dir, "agent.cassette")

	rec, err := proxytest.Start(cassette, proxytest.Mode(proxy.ModeRecord), proxytest.Upstream("openai", upstream.URL()))
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, err := agent(context.Background(), rec.URL("openai"), "Paris")
	fmt.Println("recorded:", answer, err)
	fmt.Println("close:", rec.Close())
	upstream.Close()

	rep, err := proxytest.Start(cassette, proxytest.Mode(proxy.ModeReplay))
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, err = agent(context.Background(), rep.URL("openai"), "Paris")
	fmt.Println("replayed:", answer, err)
	log, _ := rep.Log()
	for _, e := range log {
		for _, c := range e.ToolCalls {
			fmt.Printf("interaction %d called %s(%s) as %s\n", e.Interaction, c.Name, c.Arguments, c.ID)
		}
		for _, r := range e.ToolResults {
			fmt.Printf("interaction %d sent the result of %s: %s\n", e.Interaction, r.ID, r.Content)
		}
	}
	fmt.Println("close:", rep.Close())
	// Output:
	// recorded: Sunny, 21 °C. <nil>
	// close: <nil>
	// replayed: Sunny, 21 °C. <nil>
	// interaction 1 called weather({"location":"Paris"}) as call_weather
	// interaction 2 sent the result of call_weather: "{\"temperature\":21}"
	// close: <nil>
}
