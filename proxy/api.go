package proxy

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
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
		if s.cfg.AdminToken != "" {
			got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AdminToken)) != 1 {
				apiError(w, http.StatusUnauthorized, "unauthorized", "llmproxy: /_llmproxy/ needs Authorization: Bearer <admin token> (--admin-token)")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleAPINotFound(w http.ResponseWriter, r *http.Request) {
	apiError(w, http.StatusNotFound, "not_found", "llmproxy: no API endpoint "+r.Method+" "+r.URL.Path+"; the API is: "+strings.Join(apiEndpoints, ", "))
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "mode": s.cfg.Mode.String()})
}

// apiTape is the cassette an API request is about: the server's, or the one
// named by the X-Llmproxy-Cassette header or the "cassette" query parameter.
func (s *Server) apiTape(w http.ResponseWriter, r *http.Request) (*tape, bool) {
	if s.cfg.Cassette == nil && r.Header.Get(CassetteHeader) == "" && r.URL.Query().Get("cassette") != "" {
		r.Header.Set(CassetteHeader, r.URL.Query().Get("cassette"))
	}
	t, err := s.tapeFor(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return nil, false
	}
	return t, true
}

// Summary is the short form of an interaction, for listings.
type Summary struct {
	ID        uint64          `json:"id"`
	Upstream  string          `json:"upstream"`
	Provider  string          `json:"provider,omitempty"`
	Kind      string          `json:"kind"`
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Status    int             `json:"status"`
	Stream    bool            `json:"stream"`
	ToolCalls []wire.ToolCall `json:"tool_calls,omitempty"`
	Consumed  *bool           `json:"consumed,omitempty"`
}

// Summarize returns the listing form of an interaction, with the tool calls
// its response made.
func Summarize(i *cassette.Interaction) Summary {
	sum := Summary{
		ID: i.ID, Upstream: i.Upstream, Provider: i.Provider, Kind: i.Kind, Method: i.Request.Method,
		Path: i.Request.Path, Status: i.Response.Status, Stream: i.Response.Streamed(),
	}
	if resp, err := wire.ParseResponse(wire.Kind(i.Kind), framingOf(i.Response.Framing), i.Response.Bytes()); err == nil {
		sum.ToolCalls = resp.ToolCalls
	}
	return sum
}

func framingOf(name string) wire.Framing {
	switch name {
	case "sse":
		return wire.FramingSSE
	case "ndjson":
		return wire.FramingNDJSON
	}
	return wire.FramingNone
}

func (s *Server) handleInteractions(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTape(w, r)
	if !ok {
		return
	}
	out := []Summary{}
	err := t.c.ForEach(func(i *cassette.Interaction) error {
		sum := Summarize(i)
		c := t.isConsumed(i.ID)
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
	t, ok := s.apiTape(w, r)
	if !ok {
		return
	}
	out, err := s.Unused(t)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "cassette_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cassette": t.name, "unused": out})
}

// Unused lists the interactions of a tape not consumed in this process.
func (s *Server) Unused(t *tape) ([]Summary, error) {
	out := []Summary{}
	err := t.c.ForEach(func(i *cassette.Interaction) error {
		if !t.isConsumed(i.ID) {
			out = append(out, Summarize(i))
		}
		return nil
	})
	return out, err
}

// AllUnused lists, per cassette, the interactions not consumed in this process.
func (s *Server) AllUnused() (map[string][]Summary, error) {
	s.mu.Lock()
	tapes := make([]*tape, 0, len(s.tapes))
	for _, t := range s.tapes {
		tapes = append(tapes, t)
	}
	s.mu.Unlock()
	out := map[string][]Summary{}
	for _, t := range tapes {
		u, err := s.Unused(t)
		if err != nil {
			return nil, err
		}
		if len(u) > 0 {
			out[t.name] = u
		}
	}
	return out, nil
}

// logView is a log entry with the tool traffic it carried.
type logView struct {
	logEntry
	ToolCalls   []wire.ToolCall   `json:"tool_calls,omitempty"`
	ToolResults []wire.ToolResult `json:"tool_results,omitempty"`
}

func (s *Server) handleLog(w http.ResponseWriter, r *http.Request) {
	entries, dropped := s.journal.snapshot()
	want := r.URL.Query().Get("cassette")
	out := []logView{}
	for _, e := range entries {
		if want != "" && e.Cassette != want && !strings.HasSuffix(e.Cassette, "/"+want+".cassette") {
			continue
		}
		v := logView{logEntry: e}
		if e.reqBody != nil {
			if req, err := wire.ParseRequest(wire.Kind(e.Kind), e.Path, e.reqBody); err == nil {
				v.ToolResults = req.ToolResults
			}
		}
		if e.Interaction != 0 {
			if i, err := e.tape.c.Get(e.Interaction); err == nil {
				v.ToolCalls = Summarize(i).ToolCalls
			}
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out, "dropped": dropped})
}

func (s *Server) handleFixture(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTape(w, r)
	if !ok {
		return
	}
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
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(fx)
}
