package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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
	"GET|PUT|DELETE /_llmproxy/session", "POST|DELETE /_llmproxy/scenarios", "GET /_llmproxy/verify",
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

const (
	// defaultPage is the number of items a list of the API answers when
	// the request gives no limit, and maxPage the most it answers.
	defaultPage = 100
	maxPage     = 1000
)

// pageParams reads a list's page from the query: after (an interaction id
// or a log entry's seq; 0 by default) and limit (defaultPage by default,
// at most maxPage).
func pageParams(w http.ResponseWriter, r *http.Request) (after uint64, limit int, ok bool) {
	q := r.URL.Query()
	limit = defaultPage
	var err error
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: query parameter after="+v+" is not a number")
			return 0, 0, false
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: query parameter limit="+v+" is not a positive number")
			return 0, 0, false
		}
	}
	return after, min(limit, maxPage), true
}

func (s *Server) handleInteractions(w http.ResponseWriter, r *http.Request) {
	s.listInteractions(w, r, "interactions", false)
}

func (s *Server) handleUnused(w http.ResponseWriter, r *http.Request) {
	s.listInteractions(w, r, "unused", true)
}

// listInteractions answers a page of a cassette's interactions in the
// summary form, those after the id after, at most limit of them; only the
// ones not consumed in this process when unused is set. The answer says
// how many there are in all (total) and the after of the next page (next:
// the last id listed), and is written as it is read.
func (s *Server) listInteractions(w http.ResponseWriter, r *http.Request, field string, unused bool) {
	t, done, ok := s.apiTape(w, r)
	if !ok {
		return
	}
	defer done()
	after, limit, ok := pageParams(w, r)
	if !ok {
		return
	}
	if s.journal.settle(r.Context(), func(o *tape) bool { return o == t }) != nil {
		return
	}
	total, err := t.c.Len()
	if err != nil {
		apiError(w, http.StatusInternalServerError, "cassette_error", err.Error())
		return
	}
	if unused {
		total -= t.plays.consumedCount()
	}
	list := beginList(w, field, field2{"cassette", t.name}, field2{"total", total})
	next := after
	err = t.c.Walk(after+1, false, func(i *cassette.Interaction) (bool, error) {
		c := t.plays.isConsumed(i.ID)
		if unused && c {
			return true, nil
		}
		if list.items == limit {
			return false, nil
		}
		next = i.ID
		sum := cassette.Summarize(i)
		if !unused {
			sum.Consumed = &c
		}
		return list.item(sum) == nil, nil
	})
	tail := []field2{{"next", next}}
	if err != nil {
		tail = append(tail, field2{"error", map[string]any{"type": "cassette_error", "message": err.Error()}})
	}
	list.end(tail...)
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
	after, limit, ok := pageParams(w, r)
	if !ok {
		return
	}
	out, total, dropped, err := s.logEntries(r.Context(), want, logPage{after: after, limit: limit})
	if err != nil {
		return
	}
	next := after
	for _, e := range out {
		next = max(next, e.Seq)
	}
	list := beginList(w, "entries", field2{"dropped", dropped}, field2{"total", total})
	for k := range out {
		if list.item(&out[k]) != nil {
			return
		}
	}
	list.end(field2{"next", next})
}

// logPage selects entries by Seq: those after after, at most limit (0 for
// no limit) of them.
type logPage struct {
	after uint64
	limit int
}

// Log returns what this process served, oldest first (at most
// Config.LogLimit entries, and Config.LogBytes of them), as GET
// /_llmproxy/log shows it. A request whose client already holds its whole
// answer is in it.
func (s *Server) Log(ctx context.Context) ([]LogEntry, error) {
	out, _, _, err := s.logEntries(ctx, "", logPage{})
	return out, err
}

// logEntries lists a page of the journal, only the entries of cassette want
// if it is not empty (a file path, or a name under CassetteDir), with the
// tool calls of each served interaction, summarised once and kept; and how
// many entries the journal holds for want (total) and has dropped.
func (s *Server) logEntries(ctx context.Context, want string, pg logPage) (out []LogEntry, total, dropped int, err error) {
	var only func(*tape) bool
	if want != "" {
		only = func(t *tape) bool {
			return t.name == want || t.name == filepath.Join(s.cfg.CassetteDir, want+".cassette")
		}
	}
	return s.entriesWhere(ctx, only, func(e *logged) bool { return want == "" || e.Cassette == want || e.Name == want }, pg)
}

// entriesWhere lists a page of the journal's wanted entries, as logEntries
// does, once the responses ended on the tapes only names (nil: all) are
// in it.
func (s *Server) entriesWhere(ctx context.Context, only func(*tape) bool, wanted func(*logged) bool, pg logPage) (out []LogEntry, total, dropped int, err error) {
	if err := s.journal.settle(ctx, only); err != nil {
		return nil, 0, 0, err
	}
	entries, total, dropped := s.journal.page(pg, wanted)
	out = make([]LogEntry, len(entries))
	for k := range entries {
		if e := &entries[k]; !e.summarized && e.complete() {
			s.journal.keep(*e) // built once, kept
		}
		out[k] = entries[k].LogEntry
		if s.cfg.CassetteDir == "" {
			out[k].Name = "" // as the view names the one cassette
		}
	}
	// Entries are added as requests end; the log is in the order they
	// arrived.
	slices.SortStableFunc(out, func(a, b LogEntry) int { return a.Time.Compare(b.Time) })
	return out, total, dropped, nil
}

// page returns the entries wanted after pg.after, at most pg.limit (0 for
// all) of them, oldest first; how many entries wanted there are in all;
// and how many were dropped.
func (j *journal) page(pg logPage, wanted func(*logged) bool) (out []logged, total, dropped int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out = []logged{}
	for k := range j.count {
		e := j.entryOf(j.at(k))
		if !wanted(&e) {
			continue
		}
		total++
		if e.Seq > pg.after && (pg.limit == 0 || len(out) < pg.limit) {
			out = append(out, e)
		}
	}
	return out, total, j.dropped
}

// field2 is a field of a JSON object the API writes.
type field2 struct {
	name  string
	value any
}

// A listAnswer writes a JSON object holding a list, item by item as the
// items are produced, so that an answer is never built whole in memory:
// fields, then the list, then more fields.
type listAnswer struct {
	w     io.Writer
	items int
	err   error
}

// beginList writes the answer's status and header, the fields and the
// start of the list named name.
func beginList(w http.ResponseWriter, name string, fields ...field2) *listAnswer {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	a := &listAnswer{w: w}
	a.write([]byte("{\n  "))
	for _, f := range fields {
		a.field(f)
		a.write([]byte(",\n  "))
	}
	a.write([]byte(strconv.Quote(name) + ": ["))
	return a
}

// item writes one item of the list.
func (a *listAnswer) item(v any) error {
	b, err := json.MarshalIndent(v, "    ", "  ")
	if err != nil {
		a.err = err
		return err
	}
	if a.items > 0 {
		a.write([]byte(","))
	}
	a.items++
	a.write([]byte("\n    "))
	a.write(b)
	return a.err
}

// end closes the list and writes the fields after it.
func (a *listAnswer) end(fields ...field2) {
	a.write([]byte("\n  ]"))
	for _, f := range fields {
		a.write([]byte(",\n  "))
		a.field(f)
	}
	a.write([]byte("\n}\n"))
}

func (a *listAnswer) field(f field2) {
	b, err := json.MarshalIndent(f.value, "  ", "  ")
	if err != nil {
		b = []byte("null")
	}
	a.write([]byte(strconv.Quote(f.name) + ": "))
	a.write(b)
}

func (a *listAnswer) write(b []byte) {
	if a.err == nil {
		_, a.err = a.w.Write(b)
	}
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
