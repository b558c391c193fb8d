package proxy

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// readOnlyReplies writes n interactions with bodies of size bytes, reopens
// the cassette read-only and returns it.
func readOnlyReplies(t *testing.T, n, size int) *cassette.Cassette {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var items []cassette.Keyed
	for k := range n {
		i := &cassette.Interaction{Upstream: "openai", Kind: "openai-chat",
			Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions"},
			Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}},
				Body: cassette.Body(fmt.Sprintf("%0*d", size, k))}}
		items = append(items, cassette.Keyed{Interaction: i, Key: fmt.Sprint("key ", k), Shape: "shape"})
	}
	if _, err := c.AppendAll(items); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err = cassette.Open(path, cassette.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// keepAll offers every reply of c to the cache and returns how many it
// kept.
func keepAll(t *testing.T, c *cassette.Cassette, rc *replyCache, n int) int {
	t.Helper()
	kept := 0
	err := c.Read(func(r *cassette.Reader) error {
		for id := uint64(1); id <= uint64(n); id++ {
			rep, err := r.Reply(id)
			if err != nil {
				return err
			}
			rc.keepIDs(fmt.Sprint("key ", id-1), []uint64{id})
			if k := rc.keep(id, &rep); k != nil {
				kept++
				if got := string(k.rep.Body()); got != string(rep.Body()) {
					t.Fatalf("interaction %d kept as %q, want %q", id, got, rep.Body())
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

// TestReplyCacheBudget: the caches of one server together hold no more
// than their budget, keep what fits and nothing after, give their bytes
// back when dropped (once, however often dropped), and a budget too small
// for a cassette's slots keeps none of its replies.
func TestReplyCacheBudget(t *testing.T) {
	const n, size = 40, 1000
	c := readOnlyReplies(t, n, size)
	b := &cacheBudget{limit: 16 << 10}
	first := newReplyCache(b, n)
	kept := keepAll(t, c, first, n)
	if kept == 0 || kept == n {
		t.Fatalf("a 16 KB budget kept %d of %d replies of %d bytes, want some but not all", kept, n, size)
	}
	if used := b.used.Load(); used > b.limit || used != first.held.Load() {
		t.Fatalf("budget used %d, cache holds %d, limit %d", used, first.held.Load(), b.limit)
	}
	for id := uint64(1); id <= n; id++ {
		if k := first.reply(id); (k != nil) != (id <= uint64(kept)) {
			t.Fatalf("interaction %d kept %v; want the first %d kept", id, k != nil, kept)
		}
	}
	second := newReplyCache(b, n)
	if more := keepAll(t, c, second, n); more != 0 {
		t.Fatalf("a second cache on a spent budget kept %d replies", more)
	}
	first.drop()
	first.drop()
	if used := b.used.Load(); used != second.held.Load() {
		t.Fatalf("after the first cache's drop the budget has %d used, want the second's %d", used, second.held.Load())
	}
	if again := keepAll(t, c, second, n); again != kept {
		t.Fatalf("with the budget given back the second cache kept %d, want %d", again, kept)
	}

	small := newReplyCache(&cacheBudget{limit: 8 * n}, n) // not room for n+1 slots
	if got := keepAll(t, c, small, n); got != 0 || small.reply(1) != nil {
		t.Fatalf("a budget without room for the slots kept %d replies", got)
	}
	if newReplyCache(&cacheBudget{}, n) != nil || newReplyCache(nil, n) != nil {
		t.Fatal("no budget made a cache")
	}
}

// TestReplyCacheKeepsHeadersUnshared: the header values a kept reply hands
// out have no room to grow, so that a writer appending to one (as the
// sandbox does to a recording's own policy) copies it instead of writing
// into the next serve's.
func TestReplyCacheKeepsHeadersUnshared(t *testing.T) {
	c := readOnlyReplies(t, 1, 10)
	rc := newReplyCache(&cacheBudget{limit: 1 << 20}, 1)
	keepAll(t, c, rc, 1)
	k := rc.reply(1)
	if k == nil {
		t.Fatal("not kept")
	}
	for name, vs := range k.header {
		if len(vs) != cap(vs) {
			t.Errorf("%s: %d values in room for %d", name, len(vs), cap(vs))
		}
	}
	h := http.Header{}
	k.setHeaders(h)
	h["Content-Type"] = append(h["Content-Type"], "x")
	if got := strings.Join(k.header["Content-Type"], ","); got != "application/json" {
		t.Fatalf("kept Content-Type became %q", got)
	}
	if got := k.header.Get("Content-Length"); got != "10" {
		t.Fatalf("kept Content-Length %q, want 10", got)
	}
}
