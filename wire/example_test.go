package wire_test

import (
	"fmt"

	"github.com/llmproxy/llmproxy/wire"
)

func ExampleSplit() {
	body := []byte("event: ping\r\ndata: {}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n")
	for _, ev := range wire.Split(wire.FramingSSE, body) {
		fmt.Printf("%q name=%q data=%q\n", ev.Raw, ev.Name, ev.Data)
	}
	// Output:
	// "event: ping\r\ndata: {}\r\n\r\n" name="ping" data="{}"
	// ": keep-alive\n\n" name="" data=""
	// "data: [DONE]\n\n" name="" data="[DONE]"
}

func ExampleParseResponse() {
	stream := []byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"weather","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}

data: [DONE]

`)
	r, err := wire.ParseResponse(wire.KindOpenAIChat, wire.FramingSSE, stream)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := r.ToolCalls[0]
	fmt.Println(c.ID, c.Name, string(c.Arguments), r.Stop)
	// Output: call_1 weather {"location":"Paris"} tool_calls
}

func ExampleRewriteCallIDs_synthetic() {
	// Gemini sends function calls without ids; the first id-less call to
	// "weather" in this body is known as SyntheticID("weather", 1).
	body := []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"weather\",\"args\":{}}}]}}]}\r\n\r\n")
	key := wire.SyntheticID("weather", 1)
	out, err := wire.RewriteCallIDs(wire.KindGemini, wire.FramingSSE, body, map[string]string{key: "call_weather"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n%q\n", key, out)
	// Output:
	// #weather#1
	// "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"weather\",\"args\":{},\"id\":\"call_weather\"}}]}}]}\r\n\r\n"
}
