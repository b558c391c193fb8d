package cassette

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// namedSecretsWhole is findNamedSecrets as it was before it searched by
// anchor: each whole name, in turn.
func namedSecretsWhole(b []byte) []keySpan {
	var spans []keySpan
	for _, name := range secretNames {
		for pos := 0; ; {
			n := bytes.Index(b[pos:], []byte(name))
			if n < 0 {
				break
			}
			pos += n + len(name)
			start := skipAssign(b, pos)
			end := start
			for end < len(b) && isBase64Byte(b[end]) && end-start <= secretKeyLen {
				end++
			}
			if start > pos && end-start == secretKeyLen {
				spans = append(spans, keySpan{start, end})
			}
		}
	}
	return spans
}

// namedSecretInputs are texts built from pieces of the names, the anchors
// alone, assignments and secret-length runs, so that names overlap, are cut
// short, or stand next to their anchors.
func namedSecretInputs() [][]byte {
	secret := "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	pieces := []string{"s", "S", "ecret", "ECRET", "AccessKey", "_access_key", "_ACCESS_KEY", "ecretAccessKey",
		"ecret_access_key", "ECRET_ACCESS_KEY", `"`, `\"`, ":", "=", " ", "'", secret, secret[:39], secret + "A", "x", "\n"}
	out := [][]byte{nil, []byte("AccessKey"), []byte("ecretAccessKe"), []byte("secretAccessKey=" + secret),
		[]byte(`{"aws_secret_access_key": "` + secret + `", "SecretAccessKey":"` + secret + `"}`),
		[]byte("ecretecretAccessKey=" + secret), []byte("AWS_SECRET_ACCESS_KEY=" + secret + "\nsecret_access_key = " + secret)}
	rng := rand.New(rand.NewPCG(29, 2))
	for range 20000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		out = append(out, b)
	}
	return out
}

// TestNamedSecretsByAnchor: finding the names by their anchors gives the
// spans a search for the whole names gives, in the same order.
func TestNamedSecretsByAnchor(t *testing.T) {
	found := 0
	for _, b := range namedSecretInputs() {
		got, want := findNamedSecrets(b), namedSecretsWhole(b)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: spans %v, want %v", b, got, want)
		}
		found += len(want)
	}
	if found < 40 {
		t.Fatalf("only %d secrets in the inputs: the test checks too little", found)
	}
}

func FuzzNamedSecretsByAnchor(f *testing.F) {
	for _, b := range namedSecretInputs()[:50] {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := findNamedSecrets(b), namedSecretsWhole(b); !slices.Equal(got, want) {
			t.Fatalf("%q: spans %v, want %v", b, got, want)
		}
	})
}
