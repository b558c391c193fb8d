package cassette

import (
	"slices"
	"testing"
)

// anchorInputs are strings of the kinds redaction scans most: paths,
// short header values, and the shapes themselves.
var anchorInputs = []string{
	"/v1/chat/completions", "/v1/messages", "/v1beta/models/gemini-2.0-flash:generateContent",
	"/model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream", "application/json; charset=utf-8",
	"OpenAI/Go 1.12.0", "Bearer sk-proj-AbCdEf0123456789AbCdEf0123", "AKIAIOSFODNN7EXAMPLE",
	"x AIzaSyA1234567890abcdefghijklmnopqrstuv y", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
	`{"aws_secret_access_key":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`,
	`SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`,
	"IQoJb3JpZ2luX2VjEXAMPLE" + string(make([]byte, 120)),
}

// TestAnchorFilterFindsWhatTheScanFinds: the check of anchor bytes never
// hides a key the full scan finds.
func TestAnchorFilterFindsWhatTheScanFinds(t *testing.T) {
	for _, s := range anchorInputs {
		if got, want := findKeys([]byte(s)), scanKeys([]byte(s)); !slices.Equal(got, want) && len(s) >= minKeyLen {
			t.Errorf("%q: findKeys %v, the full scan %v", s, got, want)
		}
	}
}

// TestAnchorFilterSparesPaths: the API paths mock and replay log hold no
// anchor byte, so their scan is one pass (this fails if an anchor comes to
// start with a letter they hold).
func TestAnchorFilterSparesPaths(t *testing.T) {
	for _, p := range []string{"/v1/chat/completions", "/openai/v1/chat/completions", "/v1/responses", "/v1/messages"} {
		if hasAnchorStart([]byte(p)) {
			t.Errorf("%q holds an anchor byte", p)
		}
	}
}

// FuzzAnchorFilter: on any input, findKeys finds what the full scan finds.
func FuzzAnchorFilter(f *testing.F) {
	for _, s := range anchorInputs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < minKeyLen {
			return
		}
		if got, want := findKeys(b), scanKeys(b); !slices.Equal(got, want) {
			t.Fatalf("%q: findKeys %v, the full scan %v", b, got, want)
		}
	})
}

// BenchmarkRedactPath is the scan of a path with no key, which mock and
// replay make for every request they log.
func BenchmarkRedactPath(b *testing.B) {
	for b.Loop() {
		RedactKeysString("/v1/chat/completions")
	}
}
