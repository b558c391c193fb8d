package cassette_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/store"
)

func keys(i *cassette.Interaction) (string, string, error) {
	return i.Request.Method + i.Request.Path + string(i.Request.Body), i.Request.Path, nil
}

func sample(n int) *cassette.Interaction {
	return &cassette.Interaction{
		Upstream: "openai", Provider: "openai", Kind: "openai-chat",
		RecordedAt: time.Date(2026, 12, 2, 10, 0, n, 0, time.UTC),
		Request: cassette.Request{
			Method: "POST", Path: "/v1/chat/completions",
			Headers: http.Header{"Authorization": {"Bearer sk-secret-123"}, "Content-Type": {"application/json"}},
			Body:    cassette.Body(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"<hi> & \u00e9"}]}`),
		},
		Response: cassette.Response{
			Status: 200, Headers: http.Header{"Content-Type": {"text/event-stream"}, "Set-Cookie": {"a=b"}, "Content-Length": {"9"}},
			Framing: "sse",
			Events: []cassette.Event{
				{AtMillis: 12.5, Data: cassette.Body("data: {\"a\":1}\n\n")},
				{AtMillis: 20.25, Data: cassette.Body("data: [DONE]\n\n")},
			},
			TTFBMillis: 12.5, DurationMillis: 20.25,
		},
	}
}

func TestBodyRoundTrip(t *testing.T) {
	for _, b := range []cassette.Body{nil, cassette.Body(""), cassette.Body("plain <&> text\n"), {0xff, 0x00, 0x80, 'a'}} {
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var got cassette.Body
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", enc, err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("round trip of %q via %s gave %q", b, enc, got)
		}
	}
	var b cassette.Body
	for _, bad := range []string{`42`, `{"nope":1}`, `{"base64":"!!"}`} {
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

func TestRedactor(t *testing.T) {
	r, err := cassette.NewRedactor([]string{"X-Custom-Token"}, []string{"metadata.api_key"})
	if err != nil {
		t.Fatal(err)
	}
	i := sample(1)
	i.Request.Headers.Set("X-Custom-Token", "tok-777")
	i.Request.Headers.Set("X-Api-Key", "sk-ant-999")
	i.Request.Headers.Set("X-Forwarded-For", "10.0.0.1")
	i.Request.Query = "alt=sse&key=AIza-secret"
	i.Request.Body = cassette.Body(`{"metadata":{"api_key":"body-secret"},"x":1}`)
	r.Redact(i)
	raw, _ := json.Marshal(i)
	for _, secret := range []string{"sk-secret-123", "tok-777", "sk-ant-999", "AIza-secret", "body-secret", "a=b", "10.0.0.1"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("redacted interaction still holds %q: %s", secret, raw)
		}
	}
	if got := i.Request.Headers.Get("Authorization"); got != cassette.Redacted {
		t.Errorf("Authorization = %q, want %q", got, cassette.Redacted)
	}
	if i.Request.Query != "alt=sse&key=REDACTED" {
		t.Errorf("query = %q", i.Request.Query)
	}
	if i.Response.Headers.Get("Content-Length") != "" {
		t.Error("response Content-Length kept")
	}
	if _, err := cassette.NewRedactor(nil, []string{""}); err == nil {
		t.Error("empty redact path accepted")
	}
}

func newCassette(t *testing.T) *cassette.Cassette {
	t.Helper()
	c, err := cassette.Open(filepath.Join(t.TempDir(), "x.cassette"), cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestExportImportRoundTrip(t *testing.T) {
	c := newCassette(t)
	for n := 1; n <= 3; n++ {
		i := sample(n)
		if n == 2 {
			i.Response.Framing, i.Response.Events = "", nil
			i.Response.Body = cassette.Body([]byte{0xde, 0xad, 0xbe, 0xef})
		}
		k, s, _ := keys(i)
		if _, err := appendOne(c, i, k, s); err != nil {
			t.Fatal(err)
		}
	}
	ct, _ := c.Load()
	ct.Fixtures = map[string]json.RawMessage{"call_weather": json.RawMessage(`{"temperature":21}`)}
	if err := c.Replace(ct, keys); err != nil {
		t.Fatal(err)
	}
	var first, second bytes.Buffer
	if err := c.Export(&first); err != nil {
		t.Fatal(err)
	}
	if err := c.Export(&second); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("two exports of one cassette differ")
	}
	in, err := cassette.ReadExport(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	c2 := newCassette(t)
	if err := c2.Replace(in, keys); err != nil {
		t.Fatal(err)
	}
	var third bytes.Buffer
	c2.Export(&third)
	if !bytes.Equal(first.Bytes(), third.Bytes()) {
		t.Errorf("export → import → export differs:\n%s\n----\n%s", first.String(), third.String())
	}
	got, _ := c2.Get(2)
	if !bytes.Equal(got.Response.Body, []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Errorf("binary body after import = %x", got.Response.Body)
	}
	if !strings.Contains(first.String(), `"content":"<hi> & \\u00e9"`) && !strings.Contains(first.String(), `<hi> & `) {
		t.Errorf("export escapes HTML: %s", first.String())
	}
}

func TestReadExportRejects(t *testing.T) {
	valid := `{"format":"llmproxy-cassette","meta":{"format_version":1},"interactions":[{"id":1,"upstream":"openai","kind":"generic","recorded_at":"2026-01-01T00:00:00Z","request":{"method":"GET","path":"/v1/models","body":""},"response":{"status":200,"ttfb_ms":0,"duration_ms":0}}],"fixtures":{}}`
	if _, err := cassette.ReadExport(strings.NewReader(valid)); err != nil {
		t.Fatalf("valid export rejected: %v", err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not json", "hello", "line 1"},
		{"truncated", valid[:80], "unexpected end"},
		{"wrong format", strings.Replace(valid, "llmproxy-cassette", "other", 1), `"format"`},
		{"newer version", strings.Replace(valid, `"format_version":1`, `"format_version":7`, 1), "format version 7"},
		{"bad id", strings.Replace(valid, `"id":1`, `"id":4`, 1), "interactions[0].id"},
		{"no method", strings.Replace(valid, `"method":"GET"`, `"method":""`, 1), "interactions[0].request.method"},
		{"bad status", strings.Replace(valid, `"status":200`, `"status":7`, 1), "interactions[0].response.status"},
		{"unknown field", strings.Replace(valid, `"fixtures":{}`, `"fixtures":{},"extra":1`, 1), "extra"},
		{"trailing", valid + "{}", "trailing"},
		{"bad fixture", strings.Replace(valid, `"fixtures":{}`, `"fixtures":{"":{}}`, 1), "empty call id"},
	} {
		_, err := cassette.ReadExport(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !errors.Is(err, cassette.ErrBadExport) && !errors.Is(err, store.ErrFormatVersion) {
			t.Errorf("%s: error %v wraps neither ErrBadExport nor ErrFormatVersion", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.want)
		}
	}
}

func TestAppendRejectsIncomplete(t *testing.T) {
	c := newCassette(t)
	if _, err := appendOne(c, &cassette.Interaction{}, "k", "s"); !errors.Is(err, cassette.ErrIncomplete) {
		t.Errorf("Append(empty) = %v, want ErrIncomplete", err)
	}
}

// appendOne stores one interaction with AppendAll.
func appendOne(c *cassette.Cassette, i *cassette.Interaction, key, shape string) (uint64, error) {
	res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: key, Shape: shape}})
	if err != nil {
		return 0, err
	}
	return res[0].ID, res[0].Err
}

// TestReplaceNamesTheFirstFailure: interactions are indexed on every CPU at
// once, and a failure is reported for the first interaction that fails, in
// order, whichever worker met it; nothing is written.
func TestReplaceNamesTheFirstFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	all := make([]*cassette.Interaction, 3000)
	for i := range all {
		all[i] = sample(i % 60)
	}
	bad := map[*cassette.Interaction]bool{all[2500]: true, all[1201]: true, all[1700]: true}
	keys := func(i *cassette.Interaction) (string, string, error) {
		if bad[i] {
			return "", "", errors.New("no key")
		}
		return fmt.Sprint("k", i.ID), "shape", nil
	}
	err := cassette.WriteFile(path, &cassette.Contents{Interactions: all}, keys, cassette.Options{})
	if err == nil || !strings.Contains(err.Error(), "interaction 1202: no key") {
		t.Fatalf("WriteFile: %v, want the failure of interaction 1202", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the cassette was written")
	}
}
