package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/view"
	"github.com/llmproxy/llmproxy/wire"
)

// maxListed bounds the cassettes of a CassetteDir the view lists.
const maxListed = 1000

// newUI builds the web view over the server's cassettes and journal.
func (s *Server) newUI() (*view.Handler, error) {
	return view.New(view.Options{Source: uiSource{s}, AdminToken: s.cfg.AdminToken, Mode: s.cfg.Mode.String(), Logger: s.log})
}

// EndLiveViews ends the web view's live log streams, so that a graceful
// shutdown need not wait for browser tabs: register it with
// http.Server.RegisterOnShutdown.
func (s *Server) EndLiveViews() { s.ui.Close() }

// pageOf ends a miss message with the address of the closest interaction's
// page in the web view, as the client reached this server; "" when there is
// no closest interaction or the address is unknown.
func (s *Server) pageOf(x *exchange) string {
	addr, ok := x.req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || x.closest == 0 {
		return ""
	}
	scheme := "http"
	if x.req.TLS != nil {
		scheme = "https"
	}
	name := ""
	if s.cfg.CassetteDir != "" {
		name = x.req.Header.Get(CassetteHeader)
	}
	return "; see " + view.InteractionURL(scheme+"://"+addr.String(), name, x.closest)
}

// complete fills in what an entry of a served or recorded interaction
// reads from it: the tool calls of its response and the request summary.
func (e *logged) complete() bool {
	if e.summarized || e.Interaction == 0 || e.tape == nil || !e.tape.ready() {
		return false
	}
	if i, err := e.tape.c.Get(e.Interaction); err == nil {
		e.keepToolCalls(cassette.Summarize(i).ToolCalls)
		e.summarize(wire.Kind(i.Kind), i.Request.Path, i.Request.Body)
		e.summarized = true
	}
	return e.summarized
}

// since returns the entries numbered after after, at most the newest limit,
// oldest first, with their numbers: entries are numbered from 1 in the
// order they were added.
func (j *journal) since(after uint64, limit int) ([]logged, []uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	oldest := uint64(j.dropped) + 1
	total := uint64(j.dropped + j.count)
	start := max(after+1, oldest)
	if limit > 0 && total >= uint64(limit) && start+uint64(limit) <= total {
		start = total - uint64(limit) + 1
	}
	var out []logged
	var seqs []uint64
	for seq := start; seq <= total; seq++ {
		out, seqs = append(out, j.entryOf(j.at(int(seq-oldest)))), append(seqs, seq)
	}
	return out, seqs
}

// changes returns a channel closed by the next add.
func (j *journal) changes() <-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.changed == nil {
		j.changed = make(chan struct{})
	}
	return j.changed
}

// uiSource is the web view's Source: the server's cassettes (Config.Cassette
// as "", or those of CassetteDir by name, or none in ModeMock) and its
// journal. It never creates a cassette.
type uiSource struct{ s *Server }

// tape returns the cassette the view reads and the function to call once
// the read is done. A cassette no request opened is opened read-only for the
// read (no reindex on disk, no writer lock), and an open one is held so the
// set does not close it under the read.
func (u uiSource) tape(ctx context.Context, name string) (*tape, func(), error) {
	if u.s.mock != nil {
		return nil, nil, view.ErrNoCassette
	}
	if u.s.cfg.Cassette != nil {
		if name != "" {
			return nil, nil, fmt.Errorf("llmproxy: this proxy serves one cassette, %s; there is no cassette %q: %w",
				u.s.cfg.Cassette.Path(), name, view.ErrNotFound)
		}
		t, err := u.s.tapes.mainTape()
		return t, func() {}, err
	}
	t, done, err := u.s.tapes.peek(ctx, name)
	switch {
	case errors.Is(err, errNoCassette):
		return nil, nil, fmt.Errorf("%w: %w", view.ErrNotFound, err)
	case errors.Is(err, ErrBadCassetteName):
		return nil, nil, fmt.Errorf("%w: %w", view.ErrBadName, err)
	case err != nil:
		return nil, nil, err
	}
	return t, done, nil
}

// Cassettes lists the cassettes of CassetteDir (at most maxListed, in name
// order; symbolic links are left out), or nil with one Config.Cassette, or
// view.ErrNoCassette in ModeMock.
func (u uiSource) Cassettes(context.Context) ([]string, error) {
	if u.s.mock != nil {
		return nil, view.ErrNoCassette
	}
	if u.s.cfg.Cassette != nil {
		return nil, nil
	}
	entries, err := os.ReadDir(u.s.cfg.CassetteDir)
	if err != nil {
		return nil, fmt.Errorf("llmproxy: --cassette-dir %s: %w", u.s.cfg.CassetteDir, err)
	}
	names := []string{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".cassette")
		if ok && e.Type().IsRegular() && CheckCassetteName(name) == nil && len(names) < maxListed {
			names = append(names, name)
		}
	}
	return names, nil
}

func (u uiSource) Last(ctx context.Context, name string) (uint64, error) {
	t, done, err := u.tape(ctx, name)
	if err != nil {
		return 0, err
	}
	defer done()
	return t.c.Last()
}

func (u uiSource) Walk(ctx context.Context, name string, from uint64, back bool, fn func(*cassette.Interaction) (bool, error)) error {
	t, done, err := u.tape(ctx, name)
	if err != nil {
		return err
	}
	defer done()
	return t.c.Walk(from, back, fn)
}

func (u uiSource) Interaction(ctx context.Context, name string, id uint64) (*cassette.Interaction, error) {
	t, done, err := u.tape(ctx, name)
	if err != nil {
		return nil, err
	}
	defer done()
	i, err := t.c.Get(id)
	if cassette.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %w", view.ErrNotFound, err)
	}
	return i, err
}

// Interaction reads an interaction of a cassette this server serves: of
// Config.Cassette when name is "", else of the cassette name under
// CassetteDir (a log entry's Name), as the view reads it.
func (s *Server) Interaction(ctx context.Context, name string, id uint64) (*cassette.Interaction, error) {
	return uiSource{s}.Interaction(ctx, name, id)
}

func (u uiSource) Fixture(ctx context.Context, name, callID string) (json.RawMessage, error) {
	t, done, err := u.tape(ctx, name)
	if err != nil {
		return nil, err
	}
	defer done()
	f, err := t.c.Fixture(callID)
	if cassette.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %w", view.ErrNotFound, err)
	}
	return f, err
}

// Served reports whether an interaction of a cassette this process opened
// was served whole.
func (u uiSource) Served(name string, id uint64) bool {
	ts := u.s.tapes
	ts.mu.Lock()
	t := ts.tapes[name]
	ts.mu.Unlock()
	return t != nil && t.ready() && t.plays.isConsumed(id)
}

func (u uiSource) Log(ctx context.Context, after uint64, limit int) ([]view.LogEntry, error) {
	if err := u.s.journal.settle(ctx, nil); err != nil {
		return nil, err
	}
	entries, seqs := u.s.journal.since(after, limit)
	out := make([]view.LogEntry, len(entries))
	for k, e := range entries {
		if !e.summarized && e.complete() {
			u.s.journal.keep(e) // built once, for every live stream and /log
		}
		out[k] = e.LogEntry
		out[k].Seq = seqs[k]
		if u.s.cfg.CassetteDir == "" {
			out[k].Name = ""
		}
	}
	return out, nil
}

func (u uiSource) LogChanged() <-chan struct{} { return u.s.journal.changes() }

// Scenarios describes the scenarios mock mode serves; a cassette server
// serves none.
func (u uiSource) Scenarios(context.Context) ([]view.Graph, error) { return u.s.mock.graphs(), nil }
