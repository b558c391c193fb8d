package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

// shortLen is how many characters of a value a miss message shows.
const shortLen = 120

// condition is one compiled condition of a step.
type condition interface {
	// check reports whether the request meets the condition; when it does
	// not, it names the failing part and says what the request had and
	// what the condition wants.
	check(v *view) (ok bool, failure CandidateMiss)
}

// view is a request as the conditions read it, with what is derived from it
// computed once.
type view struct {
	req  *wire.Request
	body []byte
	conv *conversation // whose answers' calls a tool result may name; nil for none

	user       string
	userFound  bool
	startsRead bool              // beside userFound: the view stays in its size class
	latest     []wire.ToolResult // the results after the last assistant turn
	lastCalls  []wire.ToolCall   // the calls echoed in the last assistant turn
	turnOfPath map[string]int    // turn by path; built by the first turnOf
	starts     []int             // the entries that may answer, once startsRead (program.startsOf)
	startOne   [1]int            // holds a single entry found by the index for starts
	warmed     int               // what cstep.warm read of the first entry or candidate found
}

// rememberedCall is a call an answer of the conversation made.
type rememberedCall struct {
	name string
	args []byte
}

func newView(req *wire.Request, body []byte) *view {
	v := &view{req: req, body: body}
	lastAssistant := -1
	for i, t := range req.Turns {
		switch t.Role {
		case "assistant", "model", "function_call":
			lastAssistant = i
		}
	}
	withResults := make([]bool, len(req.Turns))
	for _, r := range req.ToolResults {
		i := v.turnOf(r.Path)
		if i >= 0 {
			withResults[i] = true
		}
		if i > lastAssistant {
			v.latest = append(v.latest, r)
		}
	}
	for _, c := range req.ToolCalls {
		if lastAssistant >= 0 && v.turnOf(c.Path) == lastAssistant {
			v.lastCalls = append(v.lastCalls, c)
		}
	}
	for i := len(req.Turns) - 1; i >= 0; i-- {
		t := req.Turns[i]
		if t.Role == "user" && (t.Text != "" || !withResults[i]) {
			v.user, v.userFound = t.Text, true
			break
		}
	}
	return v
}

// turnOf returns the index of the turn a gjson path of the body lies in
// ("messages.3.content" lies in "messages.3"), or -1.
func (v *view) turnOf(path string) int {
	if len(v.req.Turns) <= fewTurns {
		return turnIn(v.req.Turns, path)
	}
	if v.turnOfPath == nil {
		v.turnOfPath = make(map[string]int, len(v.req.Turns))
		for i, t := range v.req.Turns {
			v.turnOfPath[t.Path] = i
		}
	}
	for p := path; p != ""; {
		if i, ok := v.turnOfPath[p]; ok {
			return i
		}
		cut := strings.LastIndexByte(p, '.')
		if cut < 0 {
			break
		}
		p = p[:cut]
	}
	return -1
}

// fewTurns is the most turns turnOf looks a path up among one by one;
// with more, it builds a map of them once.
const fewTurns = 16

// turnIn is turnOf by a walk over turns: the turn whose path is path or
// its longest prefix ending before a '.' (the last such turn, as the map
// keeps the last turn of a path), or -1.
func turnIn(turns []wire.Turn, path string) int {
	found, n := -1, 0
	for i, t := range turns {
		if t.Path == "" || len(t.Path) < n || !strings.HasPrefix(path, t.Path) {
			continue
		}
		if len(path) == len(t.Path) || path[len(t.Path)] == '.' {
			found, n = i, len(t.Path)
		}
	}
	return found
}

// callOf finds the call a tool result answers: the call echoed in the
// request with its id, else the call the conversation's answer made with
// that id, else (on wires without ids) the echoed call of the same name in
// the same position among the latest calls.
func (v *view) callOf(r wire.ToolResult) (name string, args []byte, ok bool) {
	if r.CallID != "" {
		for _, c := range v.req.ToolCalls {
			if c.ID == r.CallID {
				return c.Name, c.Arguments, true
			}
		}
		if v.conv != nil {
			if c, ok := v.conv.recall(r.CallID); ok {
				return c.name, c.args, true
			}
		}
		return r.Name, nil, false
	}
	nth := 0
	for _, o := range v.latest {
		if o.Path == r.Path {
			break
		}
		if o.CallID == "" && o.Name == r.Name {
			nth++
		}
	}
	for _, c := range v.lastCalls {
		if c.Name == r.Name {
			if nth == 0 {
				return c.Name, c.Arguments, true
			}
			nth--
		}
	}
	return r.Name, nil, false
}

// textCond is latest-user or system: equals, contains or matches.
type textCond struct {
	name  string
	op    TextOp
	value string
	re    *regexp.Regexp
}

func (c *textCond) check(v *view) (bool, CandidateMiss) {
	var text string
	found := true
	if c.name == "system" {
		text = v.req.System
		found = text != ""
	} else {
		text, found = v.user, v.userFound
	}
	var ok bool
	switch c.op {
	case OpEquals:
		ok = found && text == c.value
	case OpContains:
		ok = found && strings.Contains(text, c.value)
	case OpMatches:
		ok = found && c.re.MatchString(text)
	}
	if ok {
		return true, CandidateMiss{}
	}
	had := quote(text)
	if !found {
		had = "no " + strings.ReplaceAll(c.name, "latest-", "") + " text"
	}
	return false, CandidateMiss{Condition: c.name, Had: had, Wants: string(c.op) + " " + quote(c.value)}
}

// toolResultCond holds when a latest tool result answers the call described.
type toolResultCond struct {
	fixture string // the fixture it came from, for messages
	name    string
	id      string // "" for any
	args    []byte // nil for any
	result  []byte // nil for any
}

// stages of a tool-result check, in the order they are tried; a miss
// reports the result that got furthest.
const (
	stageName = iota
	stageID
	stageArgs
	stageResult
	stageDone
)

func (c *toolResultCond) check(v *view) (bool, CandidateMiss) {
	if len(v.latest) == 0 {
		return false, CandidateMiss{Condition: "tool-result", Had: "no tool result after the last assistant turn", Wants: c.describe()}
	}
	best, miss := -1, CandidateMiss{}
	for _, r := range v.latest {
		stage, m := c.against(v, r)
		if stage == stageDone {
			return true, CandidateMiss{}
		}
		if stage > best {
			best, miss = stage, m
		}
	}
	return false, miss
}

// against checks one result and returns the stage it failed at.
func (c *toolResultCond) against(v *view, r wire.ToolResult) (int, CandidateMiss) {
	name, args, known := v.callOf(r)
	if r.Name != "" {
		name = r.Name
	}
	callDesc := "call " + r.CallID
	if r.CallID == "" {
		callDesc = "a call"
	}
	if name != c.name {
		had := "a result for " + quote(name)
		if name == "" {
			had = "a result for " + callDesc + " of an unknown function"
		}
		if len(v.latest) > 1 {
			had = "results for " + v.names()
		}
		return stageName, CandidateMiss{Condition: "tool-result.name", Had: had, Wants: c.describe()}
	}
	if c.id != "" && r.CallID != "" && r.CallID != c.id {
		return stageID, CandidateMiss{Condition: "tool-result.id", Had: "a result for " + r.CallID, Wants: c.id}
	}
	if c.args != nil {
		switch {
		case !known:
			return stageArgs, CandidateMiss{Condition: "tool-result.arguments", Had: "no arguments known for " + callDesc, Wants: short(c.args)}
		case !sameJSON(args, c.args):
			return stageArgs, CandidateMiss{Condition: "tool-result.arguments", Had: short(args) + " for " + callDesc, Wants: short(c.args)}
		}
	}
	if c.result != nil && !sentOutput(v.req.Kind, r, c.result) {
		had := "no content"
		if outs := sentOutputs(v.req.Kind, r); len(outs) > 0 && len(outs[0]) > 0 {
			had = short(outs[0])
		}
		return stageResult, CandidateMiss{Condition: "tool-result.result", Had: had + " for " + callDesc, Wants: short(c.result)}
	}
	return stageDone, CandidateMiss{}
}

func (v *view) names() string {
	var ns []string
	for _, r := range v.latest {
		n, _, _ := v.callOf(r)
		if r.Name != "" {
			n = r.Name
		}
		ns = append(ns, strconv.Quote(n))
	}
	return strings.Join(ns, ", ")
}

func (c *toolResultCond) describe() string {
	d := "a result for " + quote(c.name)
	if c.fixture != "" {
		d += " (fixture " + c.fixture + ")"
	}
	if c.id != "" {
		d += " call " + c.id
	}
	return d
}

type modelCond string

func (c modelCond) check(v *view) (bool, CandidateMiss) {
	if v.req.Model == string(c) {
		return true, CandidateMiss{}
	}
	had := quote(v.req.Model)
	if v.req.Model == "" {
		had = "no model"
	}
	return false, CandidateMiss{Condition: "model", Had: had, Wants: quote(string(c))}
}

type apiCond wire.Kind

func (c apiCond) check(v *view) (bool, CandidateMiss) {
	if v.req.Kind == wire.Kind(c) {
		return true, CandidateMiss{}
	}
	return false, CandidateMiss{Condition: "api", Had: string(v.req.Kind), Wants: string(c)}
}

type toolsCond []string

func (c toolsCond) check(v *view) (bool, CandidateMiss) {
	for _, name := range c {
		if !slices.Contains(v.req.Tools, name) {
			had := "no tools"
			if len(v.req.Tools) > 0 {
				had = "tools " + shorten(strings.Join(v.req.Tools, ", "), shortLen)
			}
			return false, CandidateMiss{Condition: "tools-offered", Had: had, Wants: "tool " + quote(name)}
		}
	}
	return true, CandidateMiss{}
}

type jsonCond JSONCondition

func (c jsonCond) check(v *view) (bool, CandidateMiss) {
	got := gjson.GetBytes(v.body, c.Path)
	if got.Exists() && sameJSON([]byte(got.Raw), c.Equals) {
		return true, CandidateMiss{}
	}
	had := "nothing"
	if got.Exists() {
		had = short([]byte(got.Raw))
	}
	return false, CandidateMiss{Condition: fmt.Sprintf("json %s", c.Path), Had: had, Wants: short(c.Equals)}
}

func quote(s string) string { return strconv.Quote(shorten(s, shortLen)) }

func short(b []byte) string { return shorten(compactJSON(b), shortLen) }
