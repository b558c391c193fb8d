package proxy_test

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestBedrockSDKMock: a scenario answers aws-sdk-go-v2's ConverseStream and
// Converse as Bedrock would: the SDK decodes every event stream message
// (CRCs checked) and sees the scripted call, text and stop reasons.
func TestBedrockSDKMock(t *testing.T) {
	ctx := context.Background()
	m := startMock(t, []string{weatherScenario})
	c := bedrockClientVia(t, m.srv.URL, m.srv.URL, bedrockReplayCreds, nil)
	saw, err := converseStreamRoundOf(ctx, c, "What's the weather in Paris?")
	if err != nil {
		t.Fatalf("ConverseStream round: %v", err)
	}
	for _, w := range []string{`call=call_paris/weather/{"location":"Paris","unit":"celsius"} stop=tool_use`, `text="Paris is sunny, 21 °C." call=// stop=end_turn`} {
		if !strings.Contains(saw, w) {
			t.Errorf("the application saw %s, want %s in it", saw, w)
		}
	}
	out, err := c.Converse(ctx, converseInput("What's the weather in Paris?"))
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if out.StopReason != "tool_use" {
		t.Errorf("Converse stop %q, want tool_use", out.StopReason)
	}
}

// TestVertexAnthropicMock: Anthropic on Vertex AI (:rawPredict and
// :streamRawPredict, the model in the path) is answered by a scenario as
// Anthropic Messages, whole and streamed.
func TestVertexAnthropicMock(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	const base = "/v1/projects/demo/locations/us-east5/publishers/anthropic/models/claude-3-5-haiku@20241022"
	for _, tc := range []struct{ method, body, want string }{
		{":rawPredict", `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"` + weatherPrompt + `"}]}`, `"type":"tool_use"`},
		{":streamRawPredict", `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + weatherPrompt + `"}]}`, "event: content_block_start"},
	} {
		resp, err := m.client("vertex"+tc.method).Post(m.srv.URL+base+tc.method, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), "call_paris") {
			t.Errorf("%s: %d %s, want the scripted call (%s)", tc.method, resp.StatusCode, b, tc.want)
		}
	}
}
