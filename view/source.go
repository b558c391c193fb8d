package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
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

// LogEntry is one request this process handled, as the live log shows it.
type LogEntry struct {
	// Seq numbers the entries from 1 in the order they were added; it is
	// the cursor of Source.Log.
	Seq  uint64
	Time time.Time
	// Cassette is where the request went (a file, or a scenario), and Name
	// the cassette's name for the pages' ?cassette= parameter ("" when the
	// Source has one cassette).
	Cassette, Name string
	Method         string
	Upstream       string
	Path           string
	Kind           string
	Model          string
	Stream         bool
	Turns          int
	// Interaction is the id of the interaction served or recorded; 0 when
	// there was none, and then Miss says why.
	Interaction uint64
	Miss        string
	// Closest is the recorded interaction a missed request is closest to
	// (0 when none), and Differences where the request differs from it,
	// the first first.
	Closest     uint64
	Differences []match.Difference
	// Scenario, Conversation and Step say what answered a scripted request;
	// for a miss, Step is the closest step.
	Scenario, Conversation, Step string
	// Repeat marks a serve of an exhausted recording; Incomplete a serve
	// whose client left before the end.
	Repeat, Incomplete bool
	Status             int
	// Millis is the time from the request's arrival to the end of its answer.
	Millis      float64
	ToolCalls   []wire.ToolCall
	ToolResults []wire.ToolResult
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
