package jsonvalue_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

func TestEqual(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", 100<<10) + `"}`
	for _, tc := range []struct {
		a, b string
		want bool
		err  error
	}{
		{`{"a":1,"b":[true,null]}`, ` { "b" : [ true , null ] , "a" : 1.0 } `, true, nil},
		{`{"a":1}`, `{"a":2}`, false, nil},
		{`{"a":1}`, `{"a":1,"b":1}`, false, nil},
		{`"caf\u00e9"`, `"café"`, true, nil},
		{`[1,2]`, `[2,1]`, false, nil},
		{long, long, true, nil},
		{long, `{"text":"x"}`, false, nil},
		{`{"a":`, `{"a":1}`, false, jsonvalue.ErrMalformed},
		{`{"a":1}`, `{"a":}`, false, jsonvalue.ErrMalformed},
	} {
		got, err := jsonvalue.Equal([]byte(tc.a), []byte(tc.b))
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Equal(%.40s, %.40s) = %v, %v; want %v, %v", tc.a, tc.b, got, err, tc.want, tc.err)
		}
	}
}

// Equal reuses its buffers: comparing small documents allocates nothing.
func TestEqualAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops buffers at random under the race detector; go test without -race counts the allocations")
	}
	a, b := []byte(`{"location":"Paris","unit":"c"}`), []byte(`{"unit":"c","location":"Paris"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if eq, err := jsonvalue.Equal(a, b); !eq || err != nil {
			t.Fatalf("Equal = %v, %v", eq, err)
		}
	})
	if allocs >= 1 {
		t.Errorf("Equal allocates %.1f times a call, want none", allocs)
	}
}
