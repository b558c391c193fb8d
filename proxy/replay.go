package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

// MissHeader marks a miss answer.
const MissHeader = "X-Llmproxy-Miss"

// maxCandidates bounds the recordings a miss diagnosis compares.
const maxCandidates = 256

// replay answers from the cassette; in auto mode a miss is recorded instead.
func (s *Server) replay(w http.ResponseWriter, x *exchange, auto bool) {
	ids, err := x.tape.lookup(x.key)
	if err != nil {
		s.fail(w, x.kind, http.StatusInternalServerError, "cassette_error", "llmproxy: "+err.Error())
		return
	}
	var exhausted []uint64
	if len(ids) > 0 {
		id, repeat, ex, err := x.tape.acquire(x.req.Context(), ids, s.cfg.OnExhausted)
		if err != nil {
			return // the client left while an earlier serve of its request was in flight
		}
		if !ex {
			i, err := x.tape.c.GetResponse(id)
			if err != nil {
				x.tape.release(id, false)
				s.fail(w, x.kind, http.StatusInternalServerError, "cassette_error", "llmproxy: "+err.Error())
				return
			}
			var settled func()
			delivered := s.serve(w, x, i, func() { settled = s.journal.begin() })
			if settled != nil {
				defer settled()
			}
			if !repeat {
				x.tape.release(id, delivered)
			}
			s.log.InfoContext(x.req.Context(), "replayed", append(x.logArgs, "interaction", id, "status", i.Response.Status, "delivered", delivered)...)
			e := x.entry(id, "", i.Response.Status)
			e.Repeat, e.Incomplete = repeat, !delivered
			s.journal.add(e)
			return
		}
		exhausted = ids
	}
	if auto {
		s.record(w, x)
		return
	}
	msg := s.explainFixtures(x, s.explainMiss(x, exhausted)) + s.pageOf(x)
	s.missed(msg)
	s.log.WarnContext(x.req.Context(), "miss", append(x.logArgs, "reason", msg)...)
	s.journal.add(x.entry(0, msg, http.StatusBadRequest))
	w.Header().Set(MissHeader, "1")
	s.fail(w, x.kind, http.StatusBadRequest, "cassette_miss", msg)
}

// serve writes a recorded response; it reports whether all of it reached
// the client. last is called once, just before the write that completes the
// response.
func (s *Server) serve(w http.ResponseWriter, x *exchange, i *cassette.Interaction, last func()) bool {
	ctx := x.req.Context()
	h := w.Header()
	for k, vs := range i.Response.Headers {
		h[k] = append([]string(nil), vs...)
	}
	if !i.Response.Streamed() {
		h.Set("Content-Length", strconv.Itoa(len(i.Response.Body)))
	}
	if !sleep(ctx, s.cfg.Latency) {
		return false
	}
	if s.cfg.Pace == PaceRecorded && !sleepUntil(ctx, x.start.Add(s.cfg.Latency+millis(i.Response.TTFBMillis))) {
		return false
	}
	if !i.Response.Streamed() || len(i.Response.Events) == 0 {
		last()
	}
	w.WriteHeader(i.Response.Status)
	rc := http.NewResponseController(w)
	if !i.Response.Streamed() {
		if _, err := w.Write(i.Response.Body); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for n, e := range i.Response.Events {
		if contextDone(ctx) {
			return false
		}
		if s.cfg.Pace == PaceRecorded && !sleepUntil(ctx, x.start.Add(s.cfg.Latency+millis(e.AtMillis))) {
			return false
		}
		if n == len(i.Response.Events)-1 {
			last()
		}
		if _, err := w.Write(e.Data); err != nil {
			return false
		}
		if err := rc.Flush(); err != nil {
			return false
		}
	}
	return true
}

// missed reports a miss to Config.OnMiss.
func (s *Server) missed(msg string) {
	if s.cfg.OnMiss != nil {
		s.cfg.OnMiss(msg)
	}
}

func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return !contextDone(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func sleepUntil(ctx context.Context, at time.Time) bool { return sleep(ctx, time.Until(at)) }

// explainMiss writes the miss message of SPEC §5: the cassette, the closest
// recorded interaction, and the first JSON paths where the request differs.
func (s *Server) explainMiss(x *exchange, exhausted []uint64) string {
	what := fmt.Sprintf("%s %s", x.req.Method, x.route.path)
	if x.route.name != DefaultUpstreamName {
		what = fmt.Sprintf("%s /%s%s", x.req.Method, x.route.name, x.route.path)
	}
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
		x.tape.name, what, best.ID, best.Request.Method, best.Request.Path)
	if x.tape.isConsumed(best.ID) {
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
	ids, err := x.tape.shape(s.matcher.Shape(x.mreq))
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
		diffs, n := s.matcher.Diff(x.mreq, requestOf(c), 3)
		// Same API kind first, then fewest differences; on a tie, one not
		// yet served is the likelier intent than one already served.
		score := 2 * n
		if c.Kind != string(x.kind) {
			score += 1_000_000
		}
		if x.tape.isConsumed(c.ID) {
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
