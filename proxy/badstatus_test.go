package proxy_test

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// A record whose status is no final HTTP status (a damaged or crafted
// cassette, in either record format) is refused when read, naming the
// interaction, and the request that met it leaves no lock held: the API
// and the view answer after it.
func TestBadRecordedStatusIsRefused(t *testing.T) {
	statuses := []int{0, 1, 99, 101, 1000, math.MaxInt32, -5}
	for _, format := range []string{"v2", "v1"} {
		for _, status := range statuses {
			path := cassettePath(t)
			craftStatus(t, path, format, status)
			h := startProxy(t, proxy.ModeReplay, path, "")
			c := &http.Client{Timeout: 10 * time.Second}
			resp, err := c.Post(h.URL()+chatAPI.path, "application/json", strings.NewReader(chatAPI.body))
			if err != nil {
				t.Errorf("%s status %d: the request: %v", format, status, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 || !strings.Contains(string(b), "interaction 1") || !strings.Contains(string(b), "status") {
				t.Errorf("%s status %d: answered %d %s, want a 5xx naming interaction 1 and its status", format, status, resp.StatusCode, b)
			}
			// The same request again: the first must have let its recording go.
			if resp, err := c.Post(h.URL()+chatAPI.path, "application/json", strings.NewReader(chatAPI.body)); err != nil {
				t.Errorf("%s status %d: the request again: %v", format, status, err)
			} else {
				resp.Body.Close()
			}
			for _, p := range []string{"/_llmproxy/log", "/_llmproxy/interactions", "/_llmproxy/unused", "/_llmproxy/ui/log", "/_llmproxy/health"} {
				resp, err := c.Get(h.URL() + p)
				if err != nil {
					t.Errorf("%s status %d: GET %s after the request: %v", format, status, p, err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode >= 300 && p != "/_llmproxy/interactions" && p != "/_llmproxy/unused" {
					t.Errorf("%s status %d: GET %s after the request: %d", format, status, p, resp.StatusCode)
				}
			}
			h.stop()
		}
	}
}

// craftStatus writes a cassette of one chat interaction whose stored
// record says status, in record format v1 (JSON) or v2.
func craftStatus(t *testing.T, path, format string, status int) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x"}`)
	}))
	defer up.Close()
	rec := startProxy(t, proxy.ModeRecord, path, up.URL)
	if got := send(t, rec.URL(), chatAPI.path, chatAPI.body); got.status != 200 {
		t.Fatalf("recording: %d %s", got.status, got.body)
	}
	rec.stop()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("interactions"))
		key := binary.BigEndian.AppendUint64(nil, 1)
		v := b.Get(key)
		if format == "v1" {
			i := &cassette.Interaction{ID: 1, Upstream: "openai", Kind: "openai-chat", Provider: "openai",
				Request:  cassette.Request{Method: "POST", Path: chatAPI.path, Body: []byte(chatAPI.body)},
				Response: cassette.Response{Status: status, Headers: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"x"}`)}}
			j, err := json.Marshal(i)
			if err != nil {
				return err
			}
			return b.Put(key, j)
		}
		// The head section starts with the status as a varint: rewrite it,
		// and the head's length, which is the second length of the record.
		return b.Put(key, withStatus(t, v, status))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withStatus is a format-2 record v with its status replaced.
func withStatus(t *testing.T, v []byte, status int) []byte {
	t.Helper()
	rest := v[1:]
	var n [5]uint64
	for k := range n {
		var m int
		n[k], m = binary.Uvarint(rest)
		rest = rest[m:]
	}
	front, head := rest[:n[0]], rest[n[0]:n[0]+n[1]]
	_, m := binary.Varint(head)
	newHead := append(binary.AppendVarint(nil, int64(status)), head[m:]...)
	out := []byte{v[0]}
	n[1] = uint64(len(newHead))
	for _, l := range n {
		out = binary.AppendUvarint(out, l)
	}
	out = append(append(out, front...), newHead...)
	return append(out, rest[len(front)+len(head):]...)
}
