package proxy_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// refreshTurn is the body of turn k (from 1) of a three-turn chat whose
// user prompts from turn 2 on say prompt.
func refreshTurn(k int, prompt string) []byte {
	msgs := `{"role":"user","content":"plan a trip"}`
	for j := 2; j <= k; j++ {
		msgs += fmt.Sprintf(`,{"role":"assistant","content":"answer %d"},{"role":"user","content":"%s %d"}`, j-1, prompt, j)
	}
	return fmt.Appendf(nil, `{"model":"gpt-4o-mini","messages":[%s]}`, msgs)
}

// TestSessionRefresh: a session opened with refresh replays what matches,
// records what misses, and at its end drops the turns the re-recording
// superseded; its summary says so.
func TestSessionRefresh(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(chatAnswer("ok", "", ""))
	}))
	t.Cleanup(up.Close)
	c := startCtl(t, proxy.ModeReplay, up.URL)
	send := func(prompt string) {
		for k := 1; k <= 3; k++ {
			resp, err := http.Post(c.url+"/v1/chat/completions", "application/json", bytes.NewReader(refreshTurn(k, prompt)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("turn %d (%s): status %d", k, prompt, resp.StatusCode)
			}
		}
	}
	c.mustCall(200, http.MethodPut, "/_llmproxy/session", `{"cassette":"trip.cassette","mode":"auto"}`)
	send("cheap")
	c.mustCall(200, http.MethodDelete, "/_llmproxy/session", "")

	c.mustCall(200, http.MethodPut, "/_llmproxy/session", `{"cassette":"trip.cassette","mode":"record","refresh":true}`)
	send("fast")
	out := c.mustCall(200, http.MethodDelete, "/_llmproxy/session", "")
	if hits.Load() != 5 {
		t.Errorf("upstream saw %d requests, want 5 (3, then turns 2 and 3)", hits.Load())
	}
	want := "conversation 1 (interactions 1-3, 3 turns): kept 1 turn, re-recorded from turn 2 (2 turns), dropped 2"
	if got := field(out, "ended", "refresh", "conversations"); fmt.Sprint(got) != fmt.Sprint([]any{want}) {
		t.Errorf("ended.refresh.conversations = %v, want [%s]", got, want)
	}
	if got := field(out, "ended", "mode"); got != "auto" {
		t.Errorf("a record session with refresh has mode %v, want auto", got)
	}

	cs, err := cassette.Open(filepath.Join(c.dir, "trip.cassette"), cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var got [][]byte
	if err := cs.ForEach(func(i *cassette.Interaction) error { got = append(got, i.Request.Body); return nil }); err != nil {
		t.Fatal(err)
	}
	wantBodies := [][]byte{refreshTurn(1, "fast"), refreshTurn(2, "fast"), refreshTurn(3, "fast")}
	if !slices.EqualFunc(got, wantBodies, bytes.Equal) {
		t.Errorf("the refreshed cassette holds\n%s\nwant\n%s", bytes.Join(got, []byte("\n")), bytes.Join(wantBodies, []byte("\n")))
	}
}

func TestSessionRefreshBadSpec(t *testing.T) {
	c := startCtl(t, proxy.ModeAuto, "")
	writeAnswers(t, filepath.Join(c.dir, "a.cassette"), "a", 1)
	for _, body := range []string{
		`{"cassette":"a.cassette","mode":"replay","refresh":true}`,
		`{"cassette":"a.cassette","prune":true}`,
		`{"cassette":"missing.cassette","refresh":true}`,
	} {
		if status, out := c.call(http.MethodPut, "/_llmproxy/session", body); status != http.StatusBadRequest {
			t.Errorf("PUT %s: status %d, want 400: %v", body, status, out)
		}
	}
}
