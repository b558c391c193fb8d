package proxy_test

// anthropic-sdk-go's Bedrock client (package bedrock: InvokeModel and
// InvokeModelWithResponseStream, SigV4 signed by the SDK) through the
// proxy: it signs for the upstream given as its base URL, and its HTTP
// client sends the signed request to the proxy's /bedrock prefix.

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/llmproxy/llmproxy/proxy"
)

func anthropicBedrockClient(t *testing.T, signFor, proxyPrefix string, creds aws.Credentials) anthropic.Client {
	t.Helper()
	p, err := url.Parse(proxyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{Region: bedrockRegion,
		Credentials: credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)}
	return anthropic.NewClient(bedrock.WithConfig(cfg), option.WithBaseURL(signFor),
		option.WithHTTPClient(&http.Client{Transport: viaProxy{p, nil}}), option.WithMaxRetries(0))
}

// TestAnthropicBedrockSDK records a message and a streamed message made
// through anthropic-sdk-go's Bedrock client and replays them with other
// credentials.
func TestAnthropicBedrockSDK(t *testing.T) {
	ctx := context.Background()
	run := func(c anthropic.Client) (string, error) {
		params := anthropic.MessageNewParams{Model: bedrockModel, MaxTokens: 128,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			return "", err
		}
		out := msg.Content[0].Text + " | "
		stream := c.Messages.NewStreaming(ctx, params)
		var acc anthropic.Message
		for stream.Next() {
			if err := acc.Accumulate(stream.Current()); err != nil {
				return "", err
			}
		}
		if err := stream.Err(); err != nil {
			return "", err
		}
		for _, b := range acc.Content {
			if b.Type == "tool_use" {
				out += b.ID + " " + b.Name + " " + string(b.Input)
			}
		}
		return out + " " + string(acc.StopReason), nil
	}
	up := newSigv4Upstream(t, bedrockRecordCreds, bedrockAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	saw, err := run(anthropicBedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	want := `Paris is sunny. | toolu_bdrk_01Paris weather {"location": "Paris", "unit": "celsius"} tool_use`
	if saw != want {
		t.Errorf("record: saw %s, want %s", saw, want)
	}
	rec.stop()
	up.srv.Close()
	checkNoAWSSecrets(t, "the cassette file", rawCassette(t, path), bedrockRecordCreds, signatures(up.requests))
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
	again, err := run(anthropicBedrockClient(t, up.srv.URL, rep.URL()+"/bedrock", bedrockReplayCreds))
	if err != nil || again != saw {
		t.Errorf("replay: %s, %v; want %s", again, err, saw)
	}
}
