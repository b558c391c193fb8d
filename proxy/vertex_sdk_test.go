package proxy_test

// Gemini on Vertex AI through genai's Vertex backend: the SDK builds
// /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
// itself and sends an OAuth bearer token, which must never reach the
// cassette and must not take part in matching.

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// staticToken is an OAuth token provider that always gives one token.
type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer"}, nil
}

const (
	vertexRecordToken = "ya29.a0AeDClZRECORDvertexTOKEN0123456789abcdefXYZ"
	vertexReplayToken = "ya29.a0AeDClZREPLAYotherTOKEN9876543210fedcbaABC"
)

func vertexClient(t *testing.T, base, token string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "demo-project", Location: "us-central1",
		Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(token)}),
		HTTPOptions: genai.HTTPOptions{BaseURL: base + "/vertex/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bearerTape sends a request with the OAuth bearer token set, as genai's
// credentials would, and keeps the body of each answer it gets (genai
// adds no credentials to an HTTP client it is given).
type bearerTape struct {
	token string
	tape  tapeTransport
}

func (b *bearerTape) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.tape.RoundTrip(r)
}

// vertexClientTape is a genai Vertex client whose answers' bodies tape
// keeps, byte for byte as they arrived.
func vertexClientTape(t *testing.T, base string, tape *bearerTape) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "demo-project", Location: "us-central1",
		HTTPClient:  &http.Client{Transport: tape},
		HTTPOptions: genai.HTTPOptions{BaseURL: base + "/vertex/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVertexGenaiRecordReplay records a generateContent call made through
// genai's Vertex backend and replays it with another token.
func TestVertexGenaiRecordReplay(t *testing.T) {
	ctx := context.Background()
	up := fake.New(t, fake.Gemini(weatherLoop), fake.RequireHeader("Authorization", "Bearer "+vertexRecordToken))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL(), func(c *proxy.Config) { c.Upstreams["vertex"] = c.Default })
	ask := func(c *genai.Client) (string, error) {
		resp, err := c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text(weatherPrompt), nil)
		if err != nil {
			return "", err
		}
		calls := resp.FunctionCalls()
		if len(calls) != 1 {
			return "", nil
		}
		return calls[0].Name + " " + calls[0].Args["location"].(string), nil
	}
	saw, err := ask(vertexClient(t, rec.URL(), vertexRecordToken))
	if err != nil || saw != "weather Paris" {
		t.Fatalf("record: %q, %v", saw, err)
	}
	rec.stop()
	up.Close()
	if raw := rawCassette(t, path); bytes.Contains(raw, []byte(vertexRecordToken)) || bytes.Contains(raw, []byte("ya29.")) {
		t.Error("the cassette file holds the OAuth token")
	}
	all := recordedIn(t, path)
	if len(all) != 1 || all[0].Kind != "gemini" || !strings.HasPrefix(all[0].Request.Path, "/v1beta1/projects/demo-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent") ||
		all[0].Request.Headers.Get("Authorization") != cassette.Redacted {
		t.Fatalf("recorded %+v", all[0].Request)
	}
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
		u, _ := url.Parse(up.URL())
		c.Upstreams = map[string]*url.URL{"vertex": u}
	})
	again, err := ask(vertexClient(t, rep.URL(), vertexReplayToken))
	if err != nil || again != saw {
		t.Errorf("replay: %q, %v; want %q", again, err, saw)
	}
}
