package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// sseUpstream streams n chat chunks, one every gap, then [DONE].
func sseUpstream(t *testing.T, n int, gap time.Duration) string {
	return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(gap):
			case <-done:
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}

// stallingWriter is a client that stops reading once, for stall, after its
// first few writes.
type stallingWriter struct {
	*httptest.ResponseRecorder
	writes int
	stall  time.Duration
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	s.writes++
	if s.writes == 3 {
		time.Sleep(s.stall)
	}
	return s.ResponseRecorder.Write(p)
}

// A client that pauses longer than --upstream-timeout mid-stream is not
// the upstream's silence: its stream completes and is recorded.
func TestSlowClientIsNotUpstreamSilence(t *testing.T) {
	up := sseUpstream(t, 8, 20*time.Millisecond)
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up, func(c *proxy.Config) {
		c.UpstreamTimeout = 200 * time.Millisecond
	})
	w := &stallingWriter{ResponseRecorder: httptest.NewRecorder(), stall: 700 * time.Millisecond}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatStreamAPI.body))
	req.Header.Set("Content-Type", "application/json")
	h.p.ServeHTTP(w, req)
	if !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
		t.Fatalf("the slow client's stream was cut: %q", w.Body.String())
	}
	settle(t, h.URL(), 1)
	if n := interactionCount(t, h.c); n != 1 {
		t.Errorf("%d interactions recorded, want 1", n)
	}
}

// A client that sends its headers and then trickles nothing more of its
// body gets 408 and its connection closed after --read-timeout; a slow
// response is not cut by it.
func TestSlowRequestBodyIsClosed(t *testing.T) {
	up := sseUpstream(t, 6, 100*time.Millisecond) // 600 ms, longer than the read timeout
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up, func(c *proxy.Config) {
		c.ReadTimeout = 200 * time.Millisecond
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the connection of a stalled body was not closed: %v (read %q)", err, got)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 408") || !strings.Contains(string(got), "--read-timeout") {
		t.Errorf("a stalled body got %q, want a 408 naming --read-timeout", got)
	}

	ok := send(t, h.URL(), chatStreamAPI.path, chatStreamAPI.body)
	if ok.status != 200 || ok.readErr != nil || !strings.HasSuffix(string(ok.body), "data: [DONE]\n\n") {
		t.Errorf("a stream longer than the read timeout: %d %v %q", ok.status, ok.readErr, ok.body)
	}
}

// A replayed answer that takes longer than --read-timeout after the body
// was read (here held back by --latency) is not cut, on a request with a
// body and on one without, and the connection serves the next request: the
// read deadline of the body is lifted once the body is read.
func TestReadTimeoutSparesLongReplies(t *testing.T) {
	up := fake.New(t, numberedAnswers(3, 0))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	for n, prompt := range []string{"first", "second"} {
		if got, err := askChat(context.Background(), rec.URL(), prompt, n == 1); err != nil || got != fmt.Sprintf("answer %d", n+1) {
			t.Fatalf("recording %q: %q, %v", prompt, got, err)
		}
	}
	models := getOK(t, http.DefaultClient, rec.URL()+"/v1/models")
	rec.stop()

	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
		c.ReadTimeout, c.Latency = 100*time.Millisecond, 400*time.Millisecond
	})
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}} // one connection, kept alive
	for n, prompt := range []string{"first", "second"} {
		got, err := askChat(context.Background(), rep.URL(), prompt, n == 1, option.WithHTTPClient(client))
		if want := fmt.Sprintf("answer %d", n+1); err != nil || got != want {
			t.Errorf("replaying %q with a latency over the read timeout: %q, %v; want %q", prompt, got, err, want)
		}
	}
	if got := getOK(t, client, rep.URL()+"/v1/models"); got != models {
		t.Errorf("replaying a request without a body: %q, want %q", got, models)
	}
}

// getOK is the body of a GET that must answer 200.
func getOK(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %q, %v", url, resp.StatusCode, b, err)
	}
	return string(b)
}

// A response past --max-response, counted decoded, is cut for the client
// as a broken upstream's would be, nothing is recorded, and the log says
// why: an endless stream and a gzip bomb.
func TestMaxResponse(t *testing.T) {
	endless := rawUpstream(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("x", 1000) + "\"}}]}\n\n")
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(`{"id":"x","pad":"`))
	zw.Write(bytes.Repeat([]byte("0"), 64<<20))
	zw.Write([]byte(`"}`))
	zw.Close()
	bomb := rawUpstream(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	})
	for _, tc := range []struct {
		name, upstream string
		api            faultAPI
	}{
		{"endless stream", endless, chatStreamAPI},
		{"gzip bomb", bomb, chatAPI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			h := startProxy(t, proxy.ModeRecord, cassettePath(t), tc.upstream, func(c *proxy.Config) {
				c.MaxResponse = 1 << 20
				c.Logger = slog.New(slog.NewTextHandler(logs, nil))
			})
			got := send(t, h.URL(), tc.api.path, tc.api.body)
			if got.readErr == nil {
				t.Errorf("the client's response ended cleanly after %d bytes; it must be cut", len(got.body))
			}
			if len(got.body) > 2<<20 {
				t.Errorf("the client got %d bytes, past the 1 MiB limit", len(got.body))
			}
			settle(t, h.URL(), 1)
			if n := interactionCount(t, h.c); n != 0 {
				t.Errorf("%d interactions recorded, want 0", n)
			}
			if !bytes.Contains(logs.Bytes(), []byte("--max-response")) {
				t.Errorf("no log line names --max-response: %s", logs.Bytes())
			}
		})
	}
}

// Request bodies in flight are bounded in total: past --max-body-total a
// new request is answered 503 with Retry-After, and once the bodies in
// flight are done a request of the same size goes through.
func TestMaxBodyTotal(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.URL(), func(c *proxy.Config) {
		c.MaxBody = 8 << 10
		c.MaxBodyTotal = 10 << 10
	})
	pad := strings.Repeat(" ", 6<<10)
	// A request whose 6 KiB body is still arriving holds its bytes.
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := chatAPI.body + pad
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)-1])
	time.Sleep(300 * time.Millisecond)

	got := send(t, h.URL(), chatAPI.path, chatAPI.body+pad)
	if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") == "" ||
		!strings.Contains(string(got.body), "--max-body-total") {
		t.Fatalf("a body past the total in flight got %d (Retry-After %q) %q, want 503 naming --max-body-total",
			got.status, got.header.Get("Retry-After"), got.body)
	}
	io.WriteString(conn, body[len(body)-1:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the first request: %v %v", resp, err)
	}
	resp.Body.Close()
	// The first request's bytes are given back when its handler is done
	// with them (after its recording is written), a moment after its
	// client read the answer: a client that meets the 503 retries, as its
	// Retry-After says, and gets through.
	deadline := time.Now().Add(5 * time.Second)
	for {
		again := send(t, h.URL(), chatAPI.path, chatAPI.body+pad)
		if again.status == 200 {
			break
		}
		if again.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the bodies in flight were done, a request got %d %q", again.status, again.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// When the default upstream is the openai one, /v1/... and /openai/v1/...
// are one route: a recording made through either replays through the
// other, is stored under one upstream, and misses show one form.
func TestOpenAISpellingsAreOneRoute(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	for _, tc := range []struct{ record, replay string }{
		{"/v1/chat/completions", "/openai/v1/chat/completions"},
		{"/openai/v1/chat/completions", "/v1/chat/completions"},
	} {
		t.Run(tc.record, func(t *testing.T) {
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.URL())
			if got := send(t, rec.URL(), tc.record, chatAPI.body); got.status != 200 {
				t.Fatalf("record: %d %s", got.status, got.body)
			}
			// Through the other spelling the same request is logged and
			// exported alike.
			if got := send(t, rec.URL(), tc.replay, chatAPI.body); got.status != 200 {
				t.Fatalf("record: %d %s", got.status, got.body)
			}
			settle(t, rec.URL(), 2)
			resp, err := http.Get(rec.URL() + "/_llmproxy/log")
			if err != nil {
				t.Fatal(err)
			}
			logged, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			e := gjson.GetManyBytes(logged, "entries.0.upstream", "entries.0.path", "entries.1.upstream", "entries.1.path")
			if e[0].String() != e[2].String() || e[1].String() != e[3].String() {
				t.Errorf("the log shows the two spellings apart: %s", logged)
			}
			var exp bytes.Buffer
			if err := rec.c.Export(&exp); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(exp.String(), `"upstream": "openai"`) + strings.Count(exp.String(), `"upstream":"openai"`); n != 2 {
				t.Errorf("the export does not hold both under upstream openai:\n%s", exp.String())
			}
			rec.stop()
			rep := startProxy(t, proxy.ModeReplay, path, "")
			got := send(t, rep.URL(), tc.replay, chatAPI.body)
			if got.status != 200 {
				t.Fatalf("recorded through %s, replayed through %s: %d %s", tc.record, tc.replay, got.status, got.body)
			}
			all, err := rep.c.All()
			if err != nil || len(all) != 2 || all[0].Upstream != "openai" || all[1].Upstream != "openai" {
				t.Fatalf("stored upstream: %v %v, want two interactions under openai", all, err)
			}
			miss := send(t, rep.URL(), "/openai/v1/embeddings", `{"model":"m","input":"x"}`)
			msg := gjson.GetBytes(miss.body, "error.message").String()
			if strings.Contains(msg, "/openai/") || !strings.Contains(msg, "(POST /v1/embeddings)") || !strings.Contains(msg, "(POST /v1/chat/completions)") {
				t.Errorf("the miss shows another form than the unprefixed one: %s", msg)
			}
		})
	}
}

// A cassette recorded before the two spellings were one route holds an
// unprefixed request under the upstream "default": it replays through both.
func TestOldDefaultRecordingsReplayThroughBoth(t *testing.T) {
	path := cassettePath(t)
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AppendAll([]cassette.Keyed{{Key: "old", Shape: "old", Interaction: &cassette.Interaction{Upstream: cassette.DefaultUpstream, Kind: "openai-chat", Provider: "openai",
		Request:  cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: []byte(chatAPI.body)},
		Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"old"}`)}}}})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
	for _, p := range []string{"/v1/chat/completions", "/openai/v1/chat/completions"} {
		if got := send(t, rep.URL(), p, chatAPI.body); got.status != 200 || string(got.body) != `{"id":"old"}` {
			t.Errorf("an old default recording through %s: %d %s", p, got.status, got.body)
		}
	}
}
