package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// shapeMarker is in every key of the key-shape test, in one case or the
// other; a leak is found by looking for it without regard to case.
const shapeMarker = "qz7canary"

// shapedKey returns a key of a provider's shape holding shapeMarker; n
// makes keys of one shape differ.
func shapedKey(shape string, n int) string {
	switch shape {
	case "openai":
		return fmt.Sprintf("sk-proj-Qz7Canary%02dXb4Lm9Qx2Vb7Nc1Rk8Wp3Ys6Jd0Hf5GaTe2", n)
	case "anthropic":
		return fmt.Sprintf("sk-ant-api03-Qz7Canary%02dBq7Xz2Lk9Mv4Np1Rt6Ws3Yc8Jd5Hf0Ga7AA", n)
	case "google":
		return fmt.Sprintf("AIzaQz7Canary%02dD3vT9mLp2RkZ8wYc4NfHb6Jx", n) // 35 after AIza
	case "aws":
		return fmt.Sprintf("AKIAQZ7CANARY%02dXYZAB", n) // 16 after AKIA
	case "jwt":
		return fmt.Sprintf("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJRejdDYW5hcnk%02d.Qz7CanarySflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV", n)
	}
	panic(shape)
}

// shapeCase puts keys in one place of an exchange.
type shapeCase struct {
	name string
	// req builds the request carrying key; other, when not "", builds the
	// same request differing elsewhere (a miss in replay).
	req func(key string, other bool) (method, path, query string, h http.Header, body string)
	// answer is the upstream's answer (its bytes may hold keys).
	status   int
	header   http.Header
	response string
	// sent reports whether the upstream got the key.
	sent func(r fake.Recorded, key string) bool
}

const shapeChat = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"%s"}]}`

func chatRequest(prompt string) func(string, bool) (string, string, string, http.Header, string) {
	return func(key string, other bool) (string, string, string, http.Header, string) {
		content := fmt.Sprintf(prompt, key)
		if other {
			content += " (and one more thing)"
		}
		return http.MethodPost, "/v1/chat/completions", "", http.Header{"Content-Type": {"application/json"}}, fmt.Sprintf(shapeChat, content)
	}
}

var plainChatAnswer = `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}`

func shapeCases() []shapeCase {
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	bodyHas := func(r fake.Recorded, key string) bool { return bytes.Contains(r.Body, []byte(key)) }
	return []shapeCase{
		{
			name:   "request body",
			req:    chatRequest("My keys are %s and " + shapedKey("anthropic", 1) + ", " + shapedKey("aws", 1) + ", " + shapedKey("jwt", 1) + "; store them."),
			status: 200, header: jsonHeader, response: plainChatAnswer, sent: bodyHas,
		},
		{
			name: "URL path",
			req: func(key string, other bool) (string, string, string, http.Header, string) {
				tail := "/content"
				if other {
					tail = "/metadata"
				}
				return http.MethodGet, "/v1/files/" + key + tail, "", nil, ""
			},
			status: 200, header: jsonHeader, response: `{"object":"file","id":"file-abc123"}`,
			sent: func(r fake.Recorded, key string) bool { return strings.Contains(r.Path, key) },
		},
		{
			name: "query values and names",
			req: func(key string, other bool) (string, string, string, http.Header, string) {
				q := "note=" + key + "&api_key=plain-Qz7Canary-1;access_token=plain-Qz7Canary-2&API_KEY=plain-Qz7Canary-3&limit=5"
				if other {
					q = strings.Replace(q, "limit=5", "limit=6", 1)
				}
				return http.MethodGet, "/v1/models", q, nil, ""
			},
			status: 200, header: jsonHeader, response: `{"object":"list","data":[]}`,
			sent: func(r fake.Recorded, key string) bool { return strings.Contains(r.RawQuery, key) },
		},
		{
			name: "request headers",
			req: func(key string, other bool) (string, string, string, http.Header, string) {
				method, path, query, _, body := chatRequest("hello %.0s")(key, other)
				h := http.Header{
					"Content-Type":              {"application/json"},
					"Openai-Organization":       {"org-Qz7Canary-org"},
					"Openai-Project":            {"proj_Qz7Canary-project"},
					"Anthropic-Api-Key":         {"plain-Qz7Canary-anthropic"},
					"Ocp-Apim-Subscription-Key": {"plain-Qz7Canary-apim"},
					"X-Custom-Auth":             {"Bearer " + key},
				}
				return method, path, query, h, body
			},
			status: 200, header: jsonHeader, response: plainChatAnswer,
			sent: func(r fake.Recorded, key string) bool { return r.Header.Get("X-Custom-Auth") == "Bearer "+key },
		},
		{
			// The shortest key shape, 20 bytes, as a whole header value and
			// a whole query value: scanning skips only shorter strings.
			name: "shortest keys alone",
			req: func(key string, other bool) (string, string, string, http.Header, string) {
				var n int
				fmt.Sscanf(key, "sk-proj-Qz7Canary%02d", &n)
				q := "id=" + shapedKey("aws", n) + "&limit=5"
				if other {
					q = strings.Replace(q, "limit=5", "limit=6", 1)
				}
				return http.MethodGet, "/v1/models", q, http.Header{"X-Aws-Key": {shapedKey("aws", n+50)}}, ""
			},
			status: 200, header: jsonHeader, response: `{"object":"list","data":[]}`,
			sent: func(r fake.Recorded, key string) bool {
				return len(r.Header.Get("X-Aws-Key")) == 20 && strings.Contains(r.RawQuery, "AKIAQZ7CANARY")
			},
		},
		{
			name:   "response body",
			req:    chatRequest("Create a key %.0s for me."),
			status: 200, header: jsonHeader,
			response: `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Your key is ` + shapedKey("openai", 90) + `, and ` + shapedKey("google", 90) + `."},"finish_reason":"stop"}]}`,
		},
		{
			name: "stream events",
			req: func(key string, other bool) (string, string, string, http.Header, string) {
				method, path, query, h, _ := chatRequest("")(key, other)
				body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"a key please"}]}`
				if other {
					body = strings.Replace(body, "please", "now", 1)
				}
				return method, path, query, h, body
			},
			status: 200, header: http.Header{"Content-Type": {"text/event-stream"}},
			response: "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"key: " + shapedKey("openai", 91) + "\"}}]}\n\n" +
				"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_Zt4Lm9Qx\",\"type\":\"function\",\"function\":{\"name\":\"save\",\"arguments\":\"{\\\"token\\\":\\\"" + shapedKey("jwt", 91) + "\\\"}\"}}]}}]}\n\n" +
				"data: [DONE]\n\n",
		},
		{
			name:   "response headers",
			req:    chatRequest("hello %.0s"),
			status: 200,
			header: http.Header{
				"Content-Type":        {"application/json"},
				"Openai-Organization": {"user-Qz7Canary-org"},
				"Openai-Project":      {"proj_Qz7Canary-project"},
				"X-Echo-Key":          {shapedKey("aws", 92)},
			},
			response: plainChatAnswer,
		},
	}
}

// hasMarker reports where b holds shapeMarker, or "".
func hasMarker(b []byte) string {
	i := bytes.Index(bytes.ToLower(b), []byte(shapeMarker))
	if i < 0 {
		return ""
	}
	return string(b[max(0, i-50):min(len(b), i+40)])
}

// shapeSend sends a request built by a shapeCase and reads the answer.
func shapeSend(t *testing.T, base string, sc shapeCase, key string, other bool) answer {
	t.Helper()
	method, path, query, h, body := sc.req(key, other)
	target := base + path
	if query != "" {
		target += "?" + query
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, readErr: rerr}
}

// TestKeyShapedSecretsNeverWritten records, for each place a key can
// travel (request body, URL path, query, request headers, response body,
// stream events, response headers), an exchange carrying keys of every
// shape there. The upstream gets the keys and the recording client gets
// the upstream's answer, keys included; the raw cassette file, the export,
// the API answers and the log do not hold one. In replay, the request with
// the same key and with another key both match and get a usable answer
// (JSON stays JSON, a stream keeps its events), and a miss that carries the
// key leaves it in no log either.
func TestKeyShapedSecretsNeverWritten(t *testing.T) {
	places := 0
	for _, sc := range shapeCases() {
		t.Run(sc.name, func(t *testing.T) {
			places++
			up := fake.New(t, fake.Verbatim(sc.status, sc.header, []byte(sc.response)))
			path := cassettePath(t)
			var logs lockedBuffer
			logTo := func(c *proxy.Config) {
				c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			key := shapedKey("openai", 1)
			rec := startProxy(t, proxy.ModeRecord, path, up.URL(), logTo)
			first := shapeSend(t, rec.URL(), sc, key, false)
			if first.status != 200 {
				t.Fatalf("record: %d %s", first.status, first.body)
			}
			if sc.sent != nil {
				if got := up.Requests(); len(got) != 1 || !sc.sent(got[0], key) {
					t.Fatalf("the upstream did not get the key: %+v", got)
				}
			}
			if sc.response != "" && !bytes.Equal(first.body, []byte(sc.response)) {
				t.Errorf("the recording client got %q, want the upstream's answer", first.body)
			}
			settle(t, rec.URL(), 1)
			seen := map[string][]byte{
				"GET /_llmproxy/log":          getBody(t, rec.URL()+"/_llmproxy/log"),
				"GET /_llmproxy/interactions": getBody(t, rec.URL()+"/_llmproxy/interactions"),
				"GET /_llmproxy/unused":       getBody(t, rec.URL()+"/_llmproxy/unused"),
			}
			rec.stop()

			rep := startProxy(t, proxy.ModeReplay, path, "", logTo, func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
			var export bytes.Buffer
			if err := rep.c.Export(&export); err != nil {
				t.Fatal(err)
			}
			if n := interactionCount(t, rep.c); n != 1 {
				t.Fatalf("%d interactions recorded, want 1", n)
			}
			for _, k := range []string{key, shapedKey("openai", 2)} {
				got := shapeSend(t, rep.URL(), sc, k, false)
				if got.status != 200 || got.header.Get(proxy.MissHeader) != "" {
					t.Fatalf("replay with key %s: %d %s, want the recording", k, got.status, got.body)
				}
				checkUsable(t, sc, got)
			}
			miss := shapeSend(t, rep.URL(), sc, key, true)
			if miss.status != http.StatusBadRequest || miss.header.Get(proxy.MissHeader) == "" {
				t.Fatalf("a request that differs elsewhere: %d %s, want a miss", miss.status, miss.body)
			}
			seen["miss answer"] = miss.body
			seen["GET /_llmproxy/log (replay)"] = getBody(t, rep.URL()+"/_llmproxy/log")
			seen["GET /_llmproxy/interactions (replay)"] = getBody(t, rep.URL()+"/_llmproxy/interactions")
			rep.stop()
			seen["cassette file"] = rawCassette(t, path)
			seen["export"] = export.Bytes()
			seen["log"] = []byte(logs.String())
			for name, b := range seen {
				if at := hasMarker(b); at != "" {
					t.Errorf("%s holds a key: …%s…", name, at)
				}
			}
			if !bytes.Contains(export.Bytes(), []byte(cassette.Redacted)) {
				t.Errorf("the export shows no %s where the keys were", cassette.Redacted)
			}
		})
	}
	t.Logf("key shapes: %d places, keys of 5 shapes and 6 secret names; keys found in cassette files, exports, API answers, miss answers and logs: 0", places)
}

// checkUsable checks that a replayed answer whose keys were redacted is
// still what a client can read: JSON, or a stream of the recorded events.
func checkUsable(t *testing.T, sc shapeCase, got answer) {
	t.Helper()
	switch wire.DetectFraming(sc.header.Get("Content-Type")) {
	case wire.FramingSSE:
		want := wire.Split(wire.FramingSSE, []byte(sc.response))
		evs := wire.Split(wire.FramingSSE, got.body)
		if len(evs) != len(want) || string(evs[len(evs)-1].Data) != "[DONE]" {
			t.Errorf("replayed stream has %d events, want %d ending in [DONE]: %q", len(evs), len(want), got.body)
		}
		for n, e := range evs[:len(evs)-1] {
			if !gjson.ValidBytes(e.Data) {
				t.Errorf("replayed event %d is not JSON: %q", n, e.Data)
			}
		}
	default:
		if !gjson.ValidBytes(got.body) {
			t.Errorf("replayed body is not JSON: %q", got.body)
		}
	}
	if at := hasMarker(got.body); at != "" {
		t.Errorf("replay served a key: …%s…", at)
	}
	for k, vs := range got.header {
		if at := hasMarker([]byte(strings.Join(vs, " "))); at != "" {
			t.Errorf("replay served a key in header %s: %s", k, at)
		}
	}
}
