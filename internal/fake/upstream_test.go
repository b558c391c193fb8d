package fake_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/fake"
)

func TestHitsAndRequests(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris))
	if u.Hits() != 0 {
		t.Fatalf("Hits() = %d before any request", u.Hits())
	}
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Paris?"}]}`
	mustPost(t, u.URL()+"/v1/chat/completions?api-version=1&b=2", body, "Authorization", "Bearer sk-test-123")
	mustPost(t, u.URL()+"/v1/chat/completions", body)
	if u.Hits() != 2 {
		t.Fatalf("Hits() = %d, want 2", u.Hits())
	}
	reqs := u.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.RawQuery != "api-version=1&b=2" || string(r.Body) != body {
		t.Errorf("recorded %s %s ? %s body %s", r.Method, r.Path, r.RawQuery, r.Body)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("recorded Authorization %q", got)
	}
	reqs[0].Body[0] = 'X'
	if u.Requests()[0].Body[0] != '{' {
		t.Errorf("Requests() shares its bodies with the upstream")
	}
}

func TestRequireHeaderAnswersWithTheCapturedError(t *testing.T) {
	_, _, openAI401 := fake.CapturedHTTP("openai-error-401-invalid-api-key.http")
	_, _, anthropic401 := fake.CapturedHTTP("anthropic-error-401-authentication.http")
	gemini400 := fake.Captured("gemini-error-400-api-key-invalid.json")
	tests := []struct {
		name   string
		script fake.Script
		opt    fake.Option
		path   string
		good   []string
		status int
		body   []byte
		header string // a captured header the error carries
	}{
		{"openai", fake.OpenAIChat(paris), fake.RequireHeader("Authorization", "Bearer sk-test-123"),
			"/v1/chat/completions", []string{"Authorization", "Bearer sk-test-123"}, 401, openAI401, "X-Request-Id"},
		{"anthropic", fake.AnthropicMessages(paris), fake.RequireHeader("X-Api-Key", "sk-ant-test"),
			"/v1/messages", []string{"X-Api-Key", "sk-ant-test"}, 401, anthropic401, "X-Should-Retry"},
		{"gemini header", fake.Gemini(paris), fake.RequireHeader("X-Goog-Api-Key", "g-key"),
			"/v1beta/models/gemini-2.5-flash:generateContent", []string{"X-Goog-Api-Key", "g-key"}, 400, gemini400, ""},
		{"gemini query", fake.Gemini(paris), fake.RequireQuery("key", "g-key"),
			"/v1beta/models/gemini-2.5-flash:generateContent", nil, 400, gemini400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := fake.New(t, tt.script, tt.opt)
			ex := mustPost(t, u.URL()+tt.path, `{}`, "Authorization", "Bearer sk-wrong", "X-Api-Key", "wrong")
			if ex.status != tt.status || !bytes.Equal(ex.body, tt.body) {
				t.Errorf("without the key: %d %s\nwant %d %s", ex.status, ex.body, tt.status, tt.body)
			}
			if tt.header != "" && ex.header.Get(tt.header) == "" {
				t.Errorf("captured header %s missing: %v", tt.header, ex.header)
			}
			url := u.URL() + tt.path
			if tt.good == nil {
				url += "?key=g-key"
			}
			ex = mustPost(t, url, `{"messages":[],"contents":[]}`, tt.good...)
			if ex.status != 200 {
				t.Errorf("with the key: %d %s", ex.status, ex.body)
			}
		})
	}
}

func TestCloseMakesRequestsFail(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris))
	mustPost(t, u.URL()+"/v1/chat/completions", `{}`)
	u.Close()
	u.Close() // twice is fine
	resp, err := http.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("request after Close got %s", resp.Status)
	}
	if u.Hits() != 1 {
		t.Errorf("Hits() = %d, want 1", u.Hits())
	}
}

func TestCloseCutsOpenStreams(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris), fake.EventDelay(time.Hour))
	resp, err := http.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := make(chan struct{})
	go func() { u.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a stream that is sleeping")
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("the cut stream ended cleanly")
	}
}

func TestEventDelayDeliversIncrementally(t *testing.T) {
	const delay = 30 * time.Millisecond
	u := fake.New(t, fake.OpenAIChat(paris), fake.EventDelay(delay))
	start := time.Now()
	resp, err := http.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "data: {") {
		t.Fatalf("first line %q: %v", first, err)
	}
	firstAt := time.Since(start)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	total := time.Since(start)
	events := strings.Count(first+string(rest), "data: ")
	if total < time.Duration(events)*delay {
		t.Errorf("%d events took %v, want at least %v", events, total, time.Duration(events)*delay)
	}
	if firstAt > total/2 {
		t.Errorf("first event after %v of %v: not delivered incrementally", firstAt, total)
	}
}

func TestFailAfterEvents(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris), fake.FailAfterEvents(2))
	resp, err := http.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("stream ended cleanly after %q", got)
	}
	if n := strings.Count(string(got), "data: "); n != 2 {
		t.Errorf("%d events before the reset, want 2:\n%s", n, got)
	}

	u = fake.New(t, fake.OpenAIChat(paris), fake.FailAfterEvents(0))
	resp, err = http.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("non-streamed body cut after the headers read cleanly: %q", got)
	}
}

func TestStatusOverridesTheScript(t *testing.T) {
	body := fake.Captured("anthropic-error-529-overloaded.json")
	u := fake.New(t, fake.AnthropicMessages(paris), fake.Status(529, body))
	ex := mustPost(t, u.URL()+"/v1/messages", `{}`)
	if ex.status != 529 || !bytes.Equal(ex.body, body) || ex.header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %q %s", ex.status, ex.header.Get("Content-Type"), ex.body)
	}
	u = fake.New(t, nil, fake.Status(503, []byte("upstream connect error")))
	if ex := mustPost(t, u.URL()+"/anything", ``); ex.status != 503 || ex.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("got %d %q", ex.status, ex.header.Get("Content-Type"))
	}
}

func TestGzip(t *testing.T) {
	plain := mustPost(t, fake.New(t, fake.OpenAIChat(paris)).URL()+"/v1/chat/completions", `{}`)
	u := fake.New(t, fake.OpenAIChat(paris), fake.Gzip())
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("Content-Encoding = %q, want gzip", ce)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatalf("body is not gzip: %v", err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain.body) {
		t.Errorf("gunzipped body differs from the plain one")
	}

	// Streams are never encoded.
	resp, err = client.Post(u.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Errorf("stream sent with Content-Encoding %q", ce)
	}
}

func TestSequence(t *testing.T) {
	u := fake.New(t, fake.Sequence(
		fake.ServeCaptured("openai-error-429-rate-limit.json"),
		fake.OpenAIChat(paris),
	), fake.RequireHeader("Authorization", "Bearer k"))
	url := u.URL() + "/v1/chat/completions"
	if ex := mustPost(t, url, `{}`); ex.status != 401 {
		t.Fatalf("unauthorised request: %d", ex.status)
	}
	ex := mustPost(t, url, `{}`, "Authorization", "Bearer k")
	if ex.status != 429 || !bytes.Equal(ex.body, fake.Captured("openai-error-429-rate-limit.json")) {
		t.Errorf("first answer: %d %s", ex.status, ex.body)
	}
	if ex.header.Get("Openai-Processing-Ms") != "5977" {
		t.Errorf("429 not served with its captured headers: %v", ex.header)
	}
	if ex := mustPost(t, url, `{}`, "Authorization", "Bearer k"); ex.status != 200 {
		t.Errorf("second answer: %d", ex.status)
	}
	if ex := mustPost(t, url, `{}`, "Authorization", "Bearer k"); ex.status != 500 || !strings.Contains(string(ex.body), "exhausted") {
		t.Errorf("third answer: %d %s", ex.status, ex.body)
	}
}

func TestServeCaptured(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		events      int // flushed events; 0 for a plain body
	}{
		{"openai-error-401-invalid-api-key.http", 401, "application/json; charset=utf-8", 0},
		{"openai-chat-stream-toolcalls.sse", 200, "text/event-stream; charset=utf-8", 9},
		{"openai-responses-stream-functioncall.sse", 200, "text/event-stream; charset=utf-8", 17},
		{"anthropic-messages-tooluse.response.json", 200, "application/json", 0},
		{"anthropic-error-529-overloaded.json", 529, "application/json", 0},
		{"gemini-streamgeneratecontent-sse-functioncall.sse", 200, "text/event-stream", 2},
		{"ollama-api-chat-stream-toolcalls.ndjson", 200, "application/x-ndjson", 2},
	}
	for _, tt := range tests {
		u := fake.New(t, fake.ServeCaptured(tt.name))
		ex := mustPost(t, u.URL()+"/x", `{}`)
		want := fake.Captured(tt.name)
		if strings.HasSuffix(tt.name, ".http") {
			_, _, want = fake.CapturedHTTP(tt.name)
		}
		if ex.status != tt.status || ex.header.Get("Content-Type") != tt.contentType || !bytes.Equal(ex.body, want) {
			t.Errorf("%s: %d %q, body equal %v", tt.name, ex.status, ex.header.Get("Content-Type"), bytes.Equal(ex.body, want))
		}
		if ce := ex.header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s: Content-Encoding %q on a decoded body", tt.name, ce)
		}
		if tt.events > 0 && ex.header.Get("Content-Length") != "" {
			t.Errorf("%s: a stream sent with Content-Length", tt.name)
		}
		if tt.events > 0 {
			// FailAfterEvents counts what Verbatim split: one fewer event
			// arrives than the file holds.
			u := fake.New(t, fake.ServeCaptured(tt.name), fake.FailAfterEvents(tt.events-1))
			resp, err := http.Post(u.URL()+"/x", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil || !bytes.HasPrefix(want, got) || len(got) == len(want) {
				t.Errorf("%s cut after %d events: err %v, %d of %d bytes", tt.name, tt.events-1, err, len(got), len(want))
			}
		}
	}
}

func TestVerbatim(t *testing.T) {
	body := []byte("data: one\r\n\r\ndata: two\n\n: comment\n\ndata: three")
	u := fake.New(t, fake.Verbatim(202, http.Header{"Content-Type": {"text/event-stream"}, "X-Custom": {"yes"}}, body))
	ex := mustPost(t, u.URL()+"/", ``)
	if ex.status != 202 || ex.header.Get("X-Custom") != "yes" || !bytes.Equal(ex.body, body) {
		t.Errorf("got %d %v %q", ex.status, ex.header, ex.body)
	}
}
