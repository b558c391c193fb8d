package scenario_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
)

// FuzzParse: no file makes the loader panic or hang, and what loads also
// makes an engine.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"valid", "check"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.*"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil && filepath.Ext(file) != ".err" {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenario.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if _, err := scenario.NewEngine(s); err != nil {
			t.Fatalf("loaded, but no engine: %v", err)
		}
	})
}
