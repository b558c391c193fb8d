package proxy_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// TestSSELineEndingsRecorded records an OpenAI chat stream written with each
// of the three SSE line endings. The client gets the upstream's bytes, the
// interaction is recorded, and a replay serves the same bytes. Before, a
// stream of bare CRs reached the client and was dropped from the cassette
// ("stream ended mid-event"): the last event's final CR waited for an LF
// that never came.
func TestSSELineEndingsRecorded(t *testing.T) {
	lf := "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		": keep-alive\n\n" +
		"event: message\ndata: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct{ name, eol string }{{"LF", "\n"}, {"CRLF", "\r\n"}, {"CR", "\r"}} {
		t.Run(tc.name, func(t *testing.T) {
			stream := strings.ReplaceAll(lf, "\n", tc.eol)
			up := fake.New(t, fake.Verbatim(200, http.Header{"Content-Type": {"text/event-stream"}}, []byte(stream)))
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.URL())
			got := send(t, rec.URL(), "/v1/chat/completions", body)
			if got.status != 200 || string(got.body) != stream {
				t.Fatalf("record: %d %q, want the upstream's stream", got.status, got.body)
			}
			settle(t, rec.URL(), 1)
			rec.stop()
			rep := startProxy(t, proxy.ModeReplay, path, "")
			if n := interactionCount(t, rep.c); n != 1 {
				t.Fatalf("%d interactions recorded, want 1", n)
			}
			again := send(t, rep.URL(), "/v1/chat/completions", body)
			if again.status != 200 || again.header.Get(proxy.MissHeader) != "" || !bytes.Equal(again.body, got.body) {
				t.Errorf("replay: %d %q, want the recorded bytes %q", again.status, again.body, got.body)
			}
		})
	}
}
