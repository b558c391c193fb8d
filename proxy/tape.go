package proxy

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

// CassetteHeader picks the cassette of a request when the server has a CassetteDir.
const CassetteHeader = "X-Llmproxy-Cassette"

// use is the replay state of one interaction in this process.
type use uint8

const (
	unused use = iota
	inflight
	consumed
)

// tape is an open cassette with this process's replay state.
type tape struct {
	c       *cassette.Cassette
	name    string
	matcher *match.Matcher
	// mem and memShape replace the on-disk index when it was built with
	// other matching rules and the cassette is read-only.
	mem, memShape map[string][]uint64

	mu    sync.Mutex
	state map[uint64]use
}

// requestOf is the match view of a recorded request.
func requestOf(i *cassette.Interaction) *match.Request {
	return &match.Request{
		Method: i.Request.Method, Upstream: i.Upstream, Path: i.Request.Path, Query: i.Request.Query,
		Header: i.Request.Headers, Body: i.Request.Body, Kind: i.Kind,
	}
}

// Keys returns the index keys of interactions under a matcher, for
// cassette.Replace.
func Keys(m *match.Matcher) cassette.Keys {
	return func(i *cassette.Interaction) (string, string, error) {
		req := requestOf(i)
		key, err := m.Key(req)
		if err != nil {
			return "", "", err
		}
		return key, m.Shape(req), nil
	}
}

func newTape(c *cassette.Cassette, name string, m *match.Matcher) (*tape, error) {
	t := &tape{c: c, name: name, matcher: m, state: map[uint64]use{}}
	meta, err := c.Meta()
	if err != nil {
		return nil, err
	}
	if meta.IndexRules == m.Fingerprint() {
		return t, nil
	}
	n, err := c.Len()
	if err != nil {
		return nil, err
	}
	switch {
	case c.ReadOnly():
		t.mem, t.memShape = map[string][]uint64{}, map[string][]uint64{}
		err = c.ForEach(func(i *cassette.Interaction) error {
			key, shape, err := Keys(m)(i)
			if err != nil {
				return fmt.Errorf("interaction %d: %w", i.ID, err)
			}
			t.mem[key] = append(t.mem[key], i.ID)
			t.memShape[shape] = append(t.memShape[shape], i.ID)
			return nil
		})
	case n == 0:
		err = c.SetIndexRules(m.Fingerprint())
	default:
		var ct *cassette.Contents
		if ct, err = c.Load(); err == nil {
			ct.Meta.IndexRules = m.Fingerprint()
			err = c.Replace(ct, Keys(m))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cassette %s: index: %w", name, err)
	}
	return t, nil
}

func (t *tape) lookup(key string) ([]uint64, error) {
	if t.mem != nil {
		return t.mem[key], nil
	}
	return t.c.Lookup(key)
}

func (t *tape) shape(shape string) ([]uint64, error) {
	if t.memShape != nil {
		return t.memShape[shape], nil
	}
	return t.c.Shape(shape)
}

// append stores a recorded interaction and indexes it.
func (t *tape) append(i *cassette.Interaction, key, shape string) (uint64, error) {
	id, err := t.c.Append(i, key, shape)
	if err != nil {
		return 0, err
	}
	if t.mem != nil {
		t.mu.Lock()
		t.mem[key] = append(t.mem[key], id)
		t.memShape[shape] = append(t.memShape[shape], id)
		t.mu.Unlock()
	}
	return id, nil
}

// acquire picks the interaction to serve for ids (the recordings of one
// match key) and marks it in flight. repeat is true when the pick is a
// repeat-last serve, which changes no state. exhausted is true when every
// recording was used and the policy rejects.
func (t *tape) acquire(ids []uint64, policy Exhausted) (id uint64, repeat, exhausted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pick := func() (uint64, bool) {
		for _, id := range ids {
			if t.state[id] == unused {
				t.state[id] = inflight
				return id, true
			}
		}
		return 0, false
	}
	if id, ok := pick(); ok {
		return id, false, false
	}
	switch policy {
	case ExhaustedRepeatLast:
		return ids[len(ids)-1], true, false
	case ExhaustedRestart:
		for _, id := range ids {
			if t.state[id] == consumed {
				t.state[id] = unused
			}
		}
		if id, ok := pick(); ok {
			return id, false, false
		}
	}
	return 0, false, true
}

// release ends a serve: delivered consumes the interaction, otherwise it is
// left for a retry.
func (t *tape) release(id uint64, delivered bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if delivered {
		t.state[id] = consumed
	} else if t.state[id] == inflight {
		t.state[id] = unused
	}
}

// markConsumed records that an interaction recorded in auto mode was served.
func (t *tape) markConsumed(id uint64) {
	t.mu.Lock()
	t.state[id] = consumed
	t.mu.Unlock()
}

func (t *tape) isConsumed(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state[id] == consumed
}

// tapeFor returns the tape of a request: Config.Cassette, or the cassette
// its X-Llmproxy-Cassette header names in CassetteDir.
func (s *Server) tapeFor(r *http.Request) (*tape, error) {
	if s.cfg.Cassette != nil {
		return s.tapes[""], nil
	}
	name := r.Header.Get(CassetteHeader)
	if err := CheckCassetteName(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tapes[name]; ok {
		return t, nil
	}
	path := filepath.Join(s.cfg.CassetteDir, name+".cassette")
	c, err := cassette.Open(path, cassette.Options{ReadOnly: s.cfg.Mode == ModeReplay, Version: s.cfg.Version})
	if err != nil {
		return nil, fmt.Errorf("llmproxy: cassette %q: %w", name, err)
	}
	t, err := newTape(c, path, s.matcher)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.tapes[name] = t
	return t, nil
}

// CheckCassetteName rejects a header-chosen cassette name that is empty,
// absolute, or holds "..", a path separator or a NUL byte.
func CheckCassetteName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("llmproxy: header %s is required with --cassette-dir: %w", CassetteHeader, ErrBadCassetteName)
	case filepath.IsAbs(name), strings.HasPrefix(name, "/"), strings.HasPrefix(name, `\`):
		return fmt.Errorf("llmproxy: cassette name %q is absolute: %w", name, ErrBadCassetteName)
	case strings.Contains(name, ".."):
		return fmt.Errorf("llmproxy: cassette name %q contains \"..\": %w", name, ErrBadCassetteName)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("llmproxy: cassette name %q contains a path separator: %w", name, ErrBadCassetteName)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("llmproxy: cassette name %q contains a NUL byte: %w", name, ErrBadCassetteName)
	}
	return nil
}
