package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// verifyQuery is what GET /_llmproxy/verify asks: the calls of tool whose
// arguments hold args (each key JSON-equal), count of them (nil: at least
// one), among the open session's entries or all.
type verifyQuery struct {
	tool  string
	args  map[string]json.RawMessage
	count *int
	all   bool
}

// parseVerify reads a verify query; its error is the message of a 400.
func parseVerify(r *http.Request) (verifyQuery, error) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "tool", "args", "count", "scope":
		default:
			return verifyQuery{}, fmt.Errorf("unknown query parameter %q (want tool, args, count, scope)", k)
		}
	}
	v := verifyQuery{tool: q.Get("tool")}
	if v.tool == "" {
		return v, fmt.Errorf("give tool=NAME")
	}
	if a := q.Get("args"); a != "" {
		if err := json.Unmarshal([]byte(a), &v.args); err != nil || v.args == nil {
			return v, fmt.Errorf("args=%s is not a JSON object: %v", a, err)
		}
	}
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return v, fmt.Errorf("count=%s is not a number of calls (0 or more)", c)
		}
		v.count = &n
	}
	switch q.Get("scope") {
	case "", "session":
	case "all":
		v.all = true
	default:
		return v, fmt.Errorf("scope=%s: want session or all", q.Get("scope"))
	}
	return v, nil
}

// matches reports whether a call's arguments hold every wanted key with a
// JSON-equal value.
func (v *verifyQuery) matches(c cassette.ToolCall) bool {
	if c.Name != v.tool {
		return false
	}
	if len(v.args) == 0 {
		return true
	}
	var got map[string]json.RawMessage
	if json.Unmarshal(c.Arguments, &got) != nil {
		return false
	}
	for k, want := range v.args {
		g, ok := got[k]
		if !ok {
			return false
		}
		if eq, err := jsonvalue.Equal(g, want); err != nil || !eq {
			return false
		}
	}
	return true
}

// handleVerify answers whether the tool calls the served answers made (the
// log's) hold the calls a query expects.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	v, err := parseVerify(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: GET /_llmproxy/verify: "+err.Error())
		return
	}
	only, wanted := (func(*tape) bool)(nil), func(*logged) bool { return true }
	scope := "all"
	if se := s.sessions.current(); !v.all && se != nil {
		scope = "session " + se.info.ID
		first, t := se.firstSeq, se.tape
		wanted = func(e *logged) bool { return e.Seq > first && (t == nil || e.tape == t) }
		if t != nil {
			only = func(o *tape) bool { return o == t }
		}
	}
	entries, _, _, err := s.entriesWhere(r.Context(), only, wanted, logPage{})
	if err != nil {
		return
	}
	calls := []cassette.ToolCall{}
	for _, e := range entries {
		for _, c := range e.ToolCalls {
			if v.matches(c) {
				calls = append(calls, c)
			}
		}
	}
	ok := len(calls) > 0
	want := "at least one call"
	if v.count != nil {
		ok, want = len(calls) == *v.count, fmt.Sprintf("%d call(s)", *v.count)
	}
	answer := map[string]any{"ok": ok, "tool": v.tool, "want": v.count, "got": len(calls), "calls": calls, "scope": scope}
	if !ok {
		what := "tool " + v.tool
		if len(v.args) > 0 {
			b, _ := json.Marshal(v.args)
			what += " with arguments holding " + string(b)
		}
		answer["message"] = fmt.Sprintf("llmproxy: verify: expected %s of %s in %s, got %d", want, what, scope, len(calls))
	}
	writeJSON(w, http.StatusOK, answer)
}
