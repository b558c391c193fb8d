package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// The responses being recorded at once hold at most MaxRecordingTotal
// bytes: a second long stream that would pass it is cut and not recorded,
// the first completes and is, and the bytes come back once they are
// written, so a later response is recorded again.
func TestRecordingTotalIsBounded(t *testing.T) {
	release := make(chan struct{})
	event := "data: " + strings.Repeat("x", 10_000) + "\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for range 70 { // 700 KB
			_, _ = io.WriteString(w, event)
		}
		_, _ = io.WriteString(w, "data: half\n\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.URL, func(c *proxy.Config) { c.MaxRecordingTotal = 1 << 20 })
	ask := func(n int) (*http.Response, *bufio.Reader) {
		resp, err := http.Post(h.URL()+"/v1/chat/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"%d"}]}`, n)))
		if err != nil {
			t.Fatal(err)
		}
		return resp, bufio.NewReaderSize(resp.Body, 1<<20)
	}
	// readHalf reads up to the event that says half the stream is out.
	readHalf := func(r *bufio.Reader) error {
		for {
			line, err := r.ReadString('\n')
			if err != nil || line == "data: half\n" {
				return err
			}
		}
	}
	first, fr := ask(1)
	defer first.Body.Close()
	if err := readHalf(fr); err != nil {
		t.Fatalf("the first stream: %v", err)
	}
	second, sr := ask(2)
	if _, err := io.ReadAll(sr); err == nil {
		t.Errorf("the second stream, past the total, was not cut")
	}
	second.Body.Close()
	close(release)
	if rest, err := io.ReadAll(fr); err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the first stream did not complete: %v", err)
	}
	// The API answers once the first is written, and with it its bytes
	// given back.
	if resp, err := http.Get(h.URL() + "/_llmproxy/interactions"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	third, tr := ask(3)
	if b, err := io.ReadAll(tr); err != nil || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("a stream after both ended did not complete: %v", err)
	}
	third.Body.Close()
	resp, err := http.Get(h.URL() + "/_llmproxy/interactions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Interactions []struct{ Request struct{ Body string } } `json:"interactions"`
		Total        int                                       `json:"total"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Total != 2 {
		t.Errorf("%d interactions recorded, want 2 (the first and the third; the cut one not)", list.Total)
	}
}
