package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
