package wire_test

import (
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// BenchmarkWrite writes a 200-word answer with two calls in every form.
// Its baseline is ParseResponse reading the same bytes back: the ratio of
// the two says what writing costs against reading, in the same run.
func BenchmarkWrite(b *testing.B) {
	a := answers["parallel calls"]
	a.Text = strings.Repeat("It is sunny in Paris today. ", 40)
	for _, f := range forms() {
		w, err := wire.Write(f.kind, a, f.opts)
		if err != nil {
			b.Fatal(err)
		}
		body, fr := w.Bytes(), framing(w)
		b.Run(f.name+"/write", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := wire.Write(f.kind, a, f.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/read-baseline", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := wire.ParseResponse(f.kind, fr, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
