package cassette

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/store"
)

// benchShapes are the two answers replay serves most: a 2 KB JSON body and
// a 200-event SSE stream.
func benchShapes() map[string]*Interaction {
	req := Request{Method: "POST", Path: "/v1/chat/completions", Headers: http.Header{"Content-Type": {"application/json"}},
		Body: Body(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("What is the weather? ", 40) + `"}]}`)}
	js := &Interaction{ID: 1, Upstream: "openai", Kind: "openai-chat", Request: req, Response: Response{Status: 200,
		Headers: http.Header{"Content-Type": {"application/json"}},
		Body:    Body(`{"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"` + strings.Repeat(`Sunny, \"21\" degrees. `, 90) + `"}}]}`)}}
	sse := &Interaction{ID: 1, Upstream: "openai", Kind: "openai-chat", Request: req, Response: Response{Status: 200,
		Headers: http.Header{"Content-Type": {"text/event-stream"}}, Framing: "sse"}}
	for n := range 200 {
		sse.Response.Events = append(sse.Response.Events, Event{AtMillis: float64(n), Data: Body(fmt.Sprintf("data: {\"choices\":[{\"delta\":{\"content\":\"word %d \"}}]}\n\n", n))})
	}
	return map[string]*Interaction{"json": js, "sse": sse}
}

// BenchmarkReply is the cassette's part of a replayed request: find the
// recording by match key and get its response's bytes. "before" is the
// path replay took until format 2 (a lookup transaction, a read
// transaction copying the record, a decode of the format-1 document);
// "format1" and "format2" are one Read with Lookup and Reply on a record of
// each format.
func BenchmarkReply(b *testing.B) {
	dir := b.TempDir()
	for _, shape := range []string{"json", "sse"} {
		in := benchShapes()[shape]
		for _, format := range []int{1, 2} {
			enc := map[int]func(*Interaction) ([]byte, error){1: encodeV1, 2: encode}[format]
			v, err := enc(in)
			if err != nil {
				b.Fatal(err)
			}
			st, err := store.Open(filepath.Join(dir, fmt.Sprintf("%s-%d.cassette", shape, format)), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			if err := st.Replace(store.Contents{Records: []store.Record{{ID: 1, Key: "key", Shape: "shape", Value: v}}}); err != nil {
				b.Fatal(err)
			}
			c := &Cassette{st: st}
			want := len(in.Response.Bytes())
			if format == 1 {
				b.Run(shape+"/before", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						ids, err := c.Lookup("key")
						if err != nil {
							b.Fatal(err)
						}
						v, err := st.Get(ids[0])
						if err != nil {
							b.Fatal(err)
						}
						i, ok := decodeFast(v, true)
						if !ok || len(i.Response.Bytes()) != want {
							b.Fatal("decode")
						}
					}
				})
			}
			b.Run(fmt.Sprintf("%s/format%d", shape, format), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					err := c.Read(func(r *Reader) error {
						ids, err := r.Lookup("key")
						if err != nil {
							return err
						}
						rep, err := r.Reply(ids[0])
						if err != nil {
							return err
						}
						n := len(rep.Body())
						for k := range rep.Events() {
							d, _ := rep.Event(k)
							n += len(d)
						}
						if n != want {
							return fmt.Errorf("%d bytes, want %d", n, want)
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
