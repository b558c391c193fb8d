package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// TestMockRedactsKeyShapedSecrets: a key-shaped secret in what a request to
// mock says (a user text that misses, a tool result that is answered) is
// redacted everywhere mock reports it, as replay redacts it: the 400 answer,
// the log line, /_llmproxy/log and the web view's log.
func TestMockRedactsKeyShapedSecrets(t *testing.T) {
	var logged syncBuffer
	m := startMock(t, []string{weatherScenario}, func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	for n, shape := range []string{"openai", "anthropic", "jwt"} {
		t.Run("user text "+shape, func(t *testing.T) {
			prompt := fmt.Sprintf("my key is %s, what's the weather?", shapedKey(shape, n))
			body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": prompt}}})
			status, _, answer := m.post("/v1/chat/completions", "user-"+shape, string(body))
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want the miss's 400: %s", status, answer)
			}
			if at := hasMarker([]byte(answer)); at != "" {
				t.Errorf("the 400 answer holds the key: %s", at)
			}
		})
	}
	t.Run("tool result google", func(t *testing.T) {
		result := fmt.Sprintf(`{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny","note":"%s"}`, shapedKey("google", 9))
		status, _, answer := m.post("/v1/chat/completions", "tool-google", chatBody(result, false))
		if status != http.StatusOK { // the result holds the fixture's
			t.Fatalf("status %d: %s", status, answer)
		}
	})
	places := map[string][]byte{}
	for _, path := range []string{"/_llmproxy/log", "/_llmproxy/ui/log"} {
		resp, err := http.Get(m.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		places[path] = b
	}
	places["log lines"] = logged.Bytes() // /log waited for the answers, and they log before they settle
	for place, b := range places {
		if !bytes.Contains(b, []byte("REDACTED")) && place != "log lines" {
			t.Errorf("%s shows nothing redacted: is the request content there at all?", place)
		}
		if at := hasMarker(b); at != "" {
			t.Errorf("%s holds a key: %s", place, at)
		}
	}
}
