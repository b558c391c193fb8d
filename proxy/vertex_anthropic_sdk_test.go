package proxy_test

// Anthropic on Vertex AI through anthropic-sdk-go's own Vertex client
// (vertex.WithCredentials with a static OAuth token, option.WithBaseURL to
// the proxy's /vertex route): the SDK moves the model from the body into
// the path, …/publishers/anthropic/models/{model}:rawPredict or
// :streamRawPredict, and sends the token as a bearer, which must never
// reach the cassette nor take part in matching. And genai's Vertex backend
// answered by a scenario in mock.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/genai"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

const (
	vertexRegion         = "us-east5"
	vertexAnthropicModel = "claude-3-5-haiku@20241022"
)

// anthropicVertexClient is anthropic-sdk-go's Vertex client sending to
// base's /vertex route with token, through tape.
//
// The base URL is the proxy's root, and the route's prefix is added by a
// middleware registered after vertex.WithCredentials: the SDK's Vertex
// middleware moves the model into the path only for a request whose path
// is exactly /v1/messages, so a base URL of …/vertex/ would send
// /vertex/v1/messages unchanged.
func anthropicVertexClient(base, token string, tape http.RoundTripper) anthropic.Client {
	creds := &google.Credentials{ProjectID: "demo-project",
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"})}
	return anthropic.NewClient(
		option.WithHTTPClient(&http.Client{Transport: tape}), // before WithCredentials, which wraps it with the token
		vertex.WithCredentials(context.Background(), vertexRegion, "demo-project", creds),
		option.WithBaseURL(base+"/"),
		option.WithMiddleware(vertexRoute),
		option.WithMaxRetries(0),
	)
}

// vertexRoute puts the proxy's /vertex prefix before the path the Vertex
// middleware made.
func vertexRoute(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	r.URL.Path = "/vertex" + r.URL.Path
	if r.URL.RawPath != "" {
		r.URL.RawPath = "/vertex" + r.URL.RawPath
	}
	return next(r)
}

// anthropicVertexRound asks with Messages.New (:rawPredict), runs the tool
// the model calls, and sends its result with Messages.NewStreaming
// (:streamRawPredict); it says what the application saw.
func anthropicVertexRound(ctx context.Context, c anthropic.Client) (string, error) {
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "weather",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"location": map[string]any{"type": "string"}}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(weatherPrompt))}
	first, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: vertexAnthropicModel, MaxTokens: 256, Messages: msgs, Tools: tools})
	if err != nil {
		return "", err
	}
	var call anthropic.ToolUseBlock
	for _, b := range first.Content {
		if b.Type == "tool_use" {
			call = b.AsToolUse()
		}
	}
	if call.ID == "" {
		return "no call: " + string(first.StopReason), nil
	}
	msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, weatherResult, false)))
	stream := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: vertexAnthropicModel, MaxTokens: 256, Messages: msgs, Tools: tools})
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			return "", err
		}
	}
	if err := stream.Err(); err != nil {
		return "", err
	}
	text := ""
	for _, b := range acc.Content {
		text += b.Text
	}
	return call.ID + " " + call.Name + " " + string(call.Input) + " " + string(first.StopReason) + " | " + text + " " + string(acc.StopReason), nil
}

// TestAnthropicVertexSDK records the round from a fake Vertex that insists
// on the record token, and replays it with another token byte for byte;
// scrubbed to the weather preset, it replays with the preset's call id.
func TestAnthropicVertexSDK(t *testing.T) {
	ctx := context.Background()
	up := fake.New(t, fake.AnthropicMessages(weatherLoop), fake.RequireHeader("Authorization", "Bearer "+vertexRecordToken))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL(), func(c *proxy.Config) { c.Upstreams["vertex"] = c.Default })
	recTape := &tapeTransport{}
	saw, err := anthropicVertexRound(ctx, anthropicVertexClient(rec.URL(), vertexRecordToken, recTape))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if want := `call_paris weather {"location":"Paris","unit":"celsius"} tool_use | It is 21 °C and sunny in Paris. end_turn`; saw != want {
		t.Errorf("record: saw %s, want %s", saw, want)
	}
	rec.stop()
	up.Close()
	if up.Hits() != 2 {
		t.Errorf("the fake Vertex got %d requests, want 2", up.Hits())
	}
	if raw := rawCassette(t, path); bytes.Contains(raw, []byte(vertexRecordToken)) || bytes.Contains(raw, []byte("ya29.")) {
		t.Error("the cassette file holds the OAuth token")
	}
	checkVertexAnthropicCassette(t, path)

	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
		u, _ := url.Parse(up.URL())
		c.Upstreams = map[string]*url.URL{"vertex": u}
	})
	repTape := &tapeTransport{}
	again, err := anthropicVertexRound(ctx, anthropicVertexClient(rep.URL(), vertexReplayToken, repTape))
	if err != nil || again != saw {
		t.Fatalf("replay: %s, %v; want %s", again, err, saw)
	}
	got, want := repTape.bodies(), recTape.bodies()
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("replay delivered %d bodies, record %d; want 2 each", len(got), len(want))
	}
	sameBodies(t, got, want)
	rep.stop()

	// Scrubbed to the weather preset, it replays with the preset's call id.
	scrubToWeather(ctx, t, path)
	scrubbed := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} })
	after, err := anthropicVertexRound(ctx, anthropicVertexClient(scrubbed.URL(), vertexReplayToken, http.DefaultTransport))
	if want := strings.ReplaceAll(saw, "call_paris", "call_weather"); err != nil || after != want {
		t.Errorf("replay of the scrubbed cassette: %s, %v; want %s", after, err, want)
	}
}

// checkVertexAnthropicCassette checks the two recorded interactions: kind
// anthropic-messages on the :rawPredict and :streamRawPredict paths, the
// second streamed, the bearer redacted.
func checkVertexAnthropicCassette(t *testing.T, path string) {
	t.Helper()
	all := recordedIn(t, path)
	if len(all) != 2 {
		t.Fatalf("cassette holds %d interactions, want 2", len(all))
	}
	const models = "/v1/projects/demo-project/locations/" + vertexRegion + "/publishers/anthropic/models/"
	for n, op := range []string{":rawPredict", ":streamRawPredict"} {
		i := all[n]
		if i.Upstream != "vertex" || i.Kind != "anthropic-messages" || i.Request.Path != models+vertexAnthropicModel+op {
			t.Errorf("interaction %d: upstream %s kind %s path %s, want vertex anthropic-messages %s", i.ID, i.Upstream, i.Kind, i.Request.Path, models+vertexAnthropicModel+op)
		}
		if v := i.Request.Headers.Get("Authorization"); v != cassette.Redacted {
			t.Errorf("interaction %d: Authorization stored as %q", i.ID, v)
		}
		if stream := i.Response.Framing != ""; stream != (n == 1) {
			t.Errorf("interaction %d: framing %q", i.ID, i.Response.Framing)
		}
	}
}

// TestAnthropicVertexSDKMock: a scenario answers the same round through
// anthropic-sdk-go's Vertex client in mock.
func TestAnthropicVertexSDKMock(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	saw, err := anthropicVertexRound(context.Background(), anthropicVertexClient(m.srv.URL, vertexReplayToken, http.DefaultTransport))
	if err != nil {
		t.Fatal(err)
	}
	if want := `call_paris weather {"location":"Paris","unit":"celsius"} tool_use | Paris is sunny, 21 °C. end_turn`; saw != want {
		t.Errorf("mock: saw %s, want %s", saw, want)
	}
}

// vertexGenaiRound runs the weather round through genai's Vertex backend:
// the call whole (:generateContent), then the answer to its result
// streamed (:streamGenerateContent); it says what the application saw.
func vertexGenaiRound(ctx context.Context, c *genai.Client) (string, error) {
	const model = "gemini-2.5-flash"
	first, err := c.Models.GenerateContent(ctx, model, genai.Text(weatherPrompt), nil)
	if err != nil {
		return "", err
	}
	calls := first.FunctionCalls()
	if len(calls) != 1 {
		return fmt.Sprintf("%d calls", len(calls)), nil
	}
	history := append(genai.Text(weatherPrompt), first.Candidates[0].Content,
		genai.NewContentFromFunctionResponse("weather", map[string]any{"location": "Paris", "temperature": 21, "unit": "celsius", "condition": "sunny"}, genai.RoleUser))
	history[2].Parts[0].FunctionResponse.ID = calls[0].ID
	var text strings.Builder
	for resp, err := range c.Models.GenerateContentStream(ctx, model, history, nil) {
		if err != nil {
			return "", err
		}
		text.WriteString(resp.Text())
	}
	args, _ := json.Marshal(calls[0].Args)
	return fmt.Sprintf("%s %s %s | %s", calls[0].ID, calls[0].Name, args, text.String()), nil
}

// TestVertexGenaiToolRound records the round through genai's Vertex
// backend, streamed and not, and replays it with another token: the
// application sees the same call (its id, here none, as Gemini sends) and
// text, and each answer's body is the recorded bytes, the whole
// :generateContent one and the :streamGenerateContent SSE stream.
func TestVertexGenaiToolRound(t *testing.T) {
	ctx := context.Background()
	up := fake.New(t, fake.Gemini(weatherLoop), fake.RequireHeader("Authorization", "Bearer "+vertexRecordToken))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL(), func(c *proxy.Config) { c.Upstreams["vertex"] = c.Default })
	recTape := &bearerTape{token: vertexRecordToken}
	saw, err := vertexGenaiRound(ctx, vertexClientTape(t, rec.URL(), recTape))
	if want := ` weather {"location":"Paris","unit":"celsius"} | It is 21 °C and sunny in Paris.`; err != nil || saw != want {
		t.Fatalf("record: %q, %v; want %q", saw, err, want)
	}
	rec.stop()
	up.Close()
	if raw := rawCassette(t, path); bytes.Contains(raw, []byte(vertexRecordToken)) || bytes.Contains(raw, []byte("ya29.")) {
		t.Error("the cassette file holds the OAuth token")
	}
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} })
	repTape := &bearerTape{token: vertexReplayToken}
	again, err := vertexGenaiRound(ctx, vertexClientTape(t, rep.URL(), repTape))
	if err != nil || again != saw {
		t.Errorf("replay: %q, %v; want %q", again, err, saw)
	}
	got, want := repTape.tape.bodies(), recTape.tape.bodies()
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("replay delivered %d bodies, record %d; want 2 each (whole, streamed)", len(got), len(want))
	}
	if !bytes.HasPrefix(want[1], []byte("data: ")) {
		t.Errorf("the second answer is not the SSE stream: %q", want[1])
	}
	for i := range want {
		if len(want[i]) == 0 {
			t.Errorf("recorded body %d is empty", i+1)
		}
	}
	sameBodies(t, got, want)
}

// TestVertexGenaiMock: a scenario answers genai's Vertex backend in mock,
// the call whole (:generateContent) and the answer to its result streamed
// (:streamGenerateContent).
func TestVertexGenaiMock(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	saw, err := vertexGenaiRound(context.Background(), vertexClient(t, m.srv.URL, vertexReplayToken))
	if want := `call_paris weather {"location":"Paris","unit":"celsius"} | Paris is sunny, 21 °C.`; err != nil || saw != want {
		t.Errorf("mock: %q, %v; want %q", saw, err, want)
	}
}
