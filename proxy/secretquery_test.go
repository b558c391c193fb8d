package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// TestSecretQuerySpellingsReplay records a request whose query carries a
// secret in one spelling — a name in another case, escaped, after a ';' —
// and replays it without the secret and with another value: both match,
// as with the plain spelling. A change elsewhere in the query misses, and
// the miss names that parameter alone, never the secret.
func TestSecretQuerySpellingsReplay(t *testing.T) {
	for _, secret := range []string{"key=k1", "KEY=k1", "Key=k1", "ke%79=k1", "K%45Y=k1", "Api_Key=k1", "API_KEY=k1",
		"api%5Fkey=k1", "access_token=k1", "Access_Token=k1", "ACCESS%5FTOKEN=k1"} {
		for _, sep := range []string{"&", ";"} {
			t.Run(secret+" "+sep, func(t *testing.T) {
				up := newHeaderUpstream(t)
				path := cassettePath(t)
				rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL)
				if status, body := rawGet(t, rec.URL(), http.MethodGet, "/v1/models?alt=sse"+sep+secret); status != 200 {
					t.Fatalf("record: %d %s", status, body)
				}
				settle(t, rec.URL(), 1)
				rec.stop()
				rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
				other := strings.Replace(secret, "k1", "k2", 1)
				for _, q := range []string{"alt=sse", "alt=sse" + sep + other, other + sep + "alt=sse", "alt=sse&" + other, "alt=sse;" + other} {
					if status, body := rawGet(t, rep.URL(), http.MethodGet, "/v1/models?"+q); status != 200 {
						t.Errorf("replay ?%s: %d %s, want the recording", q, status, body)
					}
				}
				status, body := rawGet(t, rep.URL(), http.MethodGet, "/v1/models?alt=json"+sep+other)
				if status != 400 || !strings.Contains(body, "query.alt: got json, recorded sse") {
					t.Errorf("replay ?alt=json: %d %s, want a miss at query.alt", status, body)
				}
				lower := strings.ToLower(body)
				for _, name := range []string{"query.key", "query.api_key", "query.access_token", "k2", "%"} {
					if strings.Contains(lower, name) && !strings.Contains(name, "%") || name == "%" && strings.Contains(body, "query.ke%") {
						t.Errorf("the miss names the secret (%s): %s", name, body)
					}
				}
			})
		}
	}
}
