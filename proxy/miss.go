package proxy

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
)

// MissHeader marks a miss answer.
const MissHeader = "X-Llmproxy-Miss"

const (
	// maxCandidates bounds the recordings a miss ranks, by their request
	// bodies' bytes alone (see rank): the newest of its method, upstream
	// and path, or the newest of the cassette.
	maxCandidates = 256
	// maxDiffed bounds the best ranked of those a miss decodes and
	// compares path by path.
	maxDiffed = 4
	// maxExplaining bounds the misses explained at once; a miss past it is
	// answered without its closest recording.
	maxExplaining = 4
)

// miss answers a request that no recording serves: HTTP 400 in the API
// kind's error shape, marked with MissHeader, whose message says why (see
// explainMiss and explainFixtures). served are the request's recordings
// when every one was served already.
func (s *Server) miss(w http.ResponseWriter, x *exchange, served []uint64) {
	msg := s.explainFixtures(x, s.explainMiss(x, served)) + s.pageOf(x)
	if x.kind == wire.KindMCP {
		s.missMCP(w, x, msg)
		return
	}
	s.missed(msg)
	x.tape.stats.miss(x.req.Method, cassette.ProxyPath(x.route.name, x.mreq.Path), msg)
	s.log.WarnContext(x.req.Context(), "miss", x.logArgs("reason", msg)...)
	s.journal.add(x.entry(0, msg, http.StatusBadRequest))
	w.Header().Set(MissHeader, "1")
	failWith(w, x.kind, http.StatusBadRequest, "cassette_miss", msg)
}

// missed reports a miss to Config.OnMiss.
func (s *Server) missed(msg string) {
	if s.cfg.OnMiss != nil {
		s.cfg.OnMiss(msg)
	}
}

// explainMiss writes the message of a miss: it names the cassette and, when
// the request's recordings were all served, says so and which they were;
// otherwise it names the closest recorded interaction and the first JSON
// paths (at most three) at which the request differs from it, with both
// values.
func (s *Server) explainMiss(x *exchange, exhausted []uint64) string {
	what := x.req.Method + " " + cassette.ProxyPath(x.route.name, x.mreq.Path)
	if len(exhausted) > 0 {
		x.closest = exhausted[len(exhausted)-1]
		which := "its only recording, interaction " + joinIDs(exhausted)
		if len(exhausted) > 1 {
			which = fmt.Sprintf("all %d recordings, interactions %s", len(exhausted), joinIDs(exhausted))
		}
		return fmt.Sprintf("llmproxy: cassette %s: this request (%s) was already served from %s; --on-exhausted is %s",
			x.tape.name, what, which, x.rules.exhausted)
	}
	select {
	case s.explaining <- struct{}{}:
		defer func() { <-s.explaining }()
	default:
		return fmt.Sprintf("llmproxy: cassette %s has no recording of this request (%s); the closest recording was not looked for: %d other misses were being explained at once, the most there may be",
			x.tape.name, what, maxExplaining)
	}
	best, diffs, err := s.closest(x)
	switch {
	case err != nil:
		return fmt.Sprintf("llmproxy: cassette %s has no recording of this request (%s); finding the closest failed: %v", x.tape.name, what, err)
	case best == nil:
		return fmt.Sprintf("llmproxy: cassette %s has no recording of this request (%s), and no recording to compare it with", x.tape.name, what)
	}
	x.closest, x.diffs = best.ID, diffs
	var b strings.Builder
	fmt.Fprintf(&b, "llmproxy: cassette %s has no recording of this request (%s); closest is interaction %d (%s %s)",
		x.tape.name, what, best.ID, best.Request.Method, cassette.ProxyPath(best.Upstream, best.Request.Path))
	if x.tape.plays.isConsumed(best.ID) {
		b.WriteString(", already served")
	}
	if len(diffs) == 0 {
		b.WriteString(", which differs only in ignored or unlisted parts")
		return b.String()
	}
	b.WriteString(", which differs at ")
	for n, d := range diffs {
		if n == 3 {
			fmt.Fprintf(&b, "; and more")
			break
		}
		if n > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// closest finds the recording closest to a missed request among those of
// the same method, upstream and path (the newest maxCandidates of them; of
// the whole cassette if there are none): it ranks them by their request
// bodies' bytes, read in place (see rank), then decodes only the requests
// of the best maxDiffed and compares those path by path. Of those, the
// closest is of the same API kind, then at the smallest distance
// (match.Distance.Closer), then one not yet served.
func (s *Server) closest(x *exchange) (*cassette.Interaction, []match.Difference, error) {
	ids, err := x.tape.index.shape(x.rules.matcher.Shape(x.mreq))
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		last, err := x.tape.c.Last()
		if err != nil {
			return nil, nil, err
		}
		for id := last - min(last, maxCandidates) + 1; id <= last && last > 0; id++ {
			ids = append(ids, id)
		}
	}
	if len(ids) > maxCandidates {
		ids = ids[len(ids)-maxCandidates:]
	}
	best, err := s.rank(x, ids)
	if err != nil {
		return nil, nil, err
	}
	var cands []*cassette.Interaction
	err = x.tape.c.Read(func(r *cassette.Reader) error {
		for _, id := range best {
			i, err := r.Request(id)
			if err != nil {
				return err
			}
			cands = append(cands, i)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var (
		closest   *cassette.Interaction
		bestDiffs []match.Difference
		bestDist  match.Distance
		bestKind  bool
		bestUsed  bool
	)
	for _, c := range cands {
		diffs, dist := x.rules.matcher.Distance(x.mreq, cassette.MatchRequest(c), 3)
		kind, used := c.Kind == string(x.kind), x.tape.plays.isConsumed(c.ID)
		closer := closest == nil || (kind && !bestKind) ||
			(kind == bestKind && (dist.Closer(bestDist) || (dist == bestDist && !used && bestUsed)))
		if closer {
			closest, bestDiffs, bestDist, bestKind, bestUsed = c, diffs, dist, kind, used
		}
	}
	return closest, bestDiffs, nil
}

// rank returns the maxDiffed of ids whose recorded requests look closest to
// the request, of its API kind first: by the bytes their bodies do not
// share with its body at either end, read in place with no decoding. The
// order is a cheap estimate; closest compares the few it returns exactly.
// Each request is read in a read transaction of its own, so that the
// transaction's buffer holds one at a time.
func (s *Server) rank(x *exchange, ids []uint64) ([]uint64, error) {
	type cand struct {
		id       uint64
		otherAPI bool
		bytes    int
	}
	ranked := make([]cand, 0, len(ids))
	for _, id := range ids {
		err := x.tape.c.Read(func(r *cassette.Reader) error {
			v, err := r.RequestView(id)
			if err == nil {
				ranked = append(ranked, cand{id: id, otherAPI: string(v.Kind) != string(x.kind), bytes: unshared(x.mreq.Body, v.Body)})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(ranked, func(a, b cand) int {
		if a.otherAPI != b.otherAPI {
			if a.otherAPI {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.bytes, b.bytes)
	})
	out := make([]uint64, 0, maxDiffed)
	for _, c := range ranked[:min(len(ranked), maxDiffed)] {
		out = append(out, c.id)
	}
	return out, nil
}

// unshared is the number of bytes of a and b outside the prefix and the
// suffix they share.
func unshared(a, b []byte) int {
	n := min(len(a), len(b))
	p := 0
	for p < n && a[p] == b[p] {
		p++
	}
	q := 0
	for q < n-p && a[len(a)-1-q] == b[len(b)-1-q] {
		q++
	}
	return len(a) + len(b) - 2*(p+q)
}

func joinIDs(ids []uint64) string {
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, strconv.FormatUint(id, 10))
	}
	return strings.Join(parts, ", ")
}
