package proxy

import (
	"fmt"
	"strings"

	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/wire"
)

// Fixture enforcement: after scrub, the recorded requests carry each preset
// call's result as its fixture's canonical JSON. A request whose tool result
// equals the fixture as a JSON value matches (fixtureMatch); one whose result
// differs misses, and the miss message then starts by naming the call and the
// value that differs, the sign that the application ran a real tool.

// fixtureMatch looks a request that found no recording up again with its
// tool results brought to their fixtures' canonical JSON (fixture.Normalize):
// the ids it finds, or none.
func (s *Server) fixtureMatch(x *exchange) []uint64 {
	body, changed := fixture.Normalize(x.kind, x.mreq.Path, x.mreq.Body, func(id string) ([]byte, bool) {
		raw, err := x.tape.c.Fixture(id)
		return raw, err == nil
	})
	if !changed {
		return nil
	}
	mreq := *x.mreq
	mreq.Body = body
	key, err := x.rules.matcher.Key(&mreq)
	if err != nil {
		return nil
	}
	ids, err := x.tape.index.lookup(key)
	if err != nil {
		return nil
	}
	return ids
}

// explainFixtures puts, in front of a miss message, every tool result of the
// request that differs from the fixture of its call.
func (s *Server) explainFixtures(x *exchange, msg string) string {
	diffs := fixtureDiffs(x)
	if len(diffs) == 0 {
		return msg
	}
	return fmt.Sprintf("llmproxy: cassette %s: %s (the application ran a real tool instead of using the fixture); %s",
		x.tape.name, strings.Join(diffs, "; "), strings.TrimPrefix(msg, "llmproxy: "))
}

// fixtureDiffs compares the request's tool results with the fixtures of
// their calls; results of calls without a fixture are not compared.
func fixtureDiffs(x *exchange) []string {
	req, err := wire.ParseRequest(x.kind, x.mreq.Path, x.mreq.Body)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range req.ToolResults {
		if r.CallID == "" {
			continue
		}
		raw, err := x.tape.c.Fixture(r.CallID)
		if err != nil {
			continue
		}
		f, err := fixture.Parse(r.CallID, raw)
		if err != nil {
			continue
		}
		if err := f.CheckResult(x.kind, r); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// fixtureContent is the result JSON of a stored fixture, as served by GET
// /_llmproxy/fixtures/{call_id}.
func fixtureContent(callID string, raw []byte) ([]byte, error) {
	f, err := fixture.Parse(callID, raw)
	if err != nil {
		return nil, err
	}
	return f.Result.Content, nil
}
