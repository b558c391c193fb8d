package proxy_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// TestBedrockFromCassette: a recorded ConverseStream tool round (aws-sdk-go-v2
// against the fake Bedrock) becomes a scenario with from-cassette, and
// mock serving it gives the SDK what replay gave: the call with its id and
// arguments, the text, the stop reasons and the usage. The scenario names
// the recorded call id.
func TestBedrockFromCassette(t *testing.T) {
	ctx := context.Background()
	up := newSigv4Upstream(t, bedrockRecordCreds, bedrockAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	saw, err := converseStreamRound(ctx, bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	rec.stop()
	up.srv.Close()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	yaml, err := scenario.FromCassette(c, "bedrock.yaml")
	c.Close()
	if err != nil {
		t.Fatalf("from-cassette: %v", err)
	}
	if !strings.Contains(string(yaml), "tooluse_paris01") {
		t.Errorf("the scenario does not name the recorded call:\n%s", yaml)
	}
	m := startMock(t, []string{string(yaml)}, func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} })
	got, err := converseStreamRound(ctx, bedrockClientVia(t, m.srv.URL, m.srv.URL+"/bedrock", bedrockReplayCreds, nil))
	if err != nil {
		t.Fatalf("mock: %v (scenario:\n%s)", err, yaml)
	}
	// The arguments are the same JSON value; mock writes them compacted.
	saw = strings.NewReplacer(`": "`, `":"`, `", "`, `","`).Replace(saw)
	if got != saw {
		t.Errorf("mock gave\n%s\nrecord gave\n%s\nscenario:\n%s", got, saw, yaml)
	}
}

// TestBedrockInvokeFromCassette: a recorded InvokeModelWithResponseStream
// answer (Anthropic on Bedrock) becomes a step, and mock gives the SDK the
// same call; a Titan InvokeModel recording in the same cassette becomes a
// step of its own conversation, and mock answers the Titan body with its
// recorded text in Titan's shape.
func TestBedrockInvokeFromCassette(t *testing.T) {
	ctx := context.Background()
	up := newSigv4Upstream(t, bedrockRecordCreds, invokeFamilyAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	c := bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds)
	saw, err := invokeStream(ctx, c)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	titan := &bedrockruntime.InvokeModelInput{ModelId: aws.String("amazon.titan-text-express-v1"),
		ContentType: aws.String("application/json"), Body: fake.Captured("bedrock/invoke-titan-text.request.json")}
	if _, err := c.InvokeModel(ctx, titan); err != nil {
		t.Fatalf("record Titan: %v", err)
	}
	rec.stop()
	up.srv.Close()
	cas, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	yaml, err := scenario.FromCassette(cas, "bedrock.yaml")
	cas.Close()
	if err != nil {
		t.Fatalf("from-cassette: %v", err)
	}
	if n := strings.Count(string(yaml), "- id: "); n != 2 || !strings.Contains(string(yaml), "toolu_bdrk_01Paris") || !strings.Contains(string(yaml), "Mild, often sunny") {
		t.Errorf("want two steps, the recorded call's and Titan's text:\n%s", yaml)
	}
	m := startMock(t, []string{string(yaml)})
	got, err := invokeStream(ctx, bedrockClientVia(t, m.srv.URL, m.srv.URL+"/bedrock", bedrockReplayCreds, nil))
	if err != nil {
		t.Fatalf("mock: %v (scenario:\n%s)", err, yaml)
	}
	summary := func(chunks string) string {
		var docs []gjson.Result
		for _, l := range strings.Split(chunks, "\n") {
			docs = append(docs, gjson.Parse(l))
		}
		return strings.NewReplacer(`": "`, `":"`, `", "`, `","`).Replace(invokeSaw(docs))
	}
	if summary(got) != summary(saw) || !strings.Contains(summary(got), "toolu_bdrk_01Paris/weather/") {
		t.Errorf("mock gave %s, record gave %s", summary(got), summary(saw))
	}
	out, err := bedrockClientVia(t, m.srv.URL, m.srv.URL+"/bedrock", bedrockReplayCreds, nil).InvokeModel(ctx, titan)
	if err != nil || gjson.GetBytes(out.Body, "results.0.outputText").Str != "\nMild, often sunny, around 15 °C." {
		t.Errorf("mock of the Titan step: %s, %v", bodyOf(out), err)
	}
}
