package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// heldUpstream streams for requests whose body says "slow": it sends one
// event, signals started, and holds the rest until release is closed (or
// breaks the stream when the body also says "break"). Other requests get a
// JSON answer at once.
func heldUpstream(t *testing.T, started chan<- string, release <-chan struct{}) string {
	return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		// rawUpstream drained the body; the tests put the marker in the query.
		q := r.URL.Query().Get("q")
		if !strings.Contains(q, "slow") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"answer":%q}`, q)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		started <- q
		select {
		case <-release:
		case <-done:
			return
		}
		if strings.Contains(q, "break") {
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
	})
}

// recordedQueries lists the q parameter of each stored interaction in id order.
func recordedQueries(t *testing.T, path string) []string {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	if err := c.ForEach(func(i *cassette.Interaction) error {
		got = append(got, fmt.Sprintf("%d:%s", i.ID, strings.TrimPrefix(i.Request.Query, "q=")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRecordWritesInArrivalOrder sends a slow stream, then a fast request
// while the stream is held. The fast answer must not wait for the stream,
// yet the cassette must list the interactions in the order the requests
// arrived: an agent's next turn, sent as soon as the last event of a stream
// arrived, is never recorded before that stream.
func TestRecordWritesInArrivalOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  proxy.Mode
		slow  string
		want  []string
		delta int // interactions the log shows as recorded
	}{
		{"record", proxy.ModeRecord, "slow", []string{"1:slow", "2:fast", "3:after"}, 3},
		{"auto", proxy.ModeAuto, "slow", []string{"1:slow", "2:fast", "3:after"}, 3},
		// A stream that breaks leaves nothing, and does not hold back the
		// interactions that arrived after it.
		{"earlier stream breaks", proxy.ModeRecord, "slow-break", []string{"1:fast", "2:after"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan string, 1), make(chan struct{})
			up := heldUpstream(t, started, release)
			path := cassettePath(t)
			h := startProxy(t, tc.mode, path, up)

			slowDone := make(chan answer, 1)
			go func() {
				slowDone <- sendAsync(h.URL(), "/v1/x?q="+tc.slow)
			}()
			if q := <-started; q != tc.slow {
				t.Fatalf("upstream started %q", q)
			}
			// The fast request completes while the stream is held.
			fast := make(chan answer, 1)
			go func() { fast <- sendAsync(h.URL(), "/v1/x?q=fast") }()
			select {
			case a := <-fast:
				if a.status != http.StatusOK || !bytes.Contains(a.body, []byte("fast")) {
					t.Fatalf("fast answer %d %s %v", a.status, a.body, a.readErr)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the fast request waited for the held stream")
			}
			close(release)
			<-slowDone
			// A request after both is written after both.
			if a := sendAsync(h.URL(), "/v1/x?q=after"); a.status != http.StatusOK {
				t.Fatalf("after: %d %s", a.status, a.body)
			}
			entries, err := h.p.Log(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			recorded := 0
			for _, e := range entries {
				if e.Interaction != 0 {
					recorded++
				}
			}
			if recorded != tc.delta {
				t.Errorf("log shows %d recorded interactions, want %d: %+v", recorded, tc.delta, entries)
			}
			h.stop()
			if got := recordedQueries(t, path); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("cassette holds %v, want %v", got, tc.want)
			}
		})
	}
}

// sendAsync is send without a testing.T, for use from goroutines.
func sendAsync(base, path string) answer {
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"model":"m"}`))
	if err != nil {
		return answer{readErr: err}
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return answer{readErr: err}
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, readErr: rerr}
}

// TestRecordAfterClose ends a stream after the proxy was closed (as when a
// shutdown times out with a request in flight): the client still gets its
// answer, nothing is written to the cassette, and nothing panics.
func TestRecordAfterClose(t *testing.T) {
	started, release := make(chan string, 1), make(chan struct{})
	up := heldUpstream(t, started, release)
	path := cassettePath(t)
	h := startProxy(t, proxy.ModeRecord, path, up)
	if a := sendAsync(h.URL(), "/v1/x?q=before"); a.status != http.StatusOK {
		t.Fatalf("before: %d %s", a.status, a.body)
	}
	// The client may hold a whole answer (it had a Content-Length) before
	// the handler committed it; reading the log waits for that.
	if _, err := h.p.Log(context.Background()); err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan answer, 1)
	go func() { slowDone <- sendAsync(h.URL(), "/v1/x?q=slow") }()
	<-started
	if err := h.p.Close(); err != nil {
		t.Fatal(err)
	}
	// The interaction that had ended is in the cassette.
	if n := interactionCount(t, h.c); n != 1 {
		t.Fatalf("after Close %d interactions, want 1", n)
	}
	close(release)
	if a := <-slowDone; a.status != http.StatusOK || a.readErr != nil || !bytes.Contains(a.body, []byte("[DONE]")) {
		t.Fatalf("the stream that ended after Close got %d %v %q", a.status, a.readErr, a.body)
	}
	h.stop()
	if got := recordedQueries(t, path); strings.Join(got, " ") != "1:before" {
		t.Errorf("cassette holds %v, want only the interaction that ended before Close", got)
	}
}

// TestRecordBurstIsWhole records many requests from several clients at
// once and closes the proxy as soon as the last answer arrived: every
// answered request is in the cassette, once, in an order consistent with
// each client's own sequence.
func TestRecordBurstIsWhole(t *testing.T) {
	up := heldUpstream(t, make(chan string, 1), nil)
	path := cassettePath(t)
	h := startProxy(t, proxy.ModeRecord, path, up)
	const clients, each = 4, 25
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			for n := range each {
				if a := sendAsync(h.URL(), fmt.Sprintf("/v1/x?q=c%d-%02d", c, n)); a.status != http.StatusOK {
					errs <- fmt.Errorf("client %d request %d: %d %s %v", c, n, a.status, a.body, a.readErr)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	h.stop()
	got := recordedQueries(t, path)
	if len(got) != clients*each {
		t.Fatalf("%d interactions, want %d", len(got), clients*each)
	}
	last := map[string]string{}
	for k, g := range got {
		id, q, _ := strings.Cut(g, ":")
		if id != fmt.Sprint(k+1) {
			t.Errorf("interaction %d has id %s", k+1, id)
		}
		client, n, _ := strings.Cut(q, "-")
		if n <= last[client] {
			t.Errorf("%s recorded after %s-%s", q, client, last[client])
		}
		last[client] = n
	}
}
