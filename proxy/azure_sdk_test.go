package proxy_test

// The Azure OpenAI wire driven by openai-go's own azure package, as an
// application configured for Azure uses it: azure.WithEndpoint builds
// /openai/deployments/{model}/chat/completions?api-version=… itself and
// azure.WithAPIKey sends the Api-Key header. The other Azure tests build that
// path and header by hand with plain options; this one proves the proxy
// records and replays what the SDK really sends.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

const (
	// azureDeployment is the deployment name, given as the request's model;
	// it differs from every OpenAI model name so that the path can only come
	// from it.
	azureDeployment = "weather-gpt4o-mini-eastus"
	azureAPIVersion = "2024-10-21"
	// The record key must never reach the cassette file; azureKeyMark is a
	// part of it no other byte sequence of the test contains.
	azureKeyMark   = "REC-9946-AZURE"
	azureRecordKey = "azure-secret-key-" + azureKeyMark + "-0123456789abcdef"
	azureReplayKey = "azure-secret-key-replay"
	// azureChatPath is the upstream-relative path the SDK must produce.
	azureChatPath = "/openai/deployments/" + azureDeployment + "/chat/completions"
)

// bodyTap is an openai-go middleware that keeps every response body the SDK
// reads. A custom transport cannot do it: for plaintext loopback endpoints
// (azure.WithUnsafeAllowHTTP) the azure package sends through a direct
// transport of its own, bypassing the http.Client's RoundTripper.
type bodyTap struct {
	mu  sync.Mutex
	got []*bytes.Buffer
}

func (bt *bodyTap) middleware(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(r)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	buf := &bytes.Buffer{}
	bt.mu.Lock()
	bt.got = append(bt.got, buf)
	bt.mu.Unlock()
	resp.Body = &teeBody{ReadCloser: resp.Body, buf: buf, mu: &bt.mu}
	return resp, nil
}

func (bt *bodyTap) bodies() [][]byte {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	out := make([][]byte, len(bt.got))
	for i, b := range bt.got {
		out[i] = bytes.Clone(b.Bytes())
	}
	return out
}

// azureSDKClient is an openai-go client set up only through the azure
// package. endpoint is what an application would give as its Azure resource
// URL: the proxy's azure prefix. The proxy listens on plain HTTP on loopback,
// which the azure package refuses to send a key to without
// WithUnsafeAllowHTTP.
func azureSDKClient(endpoint, apiVersion, key string, tap *bodyTap) openai.Client {
	return openai.NewClient(
		azure.WithEndpoint(endpoint, apiVersion),
		azure.WithAPIKey(key),
		azure.WithUnsafeAllowHTTP(),
		option.WithMaxRetries(0),
		option.WithMiddleware(tap.middleware),
	)
}

// azureRun is what the application saw of the whole tool loop.
type azureRun []chatTurn

func (r azureRun) String() string {
	var b strings.Builder
	for n, t := range r {
		fmt.Fprintf(&b, "turn %d: id=%s model=%s finish=%s usage=%d calls=%v content=%q; ",
			n, t.id, t.model, t.finish, t.usage, t.calls, t.content)
	}
	return b.String()
}

// azureChatLoop runs the weather tool loop with the deployment as the model.
func azureChatLoop(ctx context.Context, client openai.Client, prompt string, stream bool) (azureRun, error) {
	return openaiChatLoop(ctx, client, azureDeployment, prompt, stream, sortedArgs)
}

// checkAzureRun checks the recorded loop against the fake's script, so that
// record and replay agreeing means something.
func checkAzureRun(t *testing.T, run azureRun) {
	t.Helper()
	wantCall := weatherLoop.CallID + " weather" + sortedArgs(weatherLoop.Args)
	if len(run) != 2 {
		t.Fatalf("tool loop took %d turns, want 2: %v", len(run), run)
	}
	if c := run[0].calls; len(c) != 1 || c[0] != wantCall || run[0].finish != "tool_calls" {
		t.Errorf("turn 1 = %+v, want the call %s with finish tool_calls", run[0], wantCall)
	}
	if len(run[1].calls) != 0 || run[1].content != weatherLoop.Answer || run[1].finish != "stop" {
		t.Errorf("turn 2 = %+v, want the answer %q with finish stop", run[1], weatherLoop.Answer)
	}
	for n, turn := range run {
		// The fake echoes the request's model: the deployment must be it.
		if turn.model != azureDeployment || turn.id == "" || turn.usage == 0 {
			t.Errorf("turn %d = %+v, want model %s, an id and usage", n+1, turn, azureDeployment)
		}
	}
}

// azureMiss checks that err is the SDK's form of a replay miss: an
// *openai.Error for HTTP 400 of type cassette_miss whose message says all of
// wants.
func azureMiss(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: replayed without error, want a miss", what)
		return
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Errorf("%s: error %T %v is not an *openai.Error", what, err, err)
		return
	}
	t.Logf("%s: miss as the SDK reports it: %d %s %s", what, apiErr.StatusCode, apiErr.Type, apiErr.Message)
	if apiErr.StatusCode != http.StatusBadRequest || apiErr.Type != "cassette_miss" || apiErr.Code != "cassette_miss" {
		t.Errorf("%s: status %d type %q code %q, want 400 cassette_miss cassette_miss", what, apiErr.StatusCode, apiErr.Type, apiErr.Code)
	}
	for _, w := range wants {
		if !strings.Contains(apiErr.Message, w) {
			t.Errorf("%s: miss message %q does not mention %q", what, apiErr.Message, w)
		}
	}
}

// checkAzureUpstream checks what reached the fake Azure while recording.
func checkAzureUpstream(t *testing.T, up *fake.Upstream) {
	t.Helper()
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream received %d requests while recording, want 2", len(reqs))
	}
	for n, r := range reqs {
		if r.Method != http.MethodPost || r.Path != azureChatPath || r.RawQuery != "api-version="+azureAPIVersion {
			t.Errorf("upstream request %d: %s %s?%s, want POST %s?api-version=%s", n+1, r.Method, r.Path, r.RawQuery, azureChatPath, azureAPIVersion)
		}
		if got := r.Header.Get("Api-Key"); got != azureRecordKey {
			t.Errorf("upstream request %d: Api-Key %q, want the record key", n+1, got)
		}
		if got := r.Header.Values("Authorization"); len(got) != 0 {
			t.Errorf("upstream request %d: Authorization %q, want none (Azure keys go in Api-Key)", n+1, got)
		}
	}
}

// checkAzureCassette checks the cassette file: no key bytes anywhere, and two
// openai-chat interactions under the azure upstream with the deployment
// path, the api-version query and a redacted Api-Key.
func checkAzureCassette(t *testing.T, path string, stream bool) {
	t.Helper()
	raw := rawCassette(t, path)
	for _, secret := range []string{azureRecordKey, azureKeyMark} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the cassette file holds %q", secret)
		}
	}
	all := recordedIn(t, path)
	if len(all) != 2 {
		t.Fatalf("cassette holds %d interactions, want 2", len(all))
	}
	for _, i := range all {
		if i.Upstream != "azure" || i.Kind != "openai-chat" {
			t.Errorf("interaction %d: upstream %q kind %q, want azure openai-chat", i.ID, i.Upstream, i.Kind)
		}
		if i.Request.Method != http.MethodPost || i.Request.Path != azureChatPath || i.Request.Query != "api-version="+azureAPIVersion {
			t.Errorf("interaction %d: request %s %s?%s, want POST %s?api-version=%s",
				i.ID, i.Request.Method, i.Request.Path, i.Request.Query, azureChatPath, azureAPIVersion)
		}
		if got := i.Request.Headers.Values("Api-Key"); len(got) != 1 || got[0] != cassette.Redacted {
			t.Errorf("interaction %d: Api-Key header %q, want [%s]", i.ID, got, cassette.Redacted)
		}
		if got := gjson.GetBytes(i.Request.Body, "model").String(); got != azureDeployment {
			t.Errorf("interaction %d: recorded model %q, want the deployment %s", i.ID, got, azureDeployment)
		}
		if i.Response.Status != http.StatusOK || i.Response.Streamed() != stream {
			t.Errorf("interaction %d: status %d streamed %v, want 200 streamed %v", i.ID, i.Response.Status, i.Response.Streamed(), stream)
		}
	}
}

// TestAzureSDKRecordReplay records the weather tool loop sent through
// openai-go's azure package, streamed and not, then replays it with the
// upstream gone and another key, on a proxy that knows the azure upstream
// name and on one given no upstream names (as `llmproxy replay` runs). The
// application must see the same results, each response body must be the
// recorded bytes, the key must not reach the cassette file, and a changed
// prompt or api-version must be a miss the SDK reports as an *openai.Error.
func TestAzureSDKRecordReplay(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ctx := context.Background()
			up := fake.New(t, fake.OpenAIChat(weatherLoop),
				fake.RequireHeader("Api-Key", azureRecordKey), fake.RequireQuery("api-version", azureAPIVersion))
			path := cassettePath(t)

			rec := startProxy(t, proxy.ModeRecord, path, up.URL())
			recTap := &bodyTap{}
			want, err := azureChatLoop(ctx, azureSDKClient(rec.URL()+"/azure", azureAPIVersion, azureRecordKey, recTap), parisPrompt, stream)
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			checkAzureRun(t, want)
			recorded := recTap.bodies()
			rec.stop()
			checkAzureUpstream(t, up)
			checkAzureCassette(t, path, stream)
			up.Close()
			if len(recorded) != 2 {
				t.Fatalf("record delivered %d bodies, want 2", len(recorded))
			}
			// The tap must have seen the real bodies, or comparing them proves nothing.
			for n, b := range recorded {
				if !bytes.Contains(b, []byte(`"`+azureDeployment+`"`)) || (n == 0 && !bytes.Contains(b, []byte(weatherLoop.CallID))) {
					t.Fatalf("recorded body %d %q is not the fake's completion", n+1, b)
				}
			}

			replays := []struct {
				name     string
				upstream string
				edit     []func(*proxy.Config)
			}{
				{"upstream-names", up.URL(), nil},
				{"no-upstream-names", "", []func(*proxy.Config){func(c *proxy.Config) { c.Upstreams, c.Default = nil, nil }}},
			}
			for _, r := range replays {
				rep := startProxy(t, proxy.ModeReplay, path, r.upstream, r.edit...)
				repTap := &bodyTap{}
				client := azureSDKClient(rep.URL()+"/azure", azureAPIVersion, azureReplayKey, repTap)
				got, err := azureChatLoop(ctx, client, parisPrompt, stream)
				if err != nil {
					t.Fatalf("%s: replay: %v", r.name, err)
				}
				if got.String() != want.String() {
					t.Errorf("%s: replay saw %v\nrecord saw %v", r.name, got, want)
				}
				replayed := repTap.bodies()
				if len(replayed) != len(recorded) {
					t.Fatalf("%s: replay delivered %d bodies, record %d", r.name, len(replayed), len(recorded))
				}
				for i := range recorded {
					if !bytes.Equal(recorded[i], replayed[i]) {
						t.Errorf("%s: response %d differs:\nrecord: %q\nreplay: %q", r.name, i+1, recorded[i], replayed[i])
					}
				}

				_, err = azureChatLoop(ctx, client, romePrompt, stream)
				azureMiss(t, r.name+": changed prompt", err,
					"POST /azure"+azureChatPath, "interaction 1", "messages.0.content", "Rome", "Paris")

				other := azureSDKClient(rep.URL()+"/azure", "2025-01-01-preview", azureReplayKey, &bodyTap{})
				_, err = azureChatLoop(ctx, other, parisPrompt, stream)
				azureMiss(t, r.name+": changed api-version", err,
					"POST /azure"+azureChatPath, "interaction 1", "query.api-version", "2025-01-01-preview", azureAPIVersion)
				rep.stop()
			}
			if up.Hits() != 2 {
				t.Errorf("upstream hits during replay = %d, want 0", up.Hits()-2)
			}
		})
	}
}
