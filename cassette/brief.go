package cassette

import "fmt"

// WalkBrief calls fn with the interactions from id from onwards in recorded
// order, as Walk does, in their short listing form: a Summary without its
// ToolCalls and Model, which only the response's body holds (Summarize reads
// them). It reads a record's route and status alone — not its request's
// headers and body, nor its response's — and an interaction that want
// refuses (want nil: none) is not read at all, so listing the first few of a
// cassette's interactions that a test left unused costs those few. fn's
// Summary is valid only during the call. An error names the cassette and
// the interaction and wraps ErrBadRecord.
func (c *Cassette) WalkBrief(from uint64, want func(id uint64) bool, fn func(s *Summary) (bool, error)) error {
	return c.st.Range(from, false, func(id uint64, v []byte) (bool, error) {
		if want != nil && !want(id) {
			return true, nil
		}
		s, err := brief(id, v)
		if err != nil {
			return false, fmt.Errorf("cassette %s: %w", c.Path(), err)
		}
		return fn(&s)
	})
}

// brief reads a stored interaction's short listing form (see WalkBrief),
// with the id it is stored under. A format-1 record is decoded whole.
func brief(id uint64, v []byte) (Summary, error) {
	if len(v) == 0 || v[0] != recordTag {
		i, err := decode(id, v)
		if err != nil {
			return Summary{}, err
		}
		s := routeOf(i)
		s.ID = id
		return s, nil
	}
	s, err := briefRecord(v)
	if err != nil {
		return Summary{}, fmt.Errorf("interaction %d: %v: %w", id, err, ErrBadRecord)
	}
	s.ID = id
	return s, nil
}

// briefRecord reads a format-2 record's route and status: its framing, the
// start of its front and its head are checked; the request's query,
// headers and body, and the response's body and events, are not read.
func briefRecord(v []byte) (Summary, error) {
	r, err := split(v)
	if err != nil {
		return Summary{}, err
	}
	var i Interaction
	rd := reader{b: r.front}
	at := readRoute(&rd, &i)
	if rd.err != nil {
		return Summary{}, fmt.Errorf("request: %w", rd.err)
	}
	if err := setRecordedAt(&i, at); err != nil {
		return Summary{}, err
	}
	h, err := readHead(r.head)
	if err != nil {
		return Summary{}, err
	}
	i.Response.Status, i.Response.Framing = h.status, h.framing
	return routeOf(&i), nil
}
