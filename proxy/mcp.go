package proxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/wire"
)

// MCPPrefix is the first path segment of the MCP route: /mcp/NAME/REST
// goes to the MCP server NAME (Config.MCP) as its URL followed by /REST, is
// recorded under the upstream name "mcp/NAME", and is read as JSON-RPC
// (wire.KindMCP). "mcp" is therefore no upstream name.
const MCPPrefix = "mcp"

// MCPSessionHeader and MCPVersionHeader are the streamable HTTP transport's
// session id and protocol version headers.
const (
	MCPSessionHeader = "Mcp-Session-Id"
	MCPVersionHeader = "Mcp-Protocol-Version"
)

// mcpRoute is the route of a path under /mcp/NAME, given the escaped path
// without its leading slash; ok is false for any other path.
func (s *Server) mcpRoute(rest string) (rt route, ok bool) {
	first, tail, _ := strings.Cut(rest, "/")
	if first != MCPPrefix {
		return route{}, false
	}
	name, tail, more := strings.Cut(tail, "/")
	rt = route{name: MCPPrefix + "/" + name, base: s.cfg.MCP[name], mcp: true}
	if more {
		rt.path = "/" + tail
	}
	return rt, true
}

// admitMCP reads an MCP request before it is matched, and answers it
// itself when it is not one to match: a POST that is not one JSON-RPC
// message is a JSON-RPC error; GET (the server's event stream) and DELETE
// (the end of a session) are forwarded unrecorded in record and auto, and
// in replay answered 405 (no event stream, which MCP allows) and 200; any
// other method is 405. It reports whether the request goes on to be
// matched.
func (s *Server) admitMCP(w http.ResponseWriter, x *exchange) bool {
	switch x.req.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodDelete:
		if s.cfg.Mode != ModeReplay {
			s.passMCP(w, x)
			return false
		}
		if x.req.Method == http.MethodDelete {
			w.WriteHeader(http.StatusOK)
			return false
		}
		fallthrough
	default:
		w.Header().Set("Allow", "POST, DELETE")
		failWith(w, x.kind, http.StatusMethodNotAllowed, "invalid_request_error",
			fmt.Sprintf("llmproxy: %s %s: this MCP route answers POST (and in record, GET and DELETE)", x.req.Method, cassette.ProxyPath(x.route.name, x.route.path)))
		return false
	}
	m, err := mcp.Parse(x.body)
	if err != nil {
		msg := fmt.Sprintf("llmproxy: %s: POST %s: the body is %v", x.tape.name, cassette.ProxyPath(x.route.name, x.route.path), err)
		code := mcp.CodeInvalidRequest
		if err == mcp.ErrMalformed {
			code = mcp.CodeParseError
		}
		s.journal.add(logged{LogEntry: LogEntry{Time: x.start, Cassette: x.tape.name, Method: x.req.Method, Upstream: x.route.name, Path: x.route.path, Kind: string(x.kind), Miss: msg, Status: http.StatusBadRequest}})
		writeMCP(w, http.StatusBadRequest, mcp.ErrorBody(nil, code, msg, nil))
		return false
	}
	x.mcp = m
	return true
}

// mockMCP hands a request under /mcp/NAME to the MCP mock NAME; a name
// with no mock is a miss, answered as a JSON-RPC error.
func (s *Server) mockMCP(w http.ResponseWriter, r *http.Request, start time.Time, rt route, body []byte) {
	name := strings.TrimPrefix(rt.name, MCPPrefix+"/")
	h, ok := s.cfg.MCPMocks[name]
	if !ok {
		msg := fmt.Sprintf("llmproxy mock: no MCP mock %q (give --mcp %s=PRESETS-or-SCENARIO)", name, name)
		s.missed(msg)
		s.journal.add(logged{LogEntry: LogEntry{Time: start, Method: r.Method, Upstream: rt.name, Path: rt.path, Kind: string(wire.KindMCP), Miss: msg, Status: http.StatusNotFound}})
		w.Header().Set(MissHeader, "1")
		m, _ := mcp.Parse(body)
		writeMCP(w, http.StatusNotFound, mcp.ErrorBody(m.ID, mcp.CodeCassetteMiss, msg, nil))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.ServeHTTP(w, r)
}

// writeMCP writes a JSON-RPC body.
func writeMCP(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// passMCP forwards an MCP GET or DELETE to its server and copies the
// answer back as it arrives, recording nothing: the event stream lasts as
// long as the session and carries what the server sends unasked, which a
// replay has no request to answer with.
func (s *Server) passMCP(w http.ResponseWriter, x *exchange) {
	if x.route.base == nil {
		s.noMCPServer(w, x)
		return
	}
	watch := s.watchUpstream(x.req.Context())
	defer watch.stop()
	resp, _, f := s.send(x, watch)
	if f != nil {
		s.failed(w, x, f)
		return
	}
	defer resp.Body.Close()
	c := startResponse(w, resp, false)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		watch.heard()
		c.send(buf[:n])
		if err != nil || c.gone {
			return
		}
	}
}

// noMCPServer answers a request to be forwarded to an MCP server this
// proxy was not given.
func (s *Server) noMCPServer(w http.ResponseWriter, x *exchange) {
	name := strings.TrimPrefix(x.route.name, MCPPrefix+"/")
	msg := fmt.Sprintf("llmproxy: %s %s: no MCP server %q to forward to; give --mcp %s=URL", x.req.Method, cassette.ProxyPath(x.route.name, x.route.path), name, name)
	s.journal.add(x.entry(0, msg, http.StatusBadGateway))
	s.failedUpstream(x, msg)
	writeMCP(w, http.StatusBadGateway, mcp.ErrorBody(x.mcp.ID, mcp.CodeInternalError, msg, nil))
}

// mcpHeaders makes a recording's headers the answer to the live request:
// a session id the recording carries becomes the live request's own, or,
// for a request that has none (initialize), one this proxy makes up.
func mcpHeaders(h http.Header, x *exchange) {
	if h.Get(MCPSessionHeader) == "" {
		return
	}
	id := x.req.Header.Get(MCPSessionHeader)
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = "llmproxy-" + hex.EncodeToString(b[:])
	}
	h.Set(MCPSessionHeader, id)
}

// missMCP answers an MCP request no recording serves: a notification (or
// a response to the server) needs no answer and gets 202 Accepted, as the
// server would have given; a request gets a JSON-RPC error with its own
// id, code mcp.CodeCassetteMiss, the miss's message, and data holding the
// closest interaction and the differences (path, got, want), with
// MissHeader as any miss. It is listed like any miss. The HTTP status is
// 200, as a server's for a request it accepted and answered with an error:
// the transport keeps 4xx for input it cannot accept, and clients (the npm
// SDK's among them) report a 4xx as a transport failure, not as the
// JSON-RPC error with its code and data.
func (s *Server) missMCP(w http.ResponseWriter, x *exchange, msg string) {
	if x.mcp.Notification() {
		s.journal.add(x.entry(0, "", http.StatusAccepted))
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.missed(msg)
	s.log.WarnContext(x.req.Context(), "miss", x.logArgs("reason", msg)...)
	s.journal.add(x.entry(0, msg, http.StatusOK))
	data, _ := json.Marshal(struct {
		Type        string    `json:"type"`
		Method      string    `json:"method"`
		Closest     uint64    `json:"closest,omitempty"`
		Differences any       `json:"differences,omitempty"`
		Kind        wire.Kind `json:"kind"`
	}{Type: "cassette_miss", Method: x.mcp.Method, Closest: x.closest, Differences: x.diffs, Kind: x.kind})
	w.Header().Set(MissHeader, "1")
	writeMCP(w, http.StatusOK, mcp.ErrorBody(x.mcp.ID, mcp.CodeCassetteMiss, msg, data))
}
