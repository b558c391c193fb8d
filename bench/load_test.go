package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenAI429: the load's alt answer for the faulted replay server is
// exactly a 429 in OpenAI's error shape, the one llmproxy injects.
func TestOpenAI429(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(requestBody(0, false)))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	faultReplay(t, "429@rate=1").ServeHTTP(w, r)
	injected, err := io.ReadAll(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"injected by replay", w.Code, string(injected), true},
		{"minimal OpenAI error", 429, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`, true},
		{"other status", 500, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`, false},
		{"the recording", 429, string(jsonResponse()), false},
		{"Anthropic shape", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, false},
		{"full OpenAI error", 429, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, true},
		{"unknown field", 429, `{"error":{"message":"slow down","type":"requests","retry":1}}`, false},
		{"no type", 429, `{"error":{"message":"slow down"}}`, false},
		{"empty message", 429, `{"error":{"message":"","type":"rate_limit_exceeded"}}`, false},
		{"error not an object", 429, `{"error":"slow down"}`, false},
		{"two objects", 429, `{"error":{"message":"slow down","type":"requests"}}{}`, false},
		{"not JSON", 429, `Too Many Requests`, false},
		{"empty", 429, ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openAI429(tc.status, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Errorf("openAI429(%d, %.80q) = %v, want ok %v", tc.status, tc.body, err, tc.ok)
			}
		})
	}
}

// TestLoadAltAskedOncePerAnswer: a load accepts its alt answer by asking
// alt once per distinct answer a worker sees, and still checks every
// answer: one that differs from the alt accepted before is asked about
// again, and counts as an error when alt refuses it.
func TestLoadAltAskedOncePerAnswer(t *testing.T) {
	want := []byte(`{"ok":true}`)
	good := []byte(`{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
	bad := []byte(`{"error":"slow down"}`)
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch n := served.Add(1); {
		case n%10 == 0:
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(bad)
		case n%2 == 0:
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(good)
		default:
			_, _ = w.Write(want)
		}
	}))
	defer srv.Close()
	var asked atomic.Int64
	l := load{conns: 1, dur: time.Minute, max: 100, body: func(int) []byte { return []byte(`{}`) }, want: same(want),
		alt: func(status int, got []byte) error { asked.Add(1); return openAI429(status, got) }}
	var tl tally
	l.run(srv.Client(), srv.URL, &tl)
	// Of 100 answers: 50 want, 40 good 429s, 10 bad ones.
	if tl.n != 90 || tl.alt != 40 || tl.errs != 10 || tl.err == nil {
		t.Fatalf("%d served, %d alt, %d errors (%v); want 90, 40 and 10", tl.n, tl.alt, tl.errs, tl.err)
	}
	// The first good 429, then each bad one (a refused answer is not
	// remembered: the good ones after it are still the one accepted).
	if got := asked.Load(); got != 1+10 {
		t.Errorf("alt asked %d times, want %d", got, 1+10)
	}
}
