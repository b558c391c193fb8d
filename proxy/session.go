package proxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/refresh"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/store"
)

// Sessions (PUT /_llmproxy/session) let a test runner switch what a
// running proxy serves, per test: every proxied request that names no
// cassette (no X-Llmproxy-Cassette header) or, in mock, no scenario goes to
// the session open when it arrived, and keeps that session's tape until it
// ends, whatever switches meanwhile. A session ends at the next PUT or a
// DELETE, once its requests in flight ended: what it recorded is written
// and its cassette closed before its summary is answered.

var (
	// errNoSession means a request named no cassette and no session was
	// open to serve it, or the session's cassette does not exist.
	errNoSession = errors.New("no session")
	// errSessionPath means a session's path leaves its root directory.
	errSessionPath = errors.New("bad session path")
)

// maxSessionMisses bounds the misses a session's summary lists; the count
// of the others is kept.
const maxSessionMisses = 1000

// sessions holds the open session.
type sessions struct {
	// control serializes the routes that change what is served (session
	// and scenario switches), so that each sees the state the last left.
	control sync.Mutex

	mu   sync.RWMutex // guards cur; held for writing only to swap it
	cur  *session
	next int // the number of the last session opened
}

// acquire returns the open session, held until its release, or nil.
func (ss *sessions) acquire() *session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	if ss.cur != nil {
		ss.cur.inflight.Add(1)
	}
	return ss.cur
}

// swap makes next the open session and returns the one it replaces.
func (ss *sessions) swap(next *session) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	old := ss.cur
	ss.cur = next
	return old
}

// current is the open session, not held.
func (ss *sessions) current() *session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.cur
}

// session is one opened by PUT /_llmproxy/session: a cassette's tape (nil
// when replay found no such file: every request is then a miss saying so)
// or a scenario's engine.
type session struct {
	info     SessionInfo
	tape     *tape
	missing  string // the cassette path of a replay session whose file does not exist
	engine   atomic.Pointer[scenario.Engine]
	stats    *sessionStats
	firstSeq uint64 // the journal's last seq when the session opened
	inflight sync.WaitGroup
	// refresh is the refresh under way on the session's cassette (its tape
	// serves the scratch copy), applied at the end with indexer; prune
	// drops what no request used.
	refresh *refresh.Run
	indexer *cassette.Indexer
	prune   bool
	// faults are the session's own (its body's "faults"), numbered by
	// faultCount from the session's start; nil: Config.Faults.
	faults     *faults.Plan
	faultCount faults.Counter
}

// setEngine makes a scenario session serve e (its conversations reset).
func (se *session) setEngine(e *scenario.Engine) { se.engine.Store(e) }

// release ends a request's hold on the session.
func (se *session) release() { se.inflight.Done() }

// SessionInfo describes a session, as the API answers it.
type SessionInfo struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Cassette is the absolute path of a cassette session's file;
	// Scenario the file (or "inline") of a scenario session.
	Cassette     string    `json:"cassette,omitempty"`
	Scenario     string    `json:"scenario,omitempty"`
	Mode         string    `json:"mode"`
	Exists       bool      `json:"exists"`
	Interactions int       `json:"interactions"`
	Started      time.Time `json:"started"`
}

// SessionSummary is what a session met, answered when it ends.
type SessionSummary struct {
	SessionInfo
	Served   int `json:"served"`
	Recorded int `json:"recorded"`
	// Missed lists the first maxSessionMisses misses; MissedTotal counts
	// them all.
	Missed      []SessionMiss   `json:"missed"`
	MissedTotal int             `json:"missed_total"`
	Unused      []SessionUnused `json:"unused"`
	UnusedTotal int             `json:"unused_total"`
	Ended       time.Time       `json:"ended"`
	// Refresh says what a refresh session changed in its cassette (as
	// auto --refresh's summary does), once it was written.
	Refresh *SessionRefresh `json:"refresh,omitempty"`
}

// SessionRefresh is what a refresh session's end wrote.
type SessionRefresh struct {
	Recorded     int `json:"recorded"`
	Dropped      int `json:"dropped"`
	Pruned       int `json:"pruned"`
	Unchanged    int `json:"unchanged_conversations"`
	Interactions int `json:"interactions"`
	Before       int `json:"interactions_before"`
	// Conversations has a line per conversation the session changed:
	// "conversation N (…): kept N turns, re-recorded from turn K (…), dropped M".
	Conversations []string `json:"conversations"`
}

// SessionMiss is a request of a session no recording or step answered.
type SessionMiss struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// SessionUnused is an interaction of a cassette session not served, or a
// step of a scenario session never reached (ID 0, Step set). A summary
// lists the first maxSessionUnused; UnusedTotal counts them all.
type SessionUnused struct {
	ID      uint64 `json:"id,omitempty"`
	Step    string `json:"step,omitempty"`
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
	Summary string `json:"summary"`
}

// sessionStats counts what a session's requests met; its methods do
// nothing on a nil receiver (a tape of no session).
type sessionStats struct {
	mu               sync.Mutex
	served, recorded int
	missed           []SessionMiss
	missedTotal      int
}

func (st *sessionStats) serve() {
	if st != nil {
		st.mu.Lock()
		st.served++
		st.mu.Unlock()
	}
}

func (st *sessionStats) record() {
	if st != nil {
		st.mu.Lock()
		st.recorded++
		st.mu.Unlock()
	}
}

func (st *sessionStats) miss(method, path, msg string) {
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.missedTotal++
	if len(st.missed) < maxSessionMisses {
		st.missed = append(st.missed, SessionMiss{Method: method, Path: path, Message: msg})
	}
}

// fill copies the counts into a summary.
func (st *sessionStats) fill(sum *SessionSummary) {
	st.mu.Lock()
	defer st.mu.Unlock()
	sum.Served, sum.Recorded, sum.MissedTotal = st.served, st.recorded, st.missedTotal
	sum.Missed = append([]SessionMiss{}, st.missed...)
}

// sessionRoot is the directory session paths are relative to and must
// stay in: Config.CassetteDir, else the working directory.
func sessionRoot(cfg Config) (string, error) {
	if cfg.CassetteDir != "" {
		return filepath.Abs(cfg.CassetteDir)
	}
	return os.Getwd()
}

// sessionPath resolves a path a session names under root: relative, inside
// root once cleaned, and with no symlink at or above it below root (which
// could lead outside). The error wraps errSessionPath.
func sessionPath(root, p, what string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("llmproxy: %s %q %s; give a path relative to %s that stays inside it: %w", what, p, why, root, errSessionPath)
	}
	switch {
	case root == "":
		return "", bad("cannot be resolved: the proxy has no directory for sessions")
	case p == "":
		return "", bad("is empty")
	case strings.ContainsRune(p, 0):
		return "", bad("contains a NUL byte")
	case filepath.IsAbs(p), strings.HasPrefix(p, "/"), strings.HasPrefix(p, `\`):
		return "", bad("is absolute")
	}
	clean := filepath.Clean(p)
	if !filepath.IsLocal(clean) {
		return "", bad("leaves the directory")
	}
	cur := root
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("llmproxy: %s %s: %w", what, cur, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", bad("goes through the symlink " + cur)
		}
	}
	return filepath.Join(root, clean), nil
}

// openCassetteSession opens the cassette a session names, as --cassette
// would open it in the session's mode: read-only in replay, created (with
// its parent directories) in record and auto. In replay a cassette that
// does not exist opens a session whose every request is a miss saying so.
func (s *Server) openCassetteSession(spec *sessionSpec, rules *tapeRules, indexer *cassette.Indexer) (*session, error) {
	path, err := sessionPath(s.root, spec.Cassette, "cassette")
	if err != nil {
		return nil, err
	}
	se := &session{stats: &sessionStats{}, info: SessionInfo{Name: spec.Name, Cassette: path, Mode: rules.mode.String()}}
	if rules.mode == ModeReplay {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			se.missing = path
			return se, nil
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("llmproxy: cassette %s: %w", path, err)
	}
	c, err := s.openSessionCassette(se, spec, path, rules)
	if err != nil {
		return nil, fmt.Errorf("llmproxy: cassette %s: %w", path, err)
	}
	se.indexer, se.prune = indexer, spec.Prune
	t := newTape(path)
	if err := t.attach(c, indexer, &s.cached); err != nil {
		se.closeCassette(c)
		return nil, err
	}
	close(t.opened)
	t.rules, t.stats = rules, se.stats
	if se.info.Interactions, err = c.Len(); err != nil {
		t.stop()
		se.closeCassette(c)
		return nil, fmt.Errorf("llmproxy: cassette %s: %w", path, err)
	}
	se.tape, se.info.Exists = t, true
	return se, nil
}

// endSession waits for the requests the session is serving, writes what it
// recorded, closes its cassette and returns its summary.
func (s *Server) endSession(ctx context.Context, se *session) (*SessionSummary, error) {
	se.inflight.Wait()
	sum := &SessionSummary{SessionInfo: se.info, Unused: []SessionUnused{}}
	var errs []error
	if t := se.tape; t != nil {
		t.stop() // every recording written
		s.keepToolCalls(ctx, t)
		if t.rules.mode != ModeRecord { // record serves nothing, so leaves nothing unused
			errs = append(errs, s.listUnused(t, se.info.Interactions, sum))
		}
		if se.refresh != nil {
			var err error
			sum.Refresh, err = s.applyRefresh(se, t)
			errs = append(errs, err)
		}
		t.cache.drop()
		errs = append(errs, se.closeCassette(t.c))
	}
	if e := se.engine.Load(); e != nil {
		for _, step := range e.Unused() {
			sum.Unused = append(sum.Unused, SessionUnused{Step: step, Summary: "step " + step + " never reached"})
		}
		sum.UnusedTotal = len(sum.Unused)
	}
	se.stats.fill(sum)
	sum.Ended = time.Now().UTC()
	return sum, errors.Join(errs...)
}

// maxSessionUnused bounds the unused interactions a summary lists; the
// count of them all is kept.
const maxSessionUnused = 100

// listUnused lists in sum the first maxSessionUnused interactions of t not
// consumed, and counts them all: those it held at open (had) and those
// recorded since, less those consumed. Each is listed from its route and
// status alone (cassette.WalkBrief), consumed ones are not read, and the
// walk stops at the bound: reading every response's tool calls made ending
// a session of 1 000 unused interactions cost 12 ms, decoding each listed
// one whole 1 ms (BenchmarkSessionSwitch).
func (s *Server) listUnused(t *tape, had int, sum *SessionSummary) error {
	t.stats.mu.Lock()
	recorded := t.stats.recorded
	t.stats.mu.Unlock()
	sum.UnusedTotal = max(had+recorded-t.plays.consumedCount(), 0)
	if sum.UnusedTotal == 0 {
		return nil
	}
	unused := func(id uint64) bool { return !t.plays.isConsumed(id) }
	return t.c.WalkBrief(1, unused, func(i *cassette.Summary) (bool, error) {
		sum.Unused = append(sum.Unused, unusedOf(i))
		return len(sum.Unused) < maxSessionUnused, nil
	})
}

// unusedOf is an unused interaction as a summary lists it.
func unusedOf(i *cassette.Summary) SessionUnused {
	path := cassette.ProxyPath(i.Upstream, i.Path)
	line := "interaction " + strconv.FormatUint(i.ID, 10) + " " + i.Method + " " + path + " → " + strconv.Itoa(i.Status)
	if i.Stream {
		line += " (stream)"
	}
	return SessionUnused{ID: i.ID, Method: i.Method, Path: path, Summary: line}
}

// keepToolCalls fills in, and keeps, the tool calls of the journal's
// entries of t before its cassette closes, so that verify still finds
// them afterwards.
func (s *Server) keepToolCalls(ctx context.Context, t *tape) {
	only := func(o *tape) bool { return o == t }
	_, _, _, _ = s.entriesWhere(ctx, only, func(e *logged) bool { return e.tape == t }, logPage{})
}

// sessionTape is the tape of a proxied request that names no cassette: the
// open session's, held until release, or Config.Cassette's when no session
// is open. se is the session, if any, also when its cassette is missing.
func (s *Server) sessionTape(r *http.Request) (t *tape, se *session, release func(), err error) {
	if se = s.sessions.acquire(); se != nil {
		if se.tape == nil {
			se.release()
			return nil, se, nil, fmt.Errorf("llmproxy: session %s: cassette %s does not exist (replay): record it first, or open the session in record or auto mode: %w",
				se.info.ID, se.missing, errNoSession)
		}
		return se.tape, se, se.release, nil
	}
	if s.cfg.Cassette != nil {
		t, release, err := s.tapes.forRequest(r)
		return t, nil, release, err
	}
	return nil, nil, nil, fmt.Errorf("llmproxy: no session: PUT /_llmproxy/session {\"cassette\": \"PATH\"} to open one, or send %s: NAME to pick DIR/NAME.cassette: %w",
		CassetteHeader, errNoSession)
}

// closeSession ends the open session, if any, at Server.Close.
func (s *Server) closeSession() error {
	se := s.sessions.swap(nil)
	if se == nil {
		return nil
	}
	_, err := s.endSession(context.Background(), se)
	return err
}

// isLocked reports whether err is a cassette held by another writer.
func isLocked(err error) bool { return errors.Is(err, store.ErrLocked) }

// openSessionCassette opens a session's cassette as its mode says; a
// refresh session serves a scratch copy of it (see refresh.Start).
func (s *Server) openSessionCassette(se *session, spec *sessionSpec, path string, rules *tapeRules) (*cassette.Cassette, error) {
	opts := cassette.Options{ReadOnly: rules.mode == ModeReplay, LockTimeout: s.cfg.LockTimeout,
		Version: s.cfg.Version, Overwrite: s.cfg.Overwrite && rules.mode == ModeRecord}
	if !spec.Refresh {
		return cassette.Open(path, opts)
	}
	opts.Overwrite = false
	run, err := refresh.Start(path, opts)
	if err != nil {
		return nil, err
	}
	se.refresh = run
	return run.Scratch, nil
}

// closeCassette closes a session's cassette, and the old file of a refresh.
func (se *session) closeCassette(c *cassette.Cassette) error {
	if se.refresh != nil {
		return se.refresh.Close()
	}
	return c.Close()
}

// applyRefresh writes a refresh session's outcome over its cassette once
// every recording of it is in the scratch copy (t stopped).
func (s *Server) applyRefresh(se *session, t *tape) (*SessionRefresh, error) {
	plan, err := se.refresh.Finish(t.plays.isConsumed, se.prune, se.indexer,
		cassette.Options{LockTimeout: s.cfg.LockTimeout, Version: s.cfg.Version})
	if err != nil {
		return nil, err
	}
	out := &SessionRefresh{Recorded: plan.Recorded, Dropped: plan.Dropped, Pruned: plan.Pruned, Unchanged: plan.Unchanged,
		Interactions: len(plan.Interactions), Before: plan.Before, Conversations: []string{}}
	for _, c := range plan.Conversations {
		out.Conversations = append(out.Conversations, c.String())
	}
	s.log.Info("session refreshed its cassette", "session", se.info.ID, "cassette", se.info.Cassette,
		"recorded", plan.Recorded, "dropped", plan.Dropped, "pruned", plan.Pruned)
	return out, nil
}
