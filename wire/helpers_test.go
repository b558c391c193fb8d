package wire_test

import (
	"os"
	"path/filepath"
	"testing"
)

// captured is where the real provider bytes are.
const captured = "../internal/fake/captured"

// mustRead returns a captured file's bytes.
func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(captured, name))
	if err != nil {
		t.Fatalf("read captured file: %v", err)
	}
	return b
}

// capturedFiles lists captured files (aimock/ included) matching the globs.
func capturedFiles(t testing.TB, globs ...string) []string {
	t.Helper()
	var names []string
	for _, dir := range []string{"", "aimock"} {
		for _, g := range globs {
			m, err := filepath.Glob(filepath.Join(captured, dir, g))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m {
				rel, _ := filepath.Rel(captured, p)
				names = append(names, filepath.ToSlash(rel))
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no captured files match %v", globs)
	}
	return names
}
