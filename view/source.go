package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

var (
	// ErrNotFound means a cassette, interaction or fixture a Source was
	// asked for does not exist; the view answers 404.
	ErrNotFound = errors.New("not found")
	// ErrBadName means a cassette name is not one a Source accepts; the view
	// answers 400.
	ErrBadName = errors.New("bad cassette name")
	// ErrNoCassette means the Source serves scenarios and no cassette at
	// all (llmproxy mock, view --scenario): the interactions page says so,
	// and an interaction's page answers 404.
	ErrNoCassette = fmt.Errorf("llmproxy: this process serves scenarios, no cassette: %w", ErrNotFound)
)

// Source is what the view shows. Cassettes are named as the ?cassette=
// query parameter names them: "" is the only cassette of a Source that has
// one. Every method is safe for concurrent use and never writes a cassette.
// Errors wrap ErrNotFound or ErrBadName where those apply.
type Source interface {
	// Cassettes lists the names of the cassettes there are to show, or nil
	// when the Source has only the cassette "", or returns ErrNoCassette
	// when it has none (and every other cassette method then returns it).
	Cassettes(ctx context.Context) ([]string, error)
	// Last is the id of a cassette's newest interaction (0 when it has
	// none); ids count from 1 with no gaps, so it is also their number.
	Last(ctx context.Context, name string) (uint64, error)
	// Walk calls fn with a cassette's interactions from id from onwards in
	// recorded order, or, when back is set, from id from down to the first,
	// until fn returns false or an error (which Walk returns).
	Walk(ctx context.Context, name string, from uint64, back bool, fn func(i *cassette.Interaction) (bool, error)) error
	// Interaction returns one interaction.
	Interaction(ctx context.Context, name string, id uint64) (*cassette.Interaction, error)
	// Fixture returns the fixture a cassette stores for a tool call id, as
	// stored (see fixture.Parse).
	Fixture(ctx context.Context, name, callID string) (json.RawMessage, error)
	// Served reports whether an interaction was served whole in this
	// process.
	Served(name string, id uint64) bool
	// Log returns what this process served after the entry numbered after
	// (0 for all), oldest first, at most the newest limit of them.
	Log(ctx context.Context, after uint64, limit int) ([]LogEntry, error)
	// LogChanged returns a channel closed when the next entry is added.
	LogChanged() <-chan struct{}
	// Scenarios describes the scenarios served, with the steps answered in
	// this process; nil when there are none.
	Scenarios(ctx context.Context) ([]Graph, error)
}

// LogEntry is one request this process handled, as the live log and GET
// /_llmproxy/log show it: when, on which cassette, what was asked, what
// answered it (an interaction id, or why nothing did), and the tool traffic
// it carried. It is llmproxy's one log entry type: package proxy's journal
// holds these, and its JSON is the API's.
type LogEntry struct {
	// Seq numbers the entries from 1 in the order they were added; it is
	// the cursor of Source.Log and of the API's pages
	// (GET /_llmproxy/log?after=SEQ&limit=N).
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Cassette is where the request went (a file, or a scenario).
	Cassette string `json:"cassette"`
	Method   string `json:"method"`
	Upstream string `json:"upstream"`
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	// Model, Stream and Turns summarise an LLM request body: the model
	// asked for, whether a stream was, and the number of conversation turns.
	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	Turns  int    `json:"turns,omitempty"`
	// Interaction is the id of the interaction served or recorded; 0 when
	// there was none, and then Miss says why.
	Interaction uint64 `json:"interaction,omitempty"`
	Miss        string `json:"miss,omitempty"`
	// Closest is the recorded interaction a missed request is closest to
	// (0 when none), and Differences where the request differs from it,
	// the first first (at most three).
	Closest     uint64             `json:"closest,omitempty"`
	Differences []match.Difference `json:"differences,omitempty"`
	// Repeat marks a serve of an exhausted recording under
	// --on-exhausted repeat-last.
	Repeat bool `json:"repeat,omitempty"`
	// Recorded marks a request answered by its upstream and recorded as
	// Interaction (record, auto); an entry with an Interaction and without
	// it was served from the cassette.
	Recorded bool `json:"recorded,omitempty"`
	// Scenario, Conversation and Step say what answered a scripted request;
	// Step is "" on a miss.
	Scenario     string `json:"scenario,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Step         string `json:"step,omitempty"`
	// Incomplete marks a serve whose client left before the whole response
	// was delivered.
	Incomplete bool `json:"incomplete,omitempty"`
	// Fault is the fault injected into the answer (its canonical spec, see
	// package faults), FaultRequest the request's number in its
	// conversation that picked it, and FaultSkipped, when set, why the
	// fault picked was not injected (the answer was served whole).
	Fault        string `json:"fault,omitempty"`
	FaultRequest uint64 `json:"fault_request,omitempty"`
	FaultSkipped string `json:"fault_skipped,omitempty"`
	Status       int    `json:"status"`
	// Millis is the time from the request's arrival to the end of its answer.
	Millis float64 `json:"ms"`
	// ToolCalls are the tool calls the response made, and ToolResults the
	// tool results the request sent, in their listing form.
	ToolCalls   []cassette.ToolCall   `json:"tool_calls,omitempty"`
	ToolResults []cassette.ToolResult `json:"tool_results,omitempty"`
	// ToolCallsOmitted and ToolResultsOmitted count the calls and results
	// the log left out of ToolCalls and ToolResults to bound an entry.
	ToolCallsOmitted   int `json:"tool_calls_omitted,omitempty"`
	ToolResultsOmitted int `json:"tool_results_omitted,omitempty"`
	// Name is the cassette's name for the pages' ?cassette= parameter (""
	// when the Source has one cassette); the API does not show it.
	Name string `json:"-"`
}

// Graph is a scenario as the view draws it.
type Graph struct {
	// Name is the scenario's name, and File where it was loaded from.
	Name, File string
	// Steps are in file order.
	Steps []Step
}

// Step is one step of a scenario.
type Step struct {
	ID string
	// When and Respond say the step's conditions and answer in one line
	// each ("" for a step that always holds).
	When, Respond string
	// Then lists the ids of the steps that may answer next, in the order
	// they are tried, with the default (the next step in the file) filled
	// in; empty after the last step or a complete one.
	Then []string
	// Complete marks a step that ends the conversation.
	Complete bool
	// Answered counts the answers this step gave in this process.
	Answered int
}
