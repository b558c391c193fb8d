package proxy_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// TestCompressedResponsesAreStoredDecoded records answers compressed with
// each Content-Encoding the proxy knows (gzip, deflate, br; a response body
// is stored decoded): the client gets the decoded bytes without Content-Encoding, the cassette holds them decoded
// (readable in an export), and replay serves the same bytes with no
// Content-Encoding and a correct Content-Length.
func TestCompressedResponsesAreStoredDecoded(t *testing.T) {
	const plain = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris is sunny."},"finish_reason":"stop"}]}`
	encoders := map[string]func(io.Writer) io.WriteCloser{
		"gzip":    func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
		"deflate": func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) },
		"br":      func(w io.Writer) io.WriteCloser { return brotli.NewWriter(w) },
	}
	for enc, newWriter := range encoders {
		t.Run(enc, func(t *testing.T) {
			var compressed bytes.Buffer
			zw := newWriter(&compressed)
			io.WriteString(zw, plain)
			zw.Close()
			up := rawUpstream(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", enc)
				w.Header().Set("Content-Length", strconv.Itoa(compressed.Len()))
				w.Write(compressed.Bytes())
			})
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up)
			got := sendRaw(t, rec.URL()+"/v1/chat/completions")
			if got.body != plain || got.encoding != "" {
				t.Fatalf("record: client got Content-Encoding %q and %q, want the decoded body", got.encoding, got.body)
			}
			rec.stop()
			if bytes.Contains(rawCassette(t, path), compressed.Bytes()) {
				t.Error("the cassette holds the compressed bytes")
			}
			c, err := cassette.Open(path, cassette.Options{ReadOnly: true, Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			i, err := c.Get(1)
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			if string(i.Response.Body) != plain {
				t.Errorf("stored body %q, want it decoded", i.Response.Body)
			}
			if ce := i.Response.Headers.Get("Content-Encoding"); ce != "" {
				t.Errorf("stored Content-Encoding %q, want none", ce)
			}

			rep := startProxy(t, proxy.ModeReplay, path, "")
			again := sendRaw(t, rep.URL()+"/v1/chat/completions")
			if again.body != plain || again.encoding != "" || again.length != int64(len(plain)) {
				t.Errorf("replay: Content-Encoding %q, Content-Length %d, body %q; want none, %d, the decoded body",
					again.encoding, again.length, again.body, len(plain))
			}
		})
	}
}

type rawAnswer struct {
	body, encoding string
	length         int64
}

// sendRaw posts a fixed chat request with a transport that neither asks
// for nor undoes compression, so the test sees the proxy's bytes as sent.
func sendRaw(t *testing.T, url string) rawAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url,
		bytes.NewReader([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Paris?"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return rawAnswer{body: string(b), encoding: resp.Header.Get("Content-Encoding"), length: resp.ContentLength}
}
