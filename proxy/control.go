package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/refresh"
	"github.com/llmproxy/llmproxy/scenario"
)

// The control routes of the API: sessions, scenarios and verify (see
// docs/api.md). Those that change what is served take a JSON body and are
// refused to a browser page of another origin.

// maxControlBody bounds the body of a control request (an inline scenario
// included).
const maxControlBody = 8 << 20

// sessionSpec is the body of PUT /_llmproxy/session.
type sessionSpec struct {
	Cassette    string          `json:"cassette"`
	Mode        string          `json:"mode"`
	OnExhausted string          `json:"on-exhausted"`
	Ignore      []string        `json:"ignore"`
	Name        string          `json:"name"`
	Scenario    json.RawMessage `json:"scenario"`
	// Refresh and Prune are auto --refresh and --prune for the session's
	// cassette, applied when the session ends.
	Refresh bool `json:"refresh"`
	Prune   bool `json:"prune"`
	// Faults are the session's faults (as --fault writes them), picked by
	// FaultSeed (default: the command's --fault-seed); they replace the
	// command's for the session's requests.
	Faults    []string `json:"faults"`
	FaultSeed *uint64  `json:"fault-seed"`
}

// scenarioSpec is the body of POST /_llmproxy/scenarios.
type scenarioSpec struct {
	Scenario json.RawMessage `json:"scenario"`
	Name     string          `json:"name"`
}

// mutating guards a route that changes what the proxy serves: a browser
// request from any origin but the proxy's own (Origin, or Sec-Fetch-Site
// saying cross-site) is refused with 403, and a body must be declared
// application/json (415 otherwise), which a page cannot send to another
// origin without a CORS preflight. The token, Host and allowed-origin
// rules of every route apply before it (browserGuard, adminAuth).
func mutating(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !ownOrigin(o, r.Host) {
			apiError(w, http.StatusForbidden, "forbidden", "llmproxy: "+r.Method+" "+r.URL.Path+" from Origin "+o+
				" is refused: the control API changes what the proxy serves and answers no other origin's page")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			apiError(w, http.StatusForbidden, "forbidden", "llmproxy: "+r.Method+" "+r.URL.Path+" is refused: Sec-Fetch-Site: "+site)
			return
		}
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				apiError(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
					"llmproxy: "+r.Method+" "+r.URL.Path+" takes a JSON body with Content-Type: application/json, not "+strconv.Quote(r.Header.Get("Content-Type")))
				return
			}
		}
		next(w, r)
	}
}

// ownOrigin reports whether a browser origin is the proxy's own: its host
// and port are the request's Host.
func ownOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, host)
}

// decodeControl reads a control request's JSON object into v: unknown keys,
// trailing data and a body past maxControlBody are errors naming the
// problem.
func decodeControl(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the body is empty")
		}
		apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: "+r.Method+" "+r.URL.Path+": the body is not the JSON object expected: "+err.Error())
		return false
	}
	return true
}

// handlePutSession opens the session a body names and ends the one it
// replaces (whose summary it answers). A session whose cassette is the
// current one's ends that one first, so that its file's lock is free.
func (s *Server) handlePutSession(w http.ResponseWriter, r *http.Request) {
	var spec sessionSpec
	if !decodeControl(w, r, &spec) {
		return
	}
	open, status, typ, err := s.sessionOpener(&spec)
	if err != nil {
		apiError(w, status, typ, err.Error())
		return
	}
	s.sessions.control.Lock()
	defer s.sessions.control.Unlock()
	var ended *SessionSummary
	var endErr error
	if cur := s.sessions.current(); cur != nil && cur.info.Cassette != "" && s.sameCassette(cur, &spec) {
		ended, endErr = s.endSession(r.Context(), s.sessions.swap(nil))
	}
	se, err := open()
	if err != nil {
		status, typ, msg := controlFailure(err)
		writeJSON(w, status, map[string]any{"error": map[string]any{"type": typ, "message": msg}, "ended": ended})
		return
	}
	s.sessions.next++
	se.info.ID, se.info.Started = "s"+strconv.Itoa(s.sessions.next), time.Now().UTC()
	s.journal.mu.Lock()
	se.firstSeq = s.journal.seq
	s.journal.mu.Unlock()
	if old := s.sessions.swap(se); old != nil {
		ended, endErr = s.endSession(r.Context(), old)
	}
	s.log.InfoContext(r.Context(), "session opened", "session", se.info.ID, "name", se.info.Name, "cassette", se.info.Cassette, "scenario", se.info.Scenario, "mode", se.info.Mode)
	if endErr != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"type": "cassette_error", "message": endErr.Error()}, "session": se.info, "ended": ended})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": se.info, "ended": ended})
}

// sameCassette reports whether a spec names the cassette of session cur.
func (s *Server) sameCassette(cur *session, spec *sessionSpec) bool {
	path, err := sessionPath(s.root, spec.Cassette, "cassette")
	return err == nil && path == cur.info.Cassette
}

// sessionOpener checks a session's body and returns what opens it, or the
// status, type and error of a bad body.
func (s *Server) sessionOpener(spec *sessionSpec) (open func() (*session, error), status int, typ string, err error) {
	source, status, typ, err := s.sessionSource(spec)
	if err != nil || spec.Faults == nil && spec.FaultSeed == nil {
		return source, status, typ, err
	}
	plan, err := s.sessionFaults(spec)
	if err != nil {
		return nil, http.StatusBadRequest, "invalid_request_error", err
	}
	return func() (*session, error) {
		se, err := source()
		if se != nil {
			se.faults = plan
		}
		return se, err
	}, 0, "", nil
}

// sessionFaults reads a session body's faults; the error names the one at
// fault.
func (s *Server) sessionFaults(spec *sessionSpec) (*faults.Plan, error) {
	mode := s.cfg.Mode
	if spec.Mode != "" {
		mode, _ = ParseMode(spec.Mode)
	}
	if mode == ModeRecord {
		return nil, fmt.Errorf("llmproxy: PUT /_llmproxy/session: faults: record never injects faults; give mode replay or auto")
	}
	plan := &faults.Plan{Seed: s.cfg.Faults.Seed}
	if spec.FaultSeed != nil {
		plan.Seed = *spec.FaultSeed
	}
	for k, v := range spec.Faults {
		f, err := faults.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("llmproxy: PUT /_llmproxy/session: faults[%d]: %w", k, err)
		}
		plan.Faults = append(plan.Faults, f)
	}
	return plan, nil
}

// sessionSource checks the cassette or scenario of a session's body and
// returns what opens it, or the status, type and error of a bad body.
func (s *Server) sessionSource(spec *sessionSpec) (open func() (*session, error), status int, typ string, err error) {
	bad := func(msg string, a ...any) (func() (*session, error), int, string, error) {
		return nil, http.StatusBadRequest, "invalid_request_error", fmt.Errorf("llmproxy: PUT /_llmproxy/session: "+msg, a...)
	}
	hasScenario := len(spec.Scenario) > 0 && string(spec.Scenario) != "null"
	switch {
	case s.mock != nil && spec.Cassette != "":
		return bad("mock serves scenarios: give {\"scenario\": FILE or inline}, not a cassette")
	case s.mock != nil && !hasScenario:
		return bad("give {\"scenario\": FILE or inline YAML or a JSON object}")
	case s.mock != nil:
		if spec.Mode != "" && spec.Mode != "mock" || spec.OnExhausted != "" || spec.Ignore != nil || spec.Refresh || spec.Prune {
			return bad("a scenario session takes only scenario, name, faults and fault-seed (mode, on-exhausted and ignore are a cassette's)")
		}
		return func() (*session, error) { return s.openScenarioSession(spec) }, 0, "", nil
	case hasScenario:
		return bad("scenario sessions are served by llmproxy mock, not %s", s.cfg.Mode)
	case spec.Cassette == "":
		return bad("give {\"cassette\": PATH} (relative to %s)", s.root)
	}
	rules := s.rules
	if spec.Mode != "" {
		if rules.mode, err = ParseMode(spec.Mode); err != nil {
			return bad("%v", err)
		}
	}
	if spec.OnExhausted != "" {
		if rules.exhausted, err = ParseExhausted(spec.OnExhausted); err != nil {
			return bad("%v", err)
		}
	}
	switch {
	case spec.Prune && !spec.Refresh:
		return bad("prune drops what a refresh did not use: give refresh too")
	case spec.Refresh && rules.mode == ModeReplay:
		return bad("refresh records what misses: give mode auto or record, not replay")
	case spec.Refresh:
		rules.mode = ModeAuto // record with refresh is auto with refresh
	}
	indexer := s.cfg.Indexer
	if len(spec.Ignore) > 0 {
		if indexer, err = indexer.WithIgnore(spec.Ignore...); err != nil {
			return bad("ignore: %v", err)
		}
		rules.matcher = indexer.Matcher()
	}
	if _, err := sessionPath(s.root, spec.Cassette, "cassette"); err != nil {
		return nil, http.StatusBadRequest, "bad_cassette_path", err
	}
	return func() (*session, error) { return s.openCassetteSession(spec, &rules, indexer) }, 0, "", nil
}

// handleGetSession answers the open session, or null.
func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) {
	var info *SessionInfo
	if se := s.sessions.current(); se != nil {
		info = &se.info
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": info})
}

// handleDeleteSession ends the open session and answers its summary, or
// null when none was open.
func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	s.sessions.control.Lock()
	defer s.sessions.control.Unlock()
	old := s.sessions.swap(nil)
	if old == nil {
		writeJSON(w, http.StatusOK, map[string]any{"ended": nil})
		return
	}
	sum, err := s.endSession(r.Context(), old)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"type": "cassette_error", "message": err.Error()}, "ended": sum})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ended": sum})
}

// loadScenario loads the scenario a control body gives: a file under the
// session root, inline YAML (a string holding a newline) or a JSON object;
// checked as scenario check does, with Config.ToolNames applied. what is
// "file" or "inline" for the answer.
func (s *Server) loadScenario(raw json.RawMessage) (sc *scenario.Scenario, what string, err error) {
	var text string
	var data []byte
	switch {
	case bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")):
		data, what = raw, "inline"
	case json.Unmarshal(raw, &text) != nil:
		return nil, "", fmt.Errorf("llmproxy: scenario: want a file path, inline YAML or a JSON object, not %.40s: %w", raw, errBadControl)
	case strings.Contains(text, "\n"):
		data, what = []byte(text), "inline"
	default:
		path, err := sessionPath(s.root, text, "scenario")
		if err != nil {
			return nil, "", err
		}
		if data, err = os.ReadFile(path); err != nil {
			return nil, "", fmt.Errorf("llmproxy: scenario %s: %w", path, errors.Join(err, errBadControl))
		}
		what = text
	}
	if sc, err = scenario.Parse(what, data); err != nil {
		return nil, "", err
	}
	if err := sc.NameTools(s.cfg.ToolNames); err != nil {
		return nil, "", fmt.Errorf("llmproxy: scenario %s: %w", what, errors.Join(err, errBadControl))
	}
	return sc, what, nil
}

// errBadControl marks a control body the proxy cannot use (a 400).
var errBadControl = errors.New("bad control request")

// openScenarioSession opens a mock session serving the scenario spec names.
func (s *Server) openScenarioSession(spec *sessionSpec) (*session, error) {
	sc, what, err := s.loadScenario(spec.Scenario)
	if err != nil {
		return nil, err
	}
	e, err := scenario.NewEngine(sc)
	if err != nil {
		return nil, fmt.Errorf("llmproxy: scenario %s: %w", what, errors.Join(err, errBadControl))
	}
	se := &session{stats: &sessionStats{}, info: SessionInfo{Name: spec.Name, Scenario: what, Mode: ModeMock.String(),
		Exists: true, Interactions: len(sc.Steps)}}
	se.setEngine(e)
	return se, nil
}

// controlFailure is the status, type and message of a failed scenario
// load or session open.
func controlFailure(err error) (status int, typ, msg string) {
	switch {
	case isLocked(err):
		return http.StatusConflict, "cassette_locked", err.Error()
	case errors.Is(err, errSessionPath):
		return http.StatusBadRequest, "bad_cassette_path", err.Error()
	case errors.Is(err, scenario.ErrInvalid):
		return http.StatusBadRequest, "scenario_invalid", "llmproxy: the scenario does not load, nothing replaced:\n" + err.Error()
	case errors.Is(err, errBadControl), errors.Is(err, refresh.ErrNothingToRefresh):
		return http.StatusBadRequest, "invalid_request_error", err.Error()
	}
	return http.StatusInternalServerError, "cassette_error", err.Error()
}

// controlError answers a failed scenario load or session open.
func controlError(w http.ResponseWriter, err error) {
	status, typ, msg := controlFailure(err)
	apiError(w, status, typ, msg)
}

// handlePostScenarios loads a scenario into mock, beside those served or
// in place of the one of its name.
func (s *Server) handlePostScenarios(w http.ResponseWriter, r *http.Request) {
	if s.mock == nil {
		apiError(w, http.StatusNotFound, "not_found", "llmproxy: POST /_llmproxy/scenarios: only llmproxy mock serves scenarios, not "+s.cfg.Mode.String())
		return
	}
	var spec scenarioSpec
	if !decodeControl(w, r, &spec) {
		return
	}
	if len(spec.Scenario) == 0 || string(spec.Scenario) == "null" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: POST /_llmproxy/scenarios: give {\"scenario\": FILE or inline YAML or a JSON object}")
		return
	}
	sc, what, err := s.loadScenario(spec.Scenario)
	if err != nil {
		controlError(w, err)
		return
	}
	if spec.Name != "" {
		sc.Name = spec.Name
	}
	e, err := scenario.NewEngine(sc)
	if err != nil {
		controlError(w, errors.Join(err, errBadControl))
		return
	}
	s.sessions.control.Lock()
	s.mock.put(e, what)
	s.sessions.control.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"loaded": sc.Name, "steps": len(sc.Steps)})
}

// handleDeleteScenarios starts every conversation of mock's scenarios (and
// the session's) over.
func (s *Server) handleDeleteScenarios(w http.ResponseWriter, r *http.Request) {
	if s.mock == nil {
		apiError(w, http.StatusNotFound, "not_found", "llmproxy: DELETE /_llmproxy/scenarios: only llmproxy mock serves scenarios, not "+s.cfg.Mode.String())
		return
	}
	s.sessions.control.Lock()
	defer s.sessions.control.Unlock()
	n, err := s.mock.reset()
	if se := s.sessions.current(); err == nil && se != nil && se.engine.Load() != nil {
		var e *scenario.Engine
		if e, err = scenario.NewEngine(se.engine.Load().Scenario()); err == nil {
			se.setEngine(e)
			n++
		}
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, "internal_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reset": n})
}
