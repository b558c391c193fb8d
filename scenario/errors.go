package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

var (
	// ErrInvalid means a scenario does not load or build: an ErrorList says
	// every problem.
	ErrInvalid = errors.New("invalid scenario")
	// ErrMiss means no step answers a request; a *Miss says why. The server
	// answers it with HTTP 400 and the error type scenario_miss, and nothing
	// changes.
	ErrMiss = errors.New("scenario miss")
	// ErrConversationName means a request names a conversation longer than
	// MaxConversationName bytes.
	ErrConversationName = errors.New("conversation name too long")
)

// Error is one problem in a scenario, at a place: in a file, FILE:LINE:
// WHERE: MESSAGE; built in Go, scenario NAME: WHERE: MESSAGE.
type Error struct {
	// File is the scenario file; "" for a scenario built in Go.
	File string
	// Line is the 1-based line of the problem in File; 0 when unknown.
	Line int
	// Where names the element at fault: `step "ask": respond.tool-calls[0]`,
	// `fixture "paris": arguments.unit`, `on-exhausted`; "" for the file as a
	// whole.
	Where string
	// Message says what is wrong.
	Message string

	scenario string // the scenario's name, for an error without a file
	ptr      string // JSON Pointer of the element, to find its line
	rule     rule   // for the problems found on the whole graph
}

// rule marks the problems found on the scenario as a whole.
type rule uint8

const (
	ruleLocal rule = iota
	ruleUnreachable
	ruleUnused
)

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "":
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	case e.scenario != "":
		fmt.Fprintf(&b, "scenario %s: ", e.scenario)
	}
	if e.Where != "" {
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// ErrorList is every problem found in a scenario, in file order. It is the
// error Load, Parse, Builder.Build and NewEngine return for an invalid
// scenario, and it wraps ErrInvalid.
type ErrorList []*Error

// Error lists the problems one a line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, each of which wraps ErrInvalid.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// sorted orders the problems by file and line, keeping the order in which
// they were found among equals.
func (l ErrorList) sorted() ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return l
}

// Miss says why no step answers a request. It wraps ErrMiss.
type Miss struct {
	Scenario     string
	Conversation string
	// Reason is set when no step was a candidate: the conversation is
	// exhausted or has had its MaxSteps answers.
	Reason string
	// Candidates are the steps that were tried, each with its first
	// condition that failed.
	Candidates []CandidateMiss
	// Position says, for a conversation read from the request, where the
	// request put it ("after step \"ask\", 1 answer"); "" for a named one.
	Position string
	// Note adds what may explain the miss: entry steps not tried, or
	// requests that cannot be told apart.
	Note string
}

// CandidateMiss is one candidate step and the first of its conditions that
// the request did not meet.
type CandidateMiss struct {
	Step string
	// Condition names the condition: "latest-user", "tool-result.result", ….
	Condition string
	// Had is what the request had, Wants what the step wants, both
	// shortened.
	Had, Wants string
}

func (m *Miss) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s, conversation %q", m.Scenario, m.Conversation)
	if m.Position != "" {
		fmt.Fprintf(&b, " (read from the request: %s)", m.Position)
	}
	b.WriteString(": ")
	if m.Reason != "" {
		b.WriteString(m.Reason)
	} else {
		b.WriteString("no step answers the request: ")
		for i, c := range m.Candidates {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "step %q: %s: the request has %s, the step wants %s", c.Step, c.Condition, c.Had, c.Wants)
		}
	}
	if m.Note != "" {
		b.WriteString("; ")
		b.WriteString(m.Note)
	}
	return b.String()
}

// Unwrap returns ErrMiss.
func (m *Miss) Unwrap() error { return ErrMiss }

// shorten cuts s to at most n characters, marking a cut with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
