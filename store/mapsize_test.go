package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestMapSizeKeepsTheMap: a writer opened with MapSize maps the file once,
// and a Replace that grows it to tens of megabytes does not map it again
// (each new map copies every node of the transaction). Without MapSize,
// bbolt maps it again as it grows: the new map is logged, not asserted,
// as the system may place it where the old one was.
func TestMapSizeKeepsTheMap(t *testing.T) {
	recs := make([]Record, 2000)
	for i := range recs {
		recs[i] = Record{ID: uint64(i + 1), Key: fmt.Sprint("key", i), Shape: "shape", Value: bytes.Repeat([]byte{'v'}, 16<<10)}
	}
	for _, tc := range []struct {
		name    string
		mapSize int64
	}{
		{"with MapSize", 64 << 20},
		{"without", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.cassette")
			s, err := Open(path, &Options{MapSize: tc.mapSize})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			before := s.db.Load().Info().Data
			if err := s.Replace(Contents{Records: recs}); err != nil {
				t.Fatal(err)
			}
			moved := s.db.Load().Info().Data != before
			t.Logf("the map moved: %v", moved)
			if moved && tc.mapSize > 0 {
				t.Error("the map moved")
			}
			if n, err := s.Len(); err != nil || n != len(recs) {
				t.Errorf("Len = %d, %v; want %d", n, err, len(recs))
			}
		})
	}
}
