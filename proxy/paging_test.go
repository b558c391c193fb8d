package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// /_llmproxy/log, /interactions and /unused answer a page of 100 by
// default, with the total and the cursor of the next page; ?limit= asks
// a larger page (up to 1000), and the pages together list everything once.
func TestAPIListsArePaged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x"}`)
	}))
	defer up.Close()
	const n = 150
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.URL)
	for k := range n {
		if got := send(t, h.URL(), "/v1/chat/completions", fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%d"}]}`, k)); got.status != 200 {
			t.Fatalf("request %d: %d", k, got.status)
		}
	}
	type page struct {
		Total        int               `json:"total"`
		Next         uint64            `json:"next"`
		Entries      []json.RawMessage `json:"entries"`
		Interactions []json.RawMessage `json:"interactions"`
		Unused       []json.RawMessage `json:"unused"`
	}
	get := func(path string) page {
		resp, err := http.Get(h.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return p
	}
	items := func(p page) int { return len(p.Entries) + len(p.Interactions) + len(p.Unused) }
	for _, api := range []string{"/_llmproxy/log", "/_llmproxy/interactions", "/_llmproxy/unused"} {
		first := get(api)
		if items(first) != 100 || first.Total != n || first.Next != 100 {
			t.Errorf("GET %s: %d items, total %d, next %d; want 100, %d, 100", api, items(first), first.Total, first.Next, n)
		}
		rest := get(fmt.Sprintf("%s?after=%d", api, first.Next))
		if items(rest) != n-100 {
			t.Errorf("GET %s?after=%d: %d items, want %d", api, first.Next, items(rest), n-100)
		}
		if all := get(api + "?limit=5000"); items(all) != n {
			t.Errorf("GET %s?limit=5000: %d items, want all %d", api, items(all), n)
		}
	}
}
