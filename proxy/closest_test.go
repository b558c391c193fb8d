package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// A miss names the recording that is closest: a request of 200 numbers of
// which one differs from a recording is closest to that recording, not to
// one recorded before it in another shape, however few paths that other
// one differs at.
func TestMissNamesTheClosestRecording(t *testing.T) {
	numbers := func(n, changed int) []int {
		out := make([]int, n)
		for k := range out {
			out[k] = k
		}
		if changed >= 0 {
			out[changed] = -1
		}
		return out
	}
	body := func(input any) string {
		b, _ := json.Marshal(map[string]any{"model": "text-embedding-3-small", "input": input})
		return string(b)
	}
	others := map[string]any{
		"one number fewer": numbers(199, -1),
		"a string":         "0 1 2 3",
		"nested":           [][]int{numbers(200, -1)},
		"an object":        map[string]any{"numbers": numbers(200, -1)},
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	for name, other := range others {
		path := cassettePath(t)
		rec := startProxy(t, proxy.ModeRecord, path, up.URL)
		for _, b := range []string{body(other), body(numbers(200, -1))} {
			if got := send(t, rec.URL(), "/v1/embeddings", b); got.status != 200 {
				t.Fatalf("%s: recording: %d %s", name, got.status, got.body)
			}
		}
		rec.stop()
		rep := startProxy(t, proxy.ModeReplay, path, "")
		got := send(t, rep.URL(), "/v1/embeddings", body(numbers(200, 100)))
		if got.status != 400 || !strings.Contains(string(got.body), "closest is interaction 2") {
			t.Errorf("%s recorded first: the miss says %s; want the closest to be interaction 2, which differs at input.100 only", name, got.body)
		}
		rep.stop()
	}

}
