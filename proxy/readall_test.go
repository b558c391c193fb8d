package proxy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll gives what io.ReadAll gives whatever the declared length: right,
// too short, too long, unknown or over the hint, in one read or many.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 300)
	for _, declared := range []int64{-1, 0, 1, 2999, 3000, 3001, 9000, maxBodyHint + 1} {
		for name, r := range map[string]func() io.Reader{
			"whole":    func() io.Reader { return strings.NewReader(body) },
			"bytewise": func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) },
			"data+EOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader(body)) },
			"half+fail": func() io.Reader {
				return io.MultiReader(strings.NewReader(body[:1500]), iotest.ErrReader(errBodyBudget))
			},
		} {
			want, werr := io.ReadAll(r())
			got, err := readAll(r(), declared, nil)
			if !bytes.Equal(got, want) || !errors.Is(err, werr) && err != werr {
				t.Errorf("%s, declared %d: %d bytes, %v; want %d bytes, %v", name, declared, len(got), err, len(want), werr)
			}
		}
	}
}
