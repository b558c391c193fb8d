package presets_test

import (
	"bytes"
	"testing"

	"github.com/llmproxy/llmproxy/presets"
)

// FuzzValidate feeds recorded-traffic-like payloads to the raw validators,
// which the scrubber runs on whatever a cassette holds. They must never
// panic, and whatever passes must keep passing in canonical form.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"location":"Paris","unit":"celsius"}`,
		`{"query":"q","limit":100}`,
		`{"hits":[{"title":"t","url":"u","snippet":"s"}]}`,
		`{"entries":[{"path":"a","kind":"file","size":0}]}`,
		`{"timestamp":"2025-06-01T12:30:00+02:00","timeZone":"Europe/Paris"}`,
		`{"error":{"code":"c","message":"m","retryable":true}}`,
		`{"path":"p","offset":1e2,"length":-0}`,
		`[1,2,{"a":null}]`, `"str"`, `{"a":1}{}`, `{"~/":{"":[]}}`,
	} {
		f.Add([]byte(seed))
	}
	all := presets.All()
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, d := range all {
			for part, validate := range map[string]func([]byte) error{
				"arguments": d.ValidateArguments, "result": d.ValidateResult, "error": d.ValidateError,
			} {
				if validate(raw) != nil {
					continue
				}
				canon, err := presets.Canonical(raw)
				if err != nil {
					t.Fatalf("%s %s: valid payload %q has no canonical form: %v", d.Name(), part, raw, err)
				}
				if err := validate(canon); err != nil {
					t.Fatalf("%s %s: canonical form %s of a valid payload fails: %v", d.Name(), part, canon, err)
				}
				again, _ := presets.Canonical(canon)
				if !bytes.Equal(again, canon) {
					t.Fatalf("Canonical is not idempotent: %s then %s", canon, again)
				}
			}
		}
	})
}
