package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// callIDs gives the same ids whether it searches the answer's ids (few
// calls) or keeps them in a map (many).
func TestCallIDs(t *testing.T) {
	weather := func(id string) ccall { return ccall{id: id, name: "weather", args: []byte(`{}`)} }
	shell := ccall{name: "shell", args: []byte(`{}`)}
	many := func(n int) []ccall {
		out := []ccall{weather("call_weather_3")}
		for range n - 1 {
			out = append(out, weather(""))
		}
		return out
	}
	manyIDs := func(n int) string {
		ids := []string{"call_weather_3", "call_weather", "call_weather_2"}
		for k := 4; len(ids) < n; k++ {
			ids = append(ids, fmt.Sprintf("call_weather_%d", k))
		}
		return strings.Join(ids, " ")
	}
	for _, tc := range []struct {
		name     string
		calls    []ccall
		defaults map[string]int
		ids      string
		counts   string
	}{
		{"none", nil, nil, "", ""},
		{"one", []ccall{weather("")}, nil, "call_weather", "weather=1"},
		{"two of one function", []ccall{weather(""), weather("")}, nil, "call_weather call_weather_2", "weather=2"},
		{"after the conversation's", []ccall{weather(""), shell}, map[string]int{"weather": 2}, "call_weather_3 call_shell", "weather=3 shell=1"},
		{"an own id a default would take", []ccall{weather(""), weather("call_weather_2"), weather("")}, nil,
			"call_weather call_weather_2 call_weather_3", "weather=3"},
		{"own ids only", []ccall{weather("a"), weather("b")}, nil, "a b", ""},
		{"few, searched", many(fewCalls), nil, manyIDs(fewCalls), fmt.Sprintf("weather=%d", fewCalls)},
		{"many, in a map", many(fewCalls + 5), nil, manyIDs(fewCalls + 5), fmt.Sprintf("weather=%d", fewCalls+5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, counts := callIDs(tc.calls, tc.defaults)
			var ids, cs []string
			for _, c := range out {
				ids = append(ids, c.ID)
			}
			for _, c := range counts {
				cs = append(cs, fmt.Sprintf("%s=%d", c.name, c.n))
			}
			if got := strings.Join(ids, " "); got != tc.ids {
				t.Errorf("ids %q, want %q", got, tc.ids)
			}
			if got := strings.Join(cs, " "); got != tc.counts {
				t.Errorf("counts %q, want %q", got, tc.counts)
			}
		})
	}
}

// A conversation remembers its latest rememberCalls calls, searched while
// few and in a map past fewCalls, and a call remembered again keeps its
// place with its new arguments.
func TestCallMemory(t *testing.T) {
	var m callMemory
	call := func(k int, args string) wire.ToolCall {
		return wire.ToolCall{ID: fmt.Sprintf("id%d", k), Name: fmt.Sprintf("f%d", k), Arguments: []byte(args)}
	}
	check := func(k int, want string) {
		t.Helper()
		rc, ok := m.get(fmt.Sprintf("id%d", k))
		switch {
		case want == "" && ok:
			t.Errorf("id%d: remembered, want forgotten", k)
		case want != "" && !ok:
			t.Errorf("id%d: forgotten, want %s", k, want)
		case ok && (string(rc.args) != want || rc.name != fmt.Sprintf("f%d", k)):
			t.Errorf("id%d: %s %s, want f%d %s", k, rc.name, rc.args, k, want)
		}
	}
	for k := range fewCalls {
		m.remember(call(k, "first"))
	}
	m.remember(call(3, "again"))
	if m.byID != nil {
		t.Fatalf("%d calls kept in a map, want searched", fewCalls)
	}
	check(3, "again")
	check(4, "first")
	check(fewCalls, "")
	c := m.clone()
	for k := fewCalls; k < rememberCalls+10; k++ {
		m.remember(call(k, "first"))
	}
	if m.byID == nil || len(m.order) != rememberCalls || len(m.byID) != rememberCalls {
		t.Fatalf("after %d calls: %d in order, %d in the map; want %d in both", rememberCalls+10, len(m.order), len(m.byID), rememberCalls)
	}
	for k := range 10 {
		check(k, "")
	}
	check(10, "first")
	check(rememberCalls+9, "first")
	m.remember(call(500, "again"))
	check(500, "again")
	if m.order[500-10].id != "id500" {
		t.Errorf("a call remembered again moved from its place")
	}
	m = c
	check(3, "again")
	check(fewCalls, "")
}
