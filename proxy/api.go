package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/view"
)

// apiEndpoints are listed in the answer to an unknown /_llmproxy/ path.
var apiEndpoints = []string{
	"GET /_llmproxy/health", "GET /_llmproxy/interactions", "GET /_llmproxy/log",
	"GET /_llmproxy/unused", "GET /_llmproxy/fixtures/{call_id}",
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"llmproxy: encoding the answer failed","type":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"type": typ, "message": msg}})
}

func (s *Server) adminAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch access, wait := s.ui.Access(r); access {
		case view.Granted:
			next.ServeHTTP(w, r)
		case view.Throttled:
			w.Header().Set("Retry-After", view.RetryAfter(wait))
			apiError(w, http.StatusTooManyRequests, "too_many_attempts", "llmproxy: too many wrong admin tokens from this address; retry after "+view.RetryAfter(wait)+" s")
		default:
			apiError(w, http.StatusUnauthorized, "unauthorized", "llmproxy: /_llmproxy/ needs Authorization: Bearer <admin token> (--admin-token)")
		}
	})
}

func (s *Server) handleAPINotFound(w http.ResponseWriter, r *http.Request) {
	apiError(w, http.StatusNotFound, "not_found", "llmproxy: no API endpoint "+r.Method+" "+r.URL.Path+"; the API is: "+strings.Join(apiEndpoints, ", "))
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "mode": s.cfg.Mode.String()})
}

// apiTape is the cassette an API request is about: the server's, or, with
// a CassetteDir, the one named by the X-Llmproxy-Cassette header or the
// "cassette" query parameter. The API never creates a cassette: one that
// does not exist is a 404. Reads never write: a cassette no proxied request
// opened is opened read-only for the request and closed by done (see
// tapeSet.peek).
func (s *Server) apiTape(w http.ResponseWriter, r *http.Request) (t *tape, done func(), ok bool) {
	if s.cfg.Cassette != nil {
		t, err := s.tapes.mainTape()
		if err != nil {
			apiError(w, http.StatusServiceUnavailable, "cassette_error", err.Error())
			return nil, nil, false
		}
		return t, func() {}, true
	}
	name := r.Header.Get(CassetteHeader)
	if name == "" {
		name = r.URL.Query().Get("cassette")
	}
	t, done, err := s.tapes.peek(r.Context(), name)
	switch {
	case errors.Is(err, errNoCassette):
		apiError(w, http.StatusNotFound, "not_found", err.Error())
		return nil, nil, false
	case errors.Is(err, ErrBadCassetteName):
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error()+" (or the query parameter cassette)")
		return nil, nil, false
	case err != nil:
		apiError(w, http.StatusInternalServerError, "cassette_error", err.Error())
		return nil, nil, false
	}
	return t, done, true
}

func (s *Server) handleInteractions(w http.ResponseWriter, r *http.Request) {
	t, done, ok := s.apiTape(w, r)
	if !ok {
		return
	}
	defer done()
	if s.journal.settle(r.Context(), func(o *tape) bool { return o == t }) != nil {
		return
	}
	out := []cassette.Summary{}
	err := t.c.ForEach(func(i *cassette.Interaction) error {
		sum := cassette.Summarize(i)
		c := t.plays.isConsumed(i.ID)
		sum.Consumed = &c
		out = append(out, sum)
		return nil
	})
	if err != nil {
		apiError(w, http.StatusInternalServerError, "cassette_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cassette": t.name, "interactions": out})
}

func (s *Server) handleUnused(w http.ResponseWriter, r *http.Request) {
	t, done, ok := s.apiTape(w, r)
	if !ok {
		return
	}
	defer done()
	if s.journal.settle(r.Context(), func(o *tape) bool { return o == t }) != nil {
		return
	}
	out, err := s.unused(t)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "cassette_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cassette": t.name, "unused": out})
}

// unused lists the interactions of a tape not consumed in this process.
func (s *Server) unused(t *tape) ([]cassette.Summary, error) {
	out := []cassette.Summary{}
	err := t.c.ForEach(func(i *cassette.Interaction) error {
		if !t.plays.isConsumed(i.ID) {
			out = append(out, cassette.Summarize(i))
		}
		return nil
	})
	return out, err
}

// AllUnused lists, per cassette file, the interactions not consumed in this
// process: those of Config.Cassette, or those of every cassette of
// CassetteDir that a request opened.
func (s *Server) AllUnused() (map[string][]cassette.Summary, error) {
	out := map[string][]cassette.Summary{}
	for _, t := range s.tapes.open() {
		u, err := s.unused(t)
		if err != nil {
			return nil, err
		}
		if len(u) > 0 {
			out[t.name] = u
		}
	}
	return out, nil
}

func (s *Server) handleLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	want := q.Get("cassette")
	if want == "" {
		want = r.Header.Get(CassetteHeader)
	}
	if want != "" && s.cfg.CassetteDir != "" && CheckCassetteName(want) == nil {
		// A name under CassetteDir that names no cassette is a 404, as for
		// the other readers; a path is a filter on the entries.
		if err := s.tapes.exists(want); errors.Is(err, ErrBadCassetteName) {
			apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		} else if err != nil {
			apiError(w, http.StatusNotFound, "not_found", err.Error())
			return
		}
	}
	var pg logPage
	var err error
	if v := q.Get("after"); v != "" {
		if pg.after, err = strconv.ParseUint(v, 10, 64); err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: query parameter after="+v+" is not an entry's seq")
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if pg.limit, err = strconv.Atoi(v); err != nil || pg.limit < 1 {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: query parameter limit="+v+" is not a positive number")
			return
		}
	}
	out, dropped, err := s.logEntries(r.Context(), want, pg)
	if err != nil {
		return
	}
	next := pg.after
	for _, e := range out {
		next = max(next, e.Seq)
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out, "dropped": dropped, "next": next})
}

// logPage selects entries by Seq: those after after, at most limit (0 for
// no limit) of them.
type logPage struct {
	after uint64
	limit int
}

// Log returns what this process served, oldest first (at most
// Config.LogLimit entries), as GET /_llmproxy/log shows it. A request whose
// client already holds its whole answer is in it.
func (s *Server) Log(ctx context.Context) ([]LogEntry, error) {
	out, _, err := s.logEntries(ctx, "", logPage{})
	return out, err
}

// logEntries lists a page of the journal, only the entries of cassette want
// if it is not empty (a file path, or a name under CassetteDir), with the
// tool calls of each served interaction, summarised once and kept.
func (s *Server) logEntries(ctx context.Context, want string, pg logPage) ([]LogEntry, int, error) {
	var only func(*tape) bool
	if want != "" {
		only = func(t *tape) bool {
			return t.name == want || t.name == filepath.Join(s.cfg.CassetteDir, want+".cassette")
		}
	}
	if err := s.journal.settle(ctx, only); err != nil {
		return nil, 0, err
	}
	entries, dropped := s.journal.snapshot()
	out := []LogEntry{}
	for _, e := range entries {
		if e.Seq <= pg.after || (want != "" && e.Cassette != want && e.name != want) {
			continue
		}
		if pg.limit > 0 && len(out) == pg.limit {
			break
		}
		if !e.summarized && e.complete() {
			s.journal.keep(e) // built once, kept
		}
		out = append(out, e)
	}
	// Entries are added as requests end; the log is in the order they
	// arrived.
	slices.SortStableFunc(out, func(a, b LogEntry) int { return a.Time.Compare(b.Time) })
	return out, dropped, nil
}

func (s *Server) handleFixture(w http.ResponseWriter, r *http.Request) {
	t, done, ok := s.apiTape(w, r)
	if !ok {
		return
	}
	defer done()
	id := mux.Vars(r)["call_id"]
	fx, err := t.c.Fixture(id)
	if err != nil {
		if cassette.IsNotFound(err) {
			apiError(w, http.StatusNotFound, "not_found", "llmproxy: cassette "+t.name+" has no fixture for call id "+id)
			return
		}
		apiError(w, http.StatusInternalServerError, "cassette_error", err.Error())
		return
	}
	content, err := fixtureContent(id, fx)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "cassette_error", "llmproxy: cassette "+t.name+": "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(content)
}
