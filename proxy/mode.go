package proxy

import (
	"errors"
	"fmt"
)

// Mode is what the proxy does with a request.
type Mode int

const (
	// ModeReplay answers from the cassette and never contacts an upstream.
	ModeReplay Mode = iota
	// ModeRecord forwards every request and records every complete response.
	ModeRecord
	// ModeAuto replays what matches and records what does not.
	ModeAuto
	// ModeMock answers from scenarios (Config.Scenarios) and never contacts
	// an upstream or opens a cassette.
	ModeMock
)

// ErrInvalidMode is returned by ParseMode for an unknown name.
var ErrInvalidMode = errors.New("invalid mode")

func (m Mode) String() string {
	switch m {
	case ModeReplay:
		return "replay"
	case ModeRecord:
		return "record"
	case ModeAuto:
		return "auto"
	case ModeMock:
		return "mock"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "replay", "record" or "auto".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{ModeReplay, ModeRecord, ModeAuto} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("mode %q (want replay, record or auto): %w", s, ErrInvalidMode)
}

// Exhausted says what replay does when every recording of a request was
// already served.
type Exhausted int

const (
	// ExhaustedReject answers with a miss.
	ExhaustedReject Exhausted = iota
	// ExhaustedRepeatLast serves the last recording again.
	ExhaustedRepeatLast
	// ExhaustedRestart starts the request's recordings over from the first.
	ExhaustedRestart
)

func (e Exhausted) String() string {
	switch e {
	case ExhaustedReject:
		return "reject"
	case ExhaustedRepeatLast:
		return "repeat-last"
	case ExhaustedRestart:
		return "restart"
	}
	return fmt.Sprintf("Exhausted(%d)", int(e))
}

// ParseExhausted parses "reject", "repeat-last" or "restart".
func ParseExhausted(s string) (Exhausted, error) {
	for _, e := range []Exhausted{ExhaustedReject, ExhaustedRepeatLast, ExhaustedRestart} {
		if e.String() == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("on-exhausted %q (want reject, repeat-last or restart): %w", s, ErrInvalidMode)
}

// Pace is how fast replay sends a recorded stream.
type Pace int

const (
	// PaceInstant sends events back to back.
	PaceInstant Pace = iota
	// PaceRecorded reproduces the recorded time to first byte and the gaps
	// between events.
	PaceRecorded
	// PaceScripted, in mock mode, waits the delays and stream intervals the
	// scenario gives; PaceInstant ignores them.
	PaceScripted
)

func (p Pace) String() string {
	switch p {
	case PaceInstant:
		return "instant"
	case PaceRecorded:
		return "recorded"
	case PaceScripted:
		return "scripted"
	}
	return fmt.Sprintf("Pace(%d)", int(p))
}

// ParsePace parses "instant" or "recorded".
func ParsePace(s string) (Pace, error) {
	for _, p := range []Pace{PaceInstant, PaceRecorded} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("pace %q (want instant or recorded): %w", s, ErrInvalidMode)
}
