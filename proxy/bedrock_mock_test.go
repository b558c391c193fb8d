package proxy_test

import (
	"context"
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
