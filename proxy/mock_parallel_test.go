package proxy_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/mocktest"
)

// TestMockParallelWithoutHeaders: sixteen weather rounds at once on every
// wire, no conversation header, interleaved: each finds its own position in
// its request, the ids follow the path (answer n of every conversation has
// the id ending -n), and a second mock gives byte-identical answers (run
// with -race).
func TestMockParallelWithoutHeaders(t *testing.T) {
	weather, err := os.ReadFile("../docs/scenarios/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var runs [2]map[string]string
	for r := range runs {
		m := startMock(t, []string{string(weather)})
		if runs[r], err = mocktest.Conversations(context.Background(), m.srv.URL, 16); err != nil {
			t.Fatalf("mock %d: %v", r+1, err)
		}
	}
	if len(runs[0]) != 16*2*len(mocktest.Wires) {
		t.Fatalf("%d answers, want %d", len(runs[0]), 16*2*len(mocktest.Wires))
	}
	for key, body := range runs[0] {
		if runs[1][key] != body {
			t.Errorf("%s: the two mocks answered differently:\n%s\n---\n%s", key, body, runs[1][key])
		}
		turn := key[len(key)-1:]
		if !strings.HasPrefix(key, "ollama/") && !strings.Contains(body, `weather-`+turn+`"`) {
			t.Errorf("%s: the answer's id does not end -%s: %s", key, turn, body)
		}
	}
}
