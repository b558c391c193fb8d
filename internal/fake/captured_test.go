package fake_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
)

func TestCapturedFilesAreEmbedded(t *testing.T) {
	names := fake.CapturedFiles()
	for _, want := range []string{
		"openai-chat-stream-toolcalls.sse",
		"anthropic-error-401-authentication.http",
		"gemini-error-400-api-key-invalid.json",
		"aimock/gemini-stream-functioncall.sse",
		"SOURCES.md",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("CapturedFiles() lacks %q", want)
		}
	}
	for _, name := range names {
		if len(fake.Captured(name)) == 0 {
			t.Errorf("Captured(%q) is empty", name)
		}
		if strings.HasSuffix(name, ".json") && !json.Valid(fake.Captured(name)) {
			t.Errorf("Captured(%q) is not valid JSON", name)
		}
	}
}

func TestCapturedReturnsACopy(t *testing.T) {
	a := fake.Captured("openai-chat-toolcalls.response.json")
	a[0] = 'X'
	if b := fake.Captured("openai-chat-toolcalls.response.json"); b[0] != '{' {
		t.Fatalf("Captured shares its bytes: second call starts with %q", b[0])
	}
}

func TestCapturedUnknownNamePanics(t *testing.T) {
	for _, f := range map[string]func(){
		"Captured":        func() { fake.Captured("no-such-file.json") },
		"CapturedHTTP":    func() { fake.CapturedHTTP("openai-chat-toolcalls.response.json") },
		"CapturedHeaders": func() { fake.CapturedHeaders("no-such.headers.txt") },
		"ServeCaptured":   func() { fake.ServeCaptured("no-such-file.sse") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			f()
		}()
	}
}

func TestCapturedHTTP(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		header    string
		value     string
		bodyStart string
	}{
		{"openai-error-401-invalid-api-key.http", 401, "X-Request-Id", "req_c45bfc7515dca54ef87c667f8210af23", "{\n    \"error\""},
		{"anthropic-error-401-authentication.http", 401, "X-Should-Retry", "false", `{"type":"error"`},
		{"anthropic-error-400-invalid-request.http", 400, "Request-Id", "req_01BjwuzUpsYgKjQJguJyvKb3", `{"type":"error"`},
	}
	for _, tt := range tests {
		status, h, body := fake.CapturedHTTP(tt.name)
		if status != tt.status {
			t.Errorf("%s: status = %d, want %d", tt.name, status, tt.status)
		}
		if got := h.Get(tt.header); got != tt.value {
			t.Errorf("%s: %s = %q, want %q", tt.name, tt.header, got, tt.value)
		}
		if !strings.HasPrefix(string(body), tt.bodyStart) {
			t.Errorf("%s: body starts %q, want %q", tt.name, body[:min(20, len(body))], tt.bodyStart)
		}
		if cl := h.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
			t.Errorf("%s: Content-Length %s, body has %d bytes", tt.name, cl, len(body))
		}
	}
}

func TestCapturedHeaders(t *testing.T) {
	h := fake.CapturedHeaders("openai-chat-toolcalls.response.headers.txt")
	if got := h.Get("X-Ratelimit-Reset-Requests"); got != "2ms" {
		t.Errorf("x-ratelimit-reset-requests = %q, want 2ms", got)
	}
	if got := len(h.Values("Set-Cookie")); got != 2 {
		t.Errorf("%d Set-Cookie values, want 2", got)
	}
	if got := h.Get("Content-Encoding"); got != "gzip" {
		t.Errorf("Content-Encoding = %q, want the captured gzip", got)
	}
	status, _, body := fake.CapturedHTTP("openai-error-429.response.headers.txt")
	if status != 429 || body != nil {
		t.Errorf("headers file: status %d body %q, want 429 and no body", status, body)
	}
}
