package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/store"
)

// TestNonFiniteTimesAreDamage: an event time, time to first byte or
// duration that is NaN or infinite (no recording makes one, and JSON, so
// import, cannot hold one) is a damaged record for every reader alike: ls
// and export both refuse it naming the interaction, where export failed
// on what ls listed.
func TestNonFiniteTimesAreDamage(t *testing.T) {
	const eventAt, ttfb, duration = 1234.5, 2345.5, 3456.5
	good := filepath.Join(t.TempDir(), "good.cassette")
	c, err := cassette.Open(good, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{Upstream: "openai", Kind: "openai-chat",
		Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: cassette.Body(`{"stream":true}`)},
		Response: cassette.Response{Status: 200, Framing: "sse", TTFBMillis: ttfb, DurationMillis: duration,
			Headers: http.Header{"Content-Type": {"text/event-stream"}},
			Events:  []cassette.Event{{AtMillis: eventAt, Data: cassette.Body("data: [DONE]\n\n")}}}}
	if res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: "k", Shape: "s"}}); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	c.Close()
	st, err := store.Open(good, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	record, err := st.Get(1)
	record = bytes.Clone(record)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	bitsOf := func(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
	for _, tc := range []struct {
		name    string
		at      float64
		becomes float64
	}{
		{"event time NaN", eventAt, math.NaN()},
		{"event time +Inf", eventAt, math.Inf(1)},
		{"ttfb -Inf", ttfb, math.Inf(-1)},
		{"duration NaN", duration, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if bytes.Count(record, bitsOf(tc.at)) != 1 {
				t.Fatalf("the record holds %v not exactly once", tc.at)
			}
			bad := bytes.Replace(record, bitsOf(tc.at), bitsOf(tc.becomes), 1)
			path := filepath.Join(t.TempDir(), "bad.cassette")
			st, err := store.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.AppendAll([]store.Pending{{Key: "k", Shape: "s", Encode: func(uint64) ([]byte, error) { return bad, nil }}})
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"ls", "export"} {
				code, _, stderr := runCLI(t, cmd, "--cassette", path)
				if code != 1 || !strings.Contains(stderr, "interaction 1") || !strings.Contains(stderr, "not a finite time") {
					t.Errorf("llmproxy %s: exit %d, stderr %q; want exit 1 naming interaction 1 and the time that is not finite", cmd, code, stderr)
				}
			}
		})
	}
	// The writer refuses one as well.
	c, err = cassette.Open(filepath.Join(t.TempDir(), "w.cassette"), cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	i.Response.Events[0].AtMillis = math.NaN()
	if res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: "k", Shape: "s"}}); err == nil && res[0].Err == nil {
		t.Errorf("AppendAll stored an event at NaN ms")
	}
}
