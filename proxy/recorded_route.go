package proxy

import (
	"strings"

	"github.com/llmproxy/llmproxy/wire"
)

// reroute lets replay find recordings made under an upstream name this
// server was not given. Replay contacts no upstream, so `llmproxy replay`
// needs no --upstream flags, yet a cassette recorded with --upstream
// ollama=… holds /ollama/api/chat under the name "ollama" and the path
// /api/chat. An unprefixed request that has no recording under the default
// upstream, and whose first path segment is not a configured name, is taken
// as routed to that segment when the cassette holds recordings of the same
// method and remaining path under it; the miss diagnosis then compares it
// with those. Only replay does this: auto and record forward, and an
// unknown name has no URL to forward to. reroute reports whether it changed
// the exchange's route (and kind and match key).
func (s *Server) reroute(x *exchange) bool {
	if !x.route.unprefixed {
		return false
	}
	name, tail, ok := strings.Cut(strings.TrimPrefix(x.route.path, "/"), "/")
	if !ok || name == "" || !strings.HasPrefix(x.route.path, "/") {
		return false
	}
	rt := route{name: name, base: x.route.base, path: "/" + tail}
	kind := wire.Detect(x.req.Method, rt.path)
	mreq := *x.mreq
	mreq.Upstream, mreq.Path, mreq.Kind = rt.name, s.redactor.Path(rt.path), string(kind)
	if ids, err := x.tape.index.shape(x.rules.matcher.Shape(&mreq)); err != nil || len(ids) == 0 {
		return false
	}
	key, err := x.rules.matcher.Key(&mreq)
	if err != nil {
		return false
	}
	x.route, x.kind, x.mreq, x.key = rt, kind, &mreq, key
	return true
}
