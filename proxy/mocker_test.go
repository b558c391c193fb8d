package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// mockerOf is a mocker in instant pace serving the scenario yaml under
// name, with cfg's other fields, journal j and no log.
func mockerOf(t *testing.T, name, yaml string, cfg Config, j *journal) *mocker {
	t.Helper()
	s, err := scenario.Parse(name+".yaml", []byte(yaml))
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
	cfg.Mode, cfg.Pace, cfg.Scenarios = ModeMock, PaceInstant, map[string]*scenario.Engine{name: eng}
	return newMocker(cfg, j, slog.New(slog.DiscardHandler), red)
}

// TestMockerStandsAlone: mock mode is its own type, which answers a request
// and reports a miss with only its engines, a journal, a logger and a
// redactor, no Server around it.
func TestMockerStandsAlone(t *testing.T) {
	var misses []string
	j := &journal{limit: 10}
	m := mockerOf(t, "alone", "version: 1\nname: alone\nsteps:\n  - when: {latest-user: {equals: hi}}\n    respond: {text: hello}\n",
		Config{OnMiss: func(msg string) { misses = append(misses, msg) }}, j)
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

// TestMockerTurns: requests that share a turn key are answered one at a
// time, a waiter whose context ends leaves without the turn, and a turn no
// one holds or waits for is forgotten and kept (at most maxSpareTurns) for
// another key, empty.
func TestMockerTurns(t *testing.T) {
	m := &mocker{turns: map[turnKey]*turn{}}
	a, b := turnOf("s", "a", nil), turnOf("s", "", []byte("{}"))
	if a == b || turnOf("s", "", []byte("{}")) != b || turnOf("t", "a", nil) == a {
		t.Fatalf("turn keys: %+v %+v", a, b)
	}
	ta, err := m.take(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error)
	go func() {
		_, err := m.take(ctx, a)
		waited <- err
	}()
	cancel()
	if err := <-waited; err == nil {
		t.Error("a waiter whose context ended took the turn held by another")
	}
	next := make(chan *turn)
	go func() {
		t2, _ := m.take(context.Background(), a)
		next <- t2
	}()
	select {
	case <-next:
		t.Fatal("two requests of one conversation held its turn at once")
	case <-time.After(10 * time.Millisecond):
	}
	m.give(a, ta)
	t2 := <-next
	if t2 != ta {
		t.Error("the waiter got another turn than the one it waited for")
	}
	m.give(a, t2)
	if len(m.turns) != 0 || len(m.spare) != 1 {
		t.Fatalf("%d turns in use and %d spare after both gave theirs back, want 0 and 1", len(m.turns), len(m.spare))
	}
	tb, err := m.take(context.Background(), b)
	if err != nil || tb != ta || len(m.spare) != 0 {
		t.Fatalf("another key took %p (%v), want the spare turn %p", tb, err, ta)
	}
	m.give(b, tb)
	for i := range maxSpareTurns + 10 {
		k := turnOf("s", strconv.Itoa(i), nil)
		tk, _ := m.take(context.Background(), k)
		defer m.give(k, tk)
	}
	if len(m.spare) != 0 {
		t.Errorf("%d spare turns while every turn is in use", len(m.spare))
	}
}

// TestMockerSpareTurnsBounded: no more than maxSpareTurns are kept.
func TestMockerSpareTurnsBounded(t *testing.T) {
	m := &mocker{turns: map[turnKey]*turn{}}
	var held []*turn
	for i := range maxSpareTurns + 10 {
		tk, _ := m.take(context.Background(), turnOf("s", strconv.Itoa(i), nil))
		held = append(held, tk)
	}
	for i, tk := range held {
		m.give(turnOf("s", strconv.Itoa(i), nil), tk)
	}
	if len(m.turns) != 0 || len(m.spare) != maxSpareTurns {
		t.Errorf("%d in use, %d spare, want 0 and %d", len(m.turns), len(m.spare), maxSpareTurns)
	}
}

// TestMockerEventLists: a list of events goes back to the pool emptied and
// cleared (it keeps no answer's bytes alive), one longer than
// maxPooledEvents is left to the collector, and streamed answers laid out
// in a reused list are those laid out in a new one.
func TestMockerEventLists(t *testing.T) {
	m := &mocker{}
	evs := []wire.Event{{Raw: []byte("data: 1\n\n")}, {Raw: []byte("data: 2\n\n")}}
	ep := m.eventList()
	m.recycleEvents(ep, evs)
	if len(*ep) != 0 || cap(*ep) != 2 || evs[0].Raw != nil || evs[1].Raw != nil {
		t.Errorf("recycled list %d of %d, events %q: want empty, cleared", len(*ep), cap(*ep), evs)
	}
	long := new([]wire.Event)
	m.recycleEvents(long, make([]wire.Event, maxPooledEvents+1))
	for range 4 {
		if got, _ := m.eventLists.Get().(*[]wire.Event); got == long {
			t.Fatal("a list longer than maxPooledEvents was kept")
		}
	}

	m = mockerOf(t, "s", "version: 1\nname: s\non-exhausted: restart\nsteps:\n  - respond: {text: \"one two three four five six\", stream: {chunk: 2}}\n",
		Config{}, &journal{limit: 10})
	ask := func(conv string) string {
		body := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(body)))
		r.Header.Set(ConversationHeader, conv)
		w := httptest.NewRecorder()
		m.serve(w, r, time.Now(), route{name: "openai", path: "/v1/chat/completions"}, wire.KindOpenAIChat, body, nil, nil)
		return w.Body.String()
	}
	first := ask("a")
	for i := range 3 {
		if got := ask("b" + strconv.Itoa(i)); got != first || !strings.HasSuffix(got, "data: [DONE]\n\n") {
			t.Errorf("answer %d in a reused list:\n%s\nwant\n%s", i+2, got, first)
		}
	}
}
