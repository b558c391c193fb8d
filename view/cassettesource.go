package view

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/llmproxy/llmproxy/cassette"
)

// CassetteSource is the Source of one cassette alone, as llmproxy view
// shows it: its interactions and fixtures, an empty log, nothing served,
// no scenario. It only reads.
type CassetteSource struct {
	C *cassette.Cassette
}

var _ Source = CassetteSource{}

// check names the cassette: only "" is one.
func (s CassetteSource) check(name string) error {
	if name != "" {
		return fmt.Errorf("llmproxy: this view shows one cassette, %s; there is no cassette %q: %w", s.C.Path(), name, ErrNotFound)
	}
	return nil
}

// notFound wraps a cassette's not-found error in ErrNotFound.
func notFound(err error) error {
	if cassette.IsNotFound(err) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// Cassettes implements Source: there is one.
func (s CassetteSource) Cassettes(context.Context) ([]string, error) { return nil, nil }

// Last implements Source.
func (s CassetteSource) Last(_ context.Context, name string) (uint64, error) {
	if err := s.check(name); err != nil {
		return 0, err
	}
	return s.C.Last()
}

// Walk implements Source.
func (s CassetteSource) Walk(_ context.Context, name string, from uint64, back bool, fn func(*cassette.Interaction) (bool, error)) error {
	if err := s.check(name); err != nil {
		return err
	}
	return s.C.Walk(from, back, fn)
}

// Interaction implements Source.
func (s CassetteSource) Interaction(_ context.Context, name string, id uint64) (*cassette.Interaction, error) {
	if err := s.check(name); err != nil {
		return nil, err
	}
	i, err := s.C.Get(id)
	return i, notFound(err)
}

// Fixture implements Source.
func (s CassetteSource) Fixture(_ context.Context, name, callID string) (json.RawMessage, error) {
	if err := s.check(name); err != nil {
		return nil, err
	}
	f, err := s.C.Fixture(callID)
	return f, notFound(err)
}

// Served implements Source: nothing is served.
func (s CassetteSource) Served(string, uint64) bool { return false }

// Log implements Source: nothing is served.
func (s CassetteSource) Log(context.Context, uint64, int) ([]LogEntry, error) { return nil, nil }

// LogChanged implements Source: the log never changes.
func (s CassetteSource) LogChanged() <-chan struct{} { return nil }

// Scenarios implements Source: there is none.
func (s CassetteSource) Scenarios(context.Context) ([]Graph, error) { return nil, nil }
