package cassette_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// FuzzRedactKeys: redaction never panics, leaves nothing it would redact
// again (it is idempotent), returns its input untouched when it finds no
// key, and keeps valid JSON valid.
func FuzzRedactKeys(f *testing.F) {
	for _, s := range []string{
		"", "sk-", keyOpenAIProject, keyAnthropic, keyGoogle, keyAWS, keyAWSSession, keyJWT, keyJWTUnsigned,
		`{"content":"` + keyOpenAILegacy + `\n` + keyJWT + `"}`, `"\b` + keyAWS + `"`, `"\\n` + keyGoogle + `"`,
		"eyJ.eyJ.eyJ.", "AKIAAKIAAKIAAKIAAKIA", keyJWTUnsigned + keyOpenAILegacy,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		out := cassette.RedactKeys(b)
		if !bytes.Equal(b, in) {
			t.Fatal("RedactKeys changed its input")
		}
		if again := cassette.RedactKeys(out); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
		if bytes.Equal(out, in) && len(in) > 0 && &out[0] != &b[0] {
			t.Fatal("copied an input that holds no key")
		}
		if json.Valid(in) && !json.Valid(out) {
			t.Fatalf("valid JSON %q became %q", in, out)
		}
	})
}
