package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// cacheUpstream answers a chat request with headers a cached reply must
// hand out unchanged: a policy of its own (which the proxy's sandbox
// appends to), a header of two values, and a body or stream naming the
// prompt.
func cacheUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := w.Header()
		h["Content-Security-Policy"] = []string{"default-src 'none'"}
		h["X-Two"] = []string{"one", "two"}
		if strings.Contains(string(body), `"stream":true`) {
			h.Set("Content-Type", "text/event-stream")
			for k := range 3 {
				fmt.Fprintf(w, "data: {\"n\":%d,\"of\":%q}\n\n", k, body[len(body)-12:])
				w.(http.Flusher).Flush()
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		h.Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo":%q}`, body)
	}))
	t.Cleanup(up.Close)
	return up
}

func cacheRequest(k int, stream bool) string {
	return fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"prompt %03d"}]}`, stream, k)
}

// wholeAnswer posts body and returns the answer as the client sees it: the
// status, the headers but Date, and the body.
func wholeAnswer(t *testing.T, base, body string) string {
	t.Helper()
	got, err := answerOf(base, body)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func answerOf(base, body string) (string, error) {
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	resp.Header.Del("Date")
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d\n", resp.StatusCode)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range resp.Header {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&sb, "%s: %q\n", k, resp.Header[k])
	}
	sb.Write(b)
	return sb.String(), nil
}

// TestReplyCacheServesSameAnswers: replay of a read-only cassette keeps
// what it serves (proxy's replyCache), and an answer served again from
// what was kept is byte for byte the answer read from the file — body,
// stream, status and every header, the proxy's sandbox policy appended
// once to the recording's own however often the kept headers are served
// — with the cache on, off, and too small to keep anything.
func TestReplyCacheServesSameAnswers(t *testing.T) {
	up := cacheUpstream(t)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL)
	var requests []string
	for k := range 4 {
		for _, stream := range []bool{false, true} {
			requests = append(requests, cacheRequest(k, stream))
			wholeAnswer(t, rec.URL(), requests[len(requests)-1])
		}
	}
	rec.stop()

	var want []string
	for name, size := range map[string]int64{"off": -1, "tiny": 1, "default": 0} {
		t.Run(name, func(t *testing.T) {
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
				c.OnExhausted = proxy.ExhaustedRepeatLast
				c.ReplyCache = size
			})
			for round := range 3 {
				for k, req := range requests {
					got := wholeAnswer(t, rep.URL(), req)
					if want == nil || len(want) <= k {
						want = append(want, got)
						if n := strings.Count(got, "sandbox"); n != 1 {
							t.Fatalf("request %d: the sandbox policy %d times, want once:\n%s", k, n, got)
						}
						continue
					}
					if got != want[k] {
						t.Fatalf("round %d, request %d:\n%s\nwant\n%s", round, k, got, want[k])
					}
				}
			}
		})
	}
}

// TestReplyCacheParallel: many requests served at once from replies kept
// and being kept get their own answers, under -race.
func TestReplyCacheParallel(t *testing.T) {
	up := cacheUpstream(t)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL)
	want := make([]string, 16)
	for k := range want {
		wholeAnswer(t, rec.URL(), cacheRequest(k, k%2 == 1))
	}
	rec.stop()
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
	for k := range want {
		want[k] = wholeAnswer(t, rep.URL(), cacheRequest(k, k%2 == 1))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 40 {
				k := (g*7 + n) % len(want)
				if got, err := answerOf(rep.URL(), cacheRequest(k, k%2 == 1)); err != nil || got != want[k] {
					t.Errorf("request %d: %v\n%s\nwant\n%s", k, err, got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
}
