package proxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// CassetteHeader picks the cassette of a request when the server has a CassetteDir.
const CassetteHeader = "X-Llmproxy-Cassette"

// errNoCassette means a cassette named by the X-Llmproxy-Cassette header
// does not exist where it must: in replay mode, or for the API.
var errNoCassette = errors.New("no such cassette")

// tapeSet holds a server's tapes: the tape of Config.Cassette, or those of
// the cassettes of CassetteDir opened so far.
type tapeSet struct {
	main    *cassette.Cassette // Config.Cassette; nil with a CassetteDir
	dir     string
	opts    cassette.Options // how a cassette of dir is opened
	create  bool             // whether a missing cassette of dir may be created
	indexer *cassette.Indexer
	cached  *cacheBudget // what the tapes' reply caches may hold

	mu    sync.Mutex
	tapes map[string]*tape // by name under dir, or "" for main
	// At most max cassettes of dir stay open: past it, the least recently
	// used one that no request is using is closed (its writer lock
	// released), and reopened on demand; kept holds its replay state.
	max   int
	clock uint64
	kept  map[string]*plays
}

func newTapeSet(cfg Config, cached *cacheBudget) (*tapeSet, error) {
	ts := &tapeSet{
		main: cfg.Cassette, dir: cfg.CassetteDir, indexer: cfg.Indexer, cached: cached, tapes: map[string]*tape{},
		opts:   cassette.Options{ReadOnly: cfg.Mode == ModeReplay, LockTimeout: cfg.LockTimeout, Version: cfg.Version, Overwrite: cfg.Overwrite && cfg.Mode == ModeRecord},
		create: cfg.Mode != ModeReplay, max: cfg.MaxOpenCassettes, kept: map[string]*plays{},
	}
	if ts.max <= 0 {
		ts.max = DefaultMaxOpenCassettes
	}
	if cfg.Cassette != nil {
		t := newTape(cfg.Cassette.Path())
		if err := t.attach(cfg.Cassette, cfg.Indexer, cached); err != nil {
			return nil, err
		}
		close(t.opened)
		ts.tapes[""] = t
	}
	return ts, nil
}

// DefaultMaxOpenCassettes is how many cassettes of a CassetteDir stay open
// when Config.MaxOpenCassettes is zero.
const DefaultMaxOpenCassettes = 64

// forRequest returns the tape of a proxied request: Config.Cassette's, or
// that of the cassette its X-Llmproxy-Cassette header names in CassetteDir,
// opened (and in record and auto mode created) on first use. The request
// calls release once it is done with the tape.
func (ts *tapeSet) forRequest(r *http.Request) (t *tape, release func(), err error) {
	if ts.main != nil {
		t, err := ts.mainTape()
		return t, func() {}, err
	}
	return ts.get(r.Context(), r.Header.Get(CassetteHeader), true)
}

// mainTape is the tape of Config.Cassette, until close.
func (ts *tapeSet) mainTape() (*tape, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.tapes[""]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("llmproxy: cassette %s: the proxy is closed: %w", ts.main.Path(), ErrConfig)
}

// get returns the tape of a cassette in CassetteDir. Each cassette is
// opened once and shared by every request that names it; opening one does
// not hold up requests for the others. A failed open is not remembered, so
// a later request tries again. Without create, a cassette that does not
// exist is an error, in every mode. The tape stays open until release.
func (ts *tapeSet) get(ctx context.Context, name string, create bool) (_ *tape, release func(), _ error) {
	if err := CheckCassetteName(name); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(ts.dir, name+".cassette")
	ts.mu.Lock()
	t, ok := ts.tapes[name]
	if !ok {
		if err := notSymlink(path, name); err != nil {
			ts.mu.Unlock()
			return nil, nil, err
		}
		if _, err := os.Stat(path); err != nil && (!create || !ts.create) {
			ts.mu.Unlock()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("llmproxy: cassette %s (%s: %s) does not exist: %w", path, CassetteHeader, name, errNoCassette)
			}
			return nil, nil, fmt.Errorf("llmproxy: cassette %s: %w", path, err)
		}
		t = newTape(path)
		ts.tapes[name] = t
		ts.use(t)
		ts.mu.Unlock()
		ts.fill(name, t)
	} else {
		ts.use(t)
		ts.mu.Unlock()
	}
	release = func() { ts.release(t) }
	select {
	case <-t.opened:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if t.openErr != nil {
		release()
		return nil, nil, t.openErr
	}
	return t, release, nil
}

// use marks a tape in use by one more request, and most recently used.
// ts.mu is held.
func (ts *tapeSet) use(t *tape) {
	ts.clock++
	t.users, t.used = t.users+1, ts.clock
}

// release ends a request's use of a tape, then closes the least recently
// used tapes no request is using while more than max are open.
func (ts *tapeSet) release(t *tape) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.users--
	for len(ts.tapes) > ts.max {
		var lru *tape
		var name string
		for n, o := range ts.tapes {
			if n != "" && o.users == 0 && o.ready() && (lru == nil || o.used < lru.used) {
				lru, name = o, n
			}
		}
		if lru == nil {
			return
		}
		// Closed under the lock, so that a request reopening it finds the
		// file's lock released; no request is using it, so its writer
		// only stores what is ready.
		delete(ts.tapes, name)
		ts.kept[name] = lru.plays
		_ = lru.close()
	}
}

// peek returns the tape of a cassette in CassetteDir for a reader, without
// ever writing: the tape a proxied request opened, or else a tape of the
// cassette opened read-only (no index, no writer, nothing consumed), which
// done closes. The set keeps no tape for a reader, so a later proxied
// request opens the cassette as its mode says.
func (ts *tapeSet) peek(ctx context.Context, name string) (t *tape, done func(), err error) {
	if err := CheckCassetteName(name); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(ts.dir, name+".cassette")
	ts.mu.Lock()
	_, ok := ts.tapes[name]
	ts.mu.Unlock()
	if ok {
		if t, done, err = ts.get(ctx, name, false); err == nil {
			return t, done, nil
		}
		if ctx.Err() != nil {
			return nil, nil, err
		}
		// Its open failed: read the file as if no request had opened it.
	}
	if err := notSymlink(path, name); err != nil {
		return nil, nil, err
	}
	if _, err := os.Lstat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("llmproxy: cassette %s (%s: %s) does not exist: %w", path, CassetteHeader, name, errNoCassette)
		}
		return nil, nil, fmt.Errorf("llmproxy: cassette %s: %w", path, err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true, LockTimeout: ts.opts.LockTimeout})
	if err != nil {
		return nil, nil, fmt.Errorf("llmproxy: cassette %q: %w", name, err)
	}
	t = newTape(path)
	t.c, t.plays = c, newPlays()
	close(t.opened)
	return t, func() { c.Close() }, nil
}

// exists returns errNoCassette unless the cassette of a valid name is open
// or its file exists.
func (ts *tapeSet) exists(name string) error {
	ts.mu.Lock()
	_, ok := ts.tapes[name]
	ts.mu.Unlock()
	path := filepath.Join(ts.dir, name+".cassette")
	if err := notSymlink(path, name); err != nil {
		return err
	}
	if _, err := os.Lstat(path); !ok && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("llmproxy: cassette %s (%s: %s) does not exist: %w", path, CassetteHeader, name, errNoCassette)
	}
	return nil
}

// fill opens the cassette of a tape just put in the set. On failure, or
// when the set was closed meanwhile, the tape leaves the set.
func (ts *tapeSet) fill(name string, t *tape) {
	c, err := cassette.Open(t.name, ts.opts)
	if err == nil {
		if err = t.attach(c, ts.indexer, ts.cached); err != nil {
			c.Close()
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if p := ts.kept[name]; p != nil && err == nil {
		t.plays = p // what this process consumed before the tape was closed
		delete(ts.kept, name)
	}
	if err == nil && ts.tapes[name] != t {
		c.Close()
		err = fmt.Errorf("cassette %s: the proxy is closed: %w", t.name, ErrConfig)
	}
	if err != nil {
		t.c = nil
		t.openErr = fmt.Errorf("llmproxy: cassette %q: %w", name, err)
		if ts.tapes[name] == t {
			delete(ts.tapes, name)
		}
	}
	close(t.opened)
}

// open lists the tapes whose cassettes are open.
func (ts *tapeSet) open() []*tape {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]*tape, 0, len(ts.tapes))
	for _, t := range ts.tapes {
		if t.ready() {
			out = append(out, t)
		}
	}
	return out
}

// close writes every recorded interaction whose response has ended, then
// closes the cassettes the set opened from CassetteDir; Config.Cassette
// stays open. The set is empty afterwards.
func (ts *tapeSet) close() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var errs []error
	for name, t := range ts.tapes {
		if name != "" {
			errs = append(errs, t.close())
		} else {
			t.stop() // the caller closes Config.Cassette
		}
	}
	ts.tapes = map[string]*tape{}
	return errors.Join(errs...)
}

// notSymlink refuses a cassette of CassetteDir whose file is a symlink,
// dangling or not: a name must never lead to a file outside the directory,
// nor create one there.
func notSymlink(path, name string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("llmproxy: cassette %s (%s: %s) is a symlink; a cassette of --cassette-dir must be a regular file in it: %w",
			path, CassetteHeader, name, ErrBadCassetteName)
	}
	return nil
}

// MaxCassetteName bounds the bytes of a header-chosen cassette name: with
// ".cassette" and the temporary name a whole-file write takes beside it,
// the file name stays within the 255 bytes file systems allow.
const MaxCassetteName = 200

// CheckCassetteName rejects a header-chosen cassette name that is empty,
// longer than MaxCassetteName bytes, absolute, or holds "..", a path
// separator or a NUL byte.
func CheckCassetteName(name string) error {
	switch {
	case name == "":
		return &nameError{"llmproxy: this proxy serves --cassette-dir: send the header " + CassetteHeader + ": NAME to pick the cassette DIR/NAME.cassette"}
	case strings.HasSuffix(name, ".cassette"):
		return &nameError{fmt.Sprintf("llmproxy: cassette name %q ends in .cassette: give the name without it (%s: %s picks DIR/%s)",
			name, CassetteHeader, strings.TrimSuffix(name, ".cassette"), name)}
	case len(name) > MaxCassetteName:
		return fmt.Errorf("llmproxy: %s: a cassette name of %d bytes is longer than %d bytes (NAME.cassette must fit in a file name): %w",
			CassetteHeader, len(name), MaxCassetteName, ErrBadCassetteName)
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

// nameError is a refused cassette name whose message says the whole
// problem; errors.Is matches it to ErrBadCassetteName.
type nameError struct{ msg string }

func (e *nameError) Error() string        { return e.msg }
func (e *nameError) Is(target error) bool { return target == ErrBadCassetteName }

// failTape answers a proxied request whose cassette could not be had: a
// bad name is a 400; a cassette that does not exist in replay is a miss,
// since the request certainly has no recording; anything else is a 500.
func (s *Server) failTape(w http.ResponseWriter, r *http.Request, kind wire.Kind, rt route, se *session, err error) {
	switch {
	case errors.Is(err, errNoSession):
		s.missed(err.Error())
		path := cassette.ProxyPath(rt.name, s.redactor.Path(rt.path))
		if se != nil {
			se.stats.miss(r.Method, path, err.Error())
		}
		s.journal.add(logged{LogEntry: LogEntry{Time: time.Now().UTC(), Method: r.Method, Path: s.redactor.Path(r.URL.EscapedPath()),
			Kind: string(kind), Miss: err.Error(), Status: http.StatusBadRequest}})
		w.Header().Set(MissHeader, "1")
		failWith(w, kind, http.StatusBadRequest, "cassette_miss", err.Error())
	case errors.Is(err, ErrBadCassetteName):
		failWith(w, kind, http.StatusBadRequest, "invalid_request_error", err.Error())
	case errors.Is(err, errNoCassette):
		s.missed(err.Error())
		name := r.Header.Get(CassetteHeader)
		s.journal.add(logged{LogEntry: LogEntry{Time: time.Now().UTC(), Cassette: filepath.Join(s.cfg.CassetteDir, name+".cassette"),
			Method: r.Method, Path: s.redactor.Path(r.URL.EscapedPath()), Kind: string(kind), Miss: err.Error(), Status: http.StatusBadRequest, Name: name}})
		w.Header().Set(MissHeader, "1")
		failWith(w, kind, http.StatusBadRequest, "cassette_miss", err.Error())
	default:
		failWith(w, kind, http.StatusInternalServerError, "cassette_error", err.Error())
	}
}
