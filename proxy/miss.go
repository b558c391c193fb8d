package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

// MissHeader marks a miss answer.
const MissHeader = "X-Llmproxy-Miss"

// maxCandidates bounds the recordings a miss diagnosis compares.
const maxCandidates = 256

// miss answers a request that no recording serves: HTTP 400 in the API
// kind's error shape, marked with MissHeader, whose message says why (see
// explainMiss and explainFixtures). served are the request's recordings
// when every one was served already.
func (s *Server) miss(w http.ResponseWriter, x *exchange, served []uint64) {
	msg := s.explainFixtures(x, s.explainMiss(x, served)) + s.pageOf(x)
	s.missed(msg)
	s.log.WarnContext(x.req.Context(), "miss", x.logArgs("reason", msg)...)
	s.journal.add(x.entry(0, msg, http.StatusBadRequest))
	w.Header().Set(MissHeader, "1")
	s.fail(w, x.kind, http.StatusBadRequest, "cassette_miss", msg)
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
			x.tape.name, what, which, s.cfg.OnExhausted)
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

// closest ranks recordings of the same method, upstream and path (all of
// them if there are none) by the number of differences.
func (s *Server) closest(x *exchange) (*cassette.Interaction, []match.Difference, error) {
	ids, err := x.tape.index.shape(s.matcher.Shape(x.mreq))
	if err != nil {
		return nil, nil, err
	}
	var cands []*cassette.Interaction
	if len(ids) > 0 {
		if len(ids) > maxCandidates {
			ids = ids[len(ids)-maxCandidates:]
		}
		for _, id := range ids {
			i, err := x.tape.c.Get(id)
			if err != nil {
				return nil, nil, err
			}
			cands = append(cands, i)
		}
	} else {
		err := x.tape.c.ForEach(func(i *cassette.Interaction) error {
			if len(cands) < maxCandidates {
				cands = append(cands, i)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	var best *cassette.Interaction
	var bestDiffs []match.Difference
	bestScore := -1
	for _, c := range cands {
		diffs, n := s.matcher.Diff(x.mreq, cassette.MatchRequest(c), 3)
		// Same API kind first, then fewest differences; on a tie, one not
		// yet served is the likelier intent than one already served.
		score := 2 * n
		if c.Kind != string(x.kind) {
			score += 1_000_000
		}
		if x.tape.plays.isConsumed(c.ID) {
			score++
		}
		if bestScore < 0 || score < bestScore {
			best, bestDiffs, bestScore = c, diffs, score
		}
	}
	return best, bestDiffs, nil
}

func joinIDs(ids []uint64) string {
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, strconv.FormatUint(id, 10))
	}
	return strings.Join(parts, ", ")
}
