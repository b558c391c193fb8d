package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// TestMockerStandsAlone: mock mode is its own type, which answers a request
// and reports a miss with only its engines, a journal, a logger and a
// redactor, no Server around it.
func TestMockerStandsAlone(t *testing.T) {
	s, err := scenario.Parse("alone.yaml", []byte("version: 1\nname: alone\nsteps:\n  - when: {latest-user: {equals: hi}}\n    respond: {text: hello}\n"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := scenario.NewEngine(s)
	if err != nil {
		t.Fatal(err)
	}
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var misses []string
	j := &journal{limit: 10}
	m := newMocker(Config{Mode: ModeMock, Scenarios: map[string]*scenario.Engine{"alone": eng}, Pace: PaceInstant,
		OnMiss: func(msg string) { misses = append(misses, msg) }}, j, slog.New(slog.DiscardHandler), red)
	ask := func(text string) (int, string) {
		body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + text + `"}]}`)
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		m.serve(w, r, time.Now(), route{name: "openai", path: "/v1/chat/completions"}, wire.KindOpenAIChat, body, nil, nil)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	if status, body := ask("bye"); status != http.StatusBadRequest || len(misses) != 1 {
		t.Errorf("a miss: %d %s, misses %q", status, body, misses)
	}
	if status, body := ask("hi"); status != http.StatusOK || !strings.Contains(body, `"hello"`) {
		t.Errorf("an answer: %d %s", status, body)
	}
	if got, _ := j.since(0, 10); len(got) != 2 || got[0].Miss == "" || got[1].Step != "step-1" {
		t.Errorf("journal %+v, want the miss then step-1", got)
	}
	if u := m.unusedSteps(); len(u) != 0 {
		t.Errorf("unused %v after step-1 answered", u)
	}
}
