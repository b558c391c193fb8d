package fake_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
)

// paris is the loop most tests play.
var paris = fake.ToolLoop{
	Tool:   "weather",
	Args:   `{"location":"Paris","unit":"celsius"}`,
	CallID: "call_paris",
	Answer: "It is 21 °C and sunny in Paris.",
}

// exchange is one request and its response as received by a plain client.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

// mustPost sends body to url and reads the whole answer, failing the test on
// a transport error.
func mustPost(t testing.TB, url, body string, header ...string) exchange {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return exchange{resp.StatusCode, resp.Header, b}
}

// sseEvent is one parsed SSE event.
type sseEvent struct {
	name string
	data string
	raw  string // the event's bytes including its terminating blank line
}

// parseSSE cuts body into events at blank lines, checking that every event
// ends with sep, and reads the event: and data: fields.
func parseSSE(t testing.TB, body []byte, sep string) []sseEvent {
	t.Helper()
	var out []sseEvent
	rest := string(body)
	for rest != "" {
		i := strings.Index(rest, sep)
		if i < 0 {
			t.Fatalf("SSE body does not end with %q: %q", sep, rest)
		}
		raw := rest[:i+len(sep)]
		ev := sseEvent{raw: raw}
		for _, line := range strings.Split(rest[:i], sep[:len(sep)/2]) {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		out = append(out, ev)
		rest = rest[i+len(sep):]
	}
	return out
}

// shape lists the key paths of a JSON document in document order, array
// indices dropped and repeats removed, leaving out paths that start with any
// of skip. Two documents of the same shape have the same fields in the same
// order.
func shape(t testing.TB, doc string, skip ...string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var out []string
	seen := map[string]bool{}
	var walk func(prefix string)
	walk = func(prefix string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("shape of %q: %v", doc, err)
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					t.Fatalf("shape of %q: %v", doc, err)
				}
				p := prefix + "." + k.(string)
				keep := true
				for _, s := range skip {
					if strings.HasPrefix(p, s) {
						keep = false
					}
				}
				if keep && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
				walk(p)
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(prefix + "[]")
			}
			_, _ = dec.Token()
		}
	}
	walk("")
	return out
}

// sameShape fails the test when got and want differ in fields or field order.
func sameShape(t testing.TB, what, got, want string, skip ...string) {
	t.Helper()
	g, w := shape(t, got, skip...), shape(t, want, skip...)
	if strings.Join(g, " ") != strings.Join(w, " ") {
		t.Errorf("%s: field layout differs from the capture\n got: %v\nwant: %v", what, g, w)
	}
}

// validJSON fails the test unless s is one JSON value.
func validJSON(t testing.TB, what, s string) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		t.Fatalf("%s is not valid JSON: %q", what, s)
	}
}

// field reads a top-level string field of a JSON object.
func field(t testing.TB, doc, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("decode %q: %v", doc, err)
	}
	var s string
	_ = json.Unmarshal(m[name], &s)
	return s
}

// ndjsonLines splits an NDJSON body, checking every line ends with LF.
func ndjsonLines(t testing.TB, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n")) {
		t.Fatalf("NDJSON body does not end with a newline: %q", body)
	}
	return strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
}
