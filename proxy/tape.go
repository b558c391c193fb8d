package proxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
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

	// opened is closed once c is open or openErr is set (see
	// Server.openTape); the fields above are set before.
	opened  chan struct{}
	openErr error

	mu      sync.Mutex
	state   map[uint64]use
	changed chan struct{} // closed and replaced by every release

	// Requests being recorded, in arrival order (see arrive); the writer
	// goroutine, started by the first, is woken by wake and closes
	// writerDone when it ends, after closing is set.
	order      []*slot
	wake       chan struct{}
	writerDone chan struct{}
	closing    bool
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

// newTape makes the tape of an open cassette, reindexing it when its index
// was built with other matching rules.
func newTape(c *cassette.Cassette, name string, m *match.Matcher) (*tape, error) {
	t := &tape{name: name, opened: make(chan struct{})}
	if err := t.init(c, m); err != nil {
		return nil, err
	}
	close(t.opened)
	return t, nil
}

func (t *tape) init(c *cassette.Cassette, m *match.Matcher) error {
	t.c, t.matcher, t.state, t.changed = c, m, map[uint64]use{}, make(chan struct{})
	name := t.name
	meta, err := c.Meta()
	if err != nil {
		return err
	}
	if meta.IndexRules == m.Fingerprint() {
		return nil
	}
	n, err := c.Len()
	if err != nil {
		return err
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
		return fmt.Errorf("cassette %s: index: %w", name, err)
	}
	return nil
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

// A slot is one recording's place in its tape's arrival order.
type slot struct {
	t     *tape
	ready bool
	// What to write once every earlier slot is ready: i is nil when the
	// recording produced nothing (the upstream or the client failed).
	i          *cassette.Interaction
	key, shape string
	// written reports the outcome of the write, from the tape's writer;
	// settled is called after it, or at once for an empty slot.
	written func(id uint64, err error)
	settled func()
	// dropped marks a slot the closing tape will not write.
	dropped bool
}

// errTapeClosed is why an interaction whose response ended after the proxy
// closed its cassette was not written.
var errTapeClosed = errors.New("the proxy closed the cassette before the response ended")

// maxBatch bounds the interactions written in one transaction.
const maxBatch = 256

// arrive gives a request about to be recorded its place in the cassette.
// Interactions are written in the order their requests arrived, whatever
// order their responses complete in: an agent that reads a stream to its
// end and at once sends the next turn must find the first turn recorded
// first, and identical requests replay in the order they were sent. The
// caller must end the slot with commit; abandon (safe to defer) commits an
// empty slot if it was not. settled, if not nil, is called once the slot's
// interaction is written or the slot is passed empty.
func (t *tape) arrive(settled func()) *slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &slot{t: t, settled: settled}
	if t.closing {
		s.dropped = true
		return s
	}
	if t.wake == nil {
		t.wake, t.writerDone = make(chan struct{}, 1), make(chan struct{})
		go t.writer()
	}
	t.order = append(t.order, s)
	return s
}

// commit ends the slot with the interaction to write (nil for none) and
// returns at once: the tape's writer stores it after every interaction
// whose request arrived earlier, so a short response never waits on a long
// one, and a response reaches its client without waiting for the disk.
// written is called with the outcome of the write.
func (s *slot) commit(i *cassette.Interaction, key, shape string, written func(uint64, error)) {
	t := s.t
	t.mu.Lock()
	if s.ready {
		t.mu.Unlock()
		return
	}
	s.ready, s.i, s.key, s.shape, s.written = true, i, key, shape, written
	dropped := s.dropped
	t.mu.Unlock()
	switch {
	case dropped:
		if i != nil && written != nil {
			written(0, errTapeClosed)
		}
		if s.settled != nil {
			s.settled()
		}
	case i == nil:
		// Nothing to write: only the slots after it were waiting.
		if s.settled != nil {
			s.settled()
		}
		t.signal()
	default:
		t.signal()
	}
}

// abandon commits an empty slot unless it was committed.
func (s *slot) abandon() { s.commit(nil, "", "", nil) }

func (t *tape) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// writer stores ready slots in arrival order, as many per transaction as
// are ready, until the tape closes.
func (t *tape) writer() {
	defer close(t.writerDone)
	for {
		batch, stop := t.takeReady()
		if len(batch) > 0 {
			t.writeBatch(batch)
			continue
		}
		if stop {
			return
		}
		<-t.wake
	}
}

// takeReady removes the ready slots at the head of the order. Once the tape
// is closing it takes every ready slot, drops the rest (their handlers are
// still running past the shutdown), and reports stop when none is left.
func (t *tape) takeReady() (batch []*slot, stop bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		t.order = slices.DeleteFunc(t.order, func(s *slot) bool {
			s.dropped = !s.ready
			return s.dropped
		})
	}
	n := 0
	for n < len(t.order) && n < maxBatch && t.order[n].ready {
		n++
	}
	batch = slices.Clone(t.order[:n])
	t.order = slices.Delete(t.order, 0, n)
	return batch, t.closing && n == 0
}

// stopWriter makes the writer store every ready interaction and end, and
// waits for it. Interactions whose responses end later are not written.
func (t *tape) stopWriter() {
	t.mu.Lock()
	t.closing = true
	done := t.writerDone
	t.mu.Unlock()
	if done != nil {
		t.signal()
		<-done
	}
}

// writeBatch stores the interactions of ready slots in one transaction.
func (t *tape) writeBatch(batch []*slot) {
	items := make([]cassette.Keyed, 0, len(batch))
	owners := make([]*slot, 0, len(batch))
	for _, s := range batch {
		if s.i != nil {
			items = append(items, cassette.Keyed{Interaction: s.i, Key: s.key, Shape: s.shape})
			owners = append(owners, s)
		}
	}
	if len(items) > 0 {
		res, err := t.c.AppendAll(items)
		for k, s := range owners {
			id, werr := uint64(0), err
			if err == nil {
				id, werr = res[k].ID, res[k].Err
			}
			if werr == nil && t.mem != nil {
				t.mu.Lock()
				t.mem[s.key] = append(t.mem[s.key], id)
				t.memShape[s.shape] = append(t.memShape[s.shape], id)
				t.mu.Unlock()
			}
			if s.written != nil {
				s.written(id, werr)
			}
			if s.settled != nil {
				s.settled()
			}
		}
	}
}

// acquire picks the interaction to serve for ids (the recordings of one
// match key, in recorded order) and marks it in flight: the first recording
// not yet consumed. Recordings are served strictly in recorded order: when
// that first one is in flight for another request, acquire waits for that
// serve to end. So a client that retries a request it abandoned mid-stream
// gets the same interaction back, even when its retry arrives before the
// proxy noticed it had gone. Once every recording is consumed, policy
// decides: reject reports exhausted; repeat-last returns the last recording
// with repeat set (a repeat serve changes no state); restart makes the
// recordings unused again and picks the first. acquire returns ctx's error
// if ctx ends while it waits.
func (t *tape) acquire(ctx context.Context, ids []uint64, policy Exhausted) (id uint64, repeat, exhausted bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		first := slices.IndexFunc(ids, func(id uint64) bool { return t.state[id] != consumed })
		switch {
		case first >= 0 && t.state[ids[first]] == unused:
			t.state[ids[first]] = inflight
			return ids[first], false, false, nil
		case first >= 0: // in flight: wait for it to be released
			changed := t.changed
			t.mu.Unlock()
			select {
			case <-changed:
			case <-ctx.Done():
				t.mu.Lock()
				return 0, false, false, ctx.Err()
			}
			t.mu.Lock()
			continue
		}
		switch policy {
		case ExhaustedRepeatLast:
			return ids[len(ids)-1], true, false, nil
		case ExhaustedRestart:
			for _, id := range ids {
				t.state[id] = unused
			}
			t.state[ids[0]] = inflight
			return ids[0], false, false, nil
		}
		return 0, false, true, nil
	}
}

// release ends a serve: delivered consumes the interaction, otherwise it is
// left for a retry. Either way, requests waiting in acquire look again.
func (t *tape) release(id uint64, delivered bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if delivered {
		t.state[id] = consumed
	} else if t.state[id] == inflight {
		t.state[id] = unused
	}
	close(t.changed)
	t.changed = make(chan struct{})
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

// tapeFor returns the tape of a proxied request: Config.Cassette, or the
// cassette its X-Llmproxy-Cassette header names in CassetteDir, opened (and
// in record and auto mode created) on first use.
func (s *Server) tapeFor(r *http.Request) (*tape, error) {
	if s.cfg.Cassette != nil {
		return s.mainTape()
	}
	return s.openTape(r.Context(), r.Header.Get(CassetteHeader), true)
}

// mainTape is the tape of Config.Cassette, until Close.
func (s *Server) mainTape() (*tape, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tapes[""]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("llmproxy: cassette %s: the proxy is closed: %w", s.cfg.Cassette.Path(), ErrConfig)
}

// openTape returns the tape of a cassette in CassetteDir. Each cassette is
// opened once and shared by every request that names it; opening one does
// not hold up requests for the others. A failed open is not remembered, so
// a later request tries again. Without create, a cassette that does not
// exist is an error, in every mode.
func (s *Server) openTape(ctx context.Context, name string, create bool) (*tape, error) {
	if err := CheckCassetteName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(s.cfg.CassetteDir, name+".cassette")
	s.mu.Lock()
	t, ok := s.tapes[name]
	if !ok {
		if _, err := os.Stat(path); err != nil && (!create || s.cfg.Mode == ModeReplay) {
			s.mu.Unlock()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("llmproxy: cassette %s (%s: %s) does not exist: %w", path, CassetteHeader, name, errNoCassette)
			}
			return nil, fmt.Errorf("llmproxy: cassette %s: %w", path, err)
		}
		t = &tape{name: path, opened: make(chan struct{})}
		s.tapes[name] = t
		s.mu.Unlock()
		s.fillTape(name, t)
	} else {
		s.mu.Unlock()
	}
	select {
	case <-t.opened:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if t.openErr != nil {
		return nil, t.openErr
	}
	return t, nil
}

// fillTape opens the cassette of a tape just put in s.tapes. On failure, or
// when the server was closed meanwhile, the tape leaves s.tapes.
func (s *Server) fillTape(name string, t *tape) {
	c, err := cassette.Open(t.name, cassette.Options{ReadOnly: s.cfg.Mode == ModeReplay, Version: s.cfg.Version, Overwrite: s.cfg.Overwrite && s.cfg.Mode == ModeRecord})
	if err == nil {
		if err = t.init(c, s.matcher); err != nil {
			c.Close()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.tapes[name] != t {
		c.Close()
		err = fmt.Errorf("cassette %s: the proxy is closed: %w", t.name, ErrConfig)
	}
	if err != nil {
		t.c = nil
		t.openErr = fmt.Errorf("llmproxy: cassette %q: %w", name, err)
		if s.tapes[name] == t {
			delete(s.tapes, name)
		}
	}
	close(t.opened)
}

// close closes the tape's cassette once it is open; a tape still opening is
// closed by fillTape when it finds itself gone from s.tapes.
func (t *tape) close() error {
	select {
	case <-t.opened:
	default:
		return nil
	}
	t.stopWriter()
	if t.c == nil {
		return nil
	}
	return t.c.Close()
}

// ready reports whether the tape's cassette is open.
func (t *tape) ready() bool {
	select {
	case <-t.opened:
		return t.openErr == nil
	default:
		return false
	}
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

// errNoCassette means a cassette named by the X-Llmproxy-Cassette header
// does not exist where it must: in replay mode, or for the API.
var errNoCassette = errors.New("no such cassette")

// failTape answers a proxied request whose cassette could not be had: a
// bad name is a 400; a cassette that does not exist in replay is a miss,
// since the request certainly has no recording; anything else is a 500.
func (s *Server) failTape(w http.ResponseWriter, r *http.Request, kind wire.Kind, err error) {
	switch {
	case errors.Is(err, ErrBadCassetteName):
		s.fail(w, kind, http.StatusBadRequest, "invalid_request_error", err.Error())
	case errors.Is(err, errNoCassette):
		s.missed(err.Error())
		name := r.Header.Get(CassetteHeader)
		s.journal.add(logEntry{Time: time.Now().UTC(), Cassette: filepath.Join(s.cfg.CassetteDir, name+".cassette"),
			Method: r.Method, Path: s.redactor.Path(r.URL.EscapedPath()), Kind: string(kind), Miss: err.Error(), Status: http.StatusBadRequest, name: name})
		w.Header().Set(MissHeader, "1")
		s.fail(w, kind, http.StatusBadRequest, "cassette_miss", err.Error())
	default:
		s.fail(w, kind, http.StatusInternalServerError, "cassette_error", err.Error())
	}
}
