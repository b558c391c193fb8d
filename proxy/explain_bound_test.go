package proxy

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// Past maxExplaining misses explained at once, a miss is answered at once
// without its closest recording, and says so; once one ends, the next is
// explained again.
func TestMissesExplainedAtOnceAreBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{Upstream: "openai", Kind: "openai-chat", Provider: "openai",
		Request:  cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"a"}]}`)},
		Response: cassette.Response{Status: 200, Body: []byte(`{}`)}}
	if _, err := c.AppendAll([]cassette.Keyed{{Key: "k", Shape: "s", Interaction: i}}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Mode: ModeReplay, Cassette: c})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func() string {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"b"}]}`))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	for range maxExplaining {
		s.explaining <- struct{}{}
	}
	if got := ask(); !strings.Contains(got, "closest recording was not looked for") || strings.Contains(got, "closest is") {
		t.Errorf("a miss past the bound says %s; want it answered without its closest recording, saying so", got)
	}
	<-s.explaining
	if got := ask(); !strings.Contains(got, "closest is interaction 1") {
		t.Errorf("a miss within the bound says %s; want its closest recording", got)
	}
}
