package match

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// Difference is one place where a request differs from a recording.
type Difference struct {
	// Path locates the difference: "method", "upstream", "path",
	// "query.NAME", "header.NAME", "body" for a non-JSON body, or the body's
	// JSON path in gjson syntax, e.g. "messages.3.content".
	Path string `json:"path"`
	// Where says it in conversation terms when the path is inside a turn,
	// e.g. "messages[3] (user)"; "" otherwise.
	Where string `json:"where,omitempty"`
	// Got is the request's value and Want the recording's, shortened; an
	// absent value is "(absent)".
	Got  string `json:"got"`
	Want string `json:"want"`
}

// String renders the difference for a miss message.
func (d Difference) String() string {
	where := d.Path
	if d.Where != "" {
		where = d.Path + " (" + d.Where + ")"
	}
	return fmt.Sprintf("%s: got %s, recorded %s", where, d.Got, d.Want)
}

// Diff lists where the request got differs from the recorded one, in path
// order, at most limit entries (limit <= 0 means 20), and the total count of
// differences (capped at 10000).
func (m *Matcher) Diff(got, want *Request, limit int) ([]Difference, int) {
	out, d := m.Distance(got, want, limit)
	return out, d.Count
}

// A Distance says how far a request is from a recording: the number of
// places they differ at, and the bytes of the values that differ there
// (both sides, JSON text as written).
type Distance struct {
	Count, Bytes int
}

// Closer reports whether d is closer than e: fewer differences, and
// between as many, fewer bytes differing (a number changed is closer than
// a whole array in another shape).
func (d Distance) Closer(e Distance) bool {
	if d.Count != e.Count {
		return d.Count < e.Count
	}
	return d.Bytes < e.Bytes
}

// Distance is Diff with the distance of got from want, which ranks
// candidates: see Distance.Closer.
func (m *Matcher) Distance(got, want *Request, limit int) ([]Difference, Distance) {
	if limit <= 0 {
		limit = 20
	}
	d := differ{limit: limit}
	if !strings.EqualFold(got.Method, want.Method) {
		d.add(Difference{Path: "method", Got: got.Method, Want: want.Method})
	}
	if m.upstream(got) != m.upstream(want) {
		d.add(Difference{Path: "upstream", Got: got.Upstream, Want: want.Upstream})
	}
	if got.Path != want.Path {
		d.add(Difference{Path: "path", Got: got.Path, Want: want.Path})
	}
	m.diffQuery(&d, got.Query, want.Query)
	for _, name := range m.headers {
		g, w := strings.Join(got.Header.Values(name), ", "), strings.Join(want.Header.Values(name), ", ")
		if g != w {
			d.add(Difference{Path: "header." + name, Got: short(g), Want: short(w)})
		}
	}
	gj, gerr := m.structural(got)
	wj, werr := m.structural(want)
	switch {
	case gerr != nil || werr != nil || !gj || !wj:
		if string(got.Body) != string(want.Body) {
			gs, ws := shortPair(string(got.Body), string(want.Body))
			d.add(Difference{Path: "body", Got: gs, Want: ws})
			d.bytes += len(got.Body) + len(want.Body)
		}
	default:
		d.body = got.Body
		d.kind = got.Kind
		d.m = m
		m.ignore(got.Kind).Diff(gjson.ParseBytes(got.Body), gjson.ParseBytes(want.Body), d.addValues)
	}
	return d.out, Distance{Count: d.count, Bytes: d.bytes}
}

// structural reports whether a body is compared as a JSON value, as Key
// compares it.
func (m *Matcher) structural(r *Request) (bool, error) {
	isJSON, strict, err := jsonBody(r)
	if err != nil || !isJSON || strict {
		return isJSON, err
	}
	_, structural, err := m.appendBody(nil, r)
	return structural, err
}

type differ struct {
	out   []Difference
	count int
	bytes int // of the JSON values that differ
	limit int
	m     *Matcher
	body  []byte
	kind  string
}

const maxCount = 10000

func (d *differ) add(x Difference) {
	d.count++
	if len(d.out) < d.limit {
		if x.Where == "" && d.m != nil && d.m.describe != nil && x.Path != "" && d.body != nil {
			x.Where = d.m.describe(d.kind, d.body, x.Path)
		}
		d.out = append(d.out, x)
	}
}

func orAbsent(v []string) string {
	if len(v) == 0 {
		return "(absent)"
	}
	return short(strings.Join(v, ","))
}

// addValues adds a difference inside a JSON body; it reports whether to
// look for more.
func (d *differ) addValues(v jsonvalue.Difference) bool {
	p := jsonvalue.Path(v.Path)
	if p == "" {
		p = "body"
	}
	x := Difference{Path: p}
	for _, r := range v.Got {
		d.bytes += len(r.Raw)
	}
	for _, r := range v.Want {
		d.bytes += len(r.Raw)
	}
	switch {
	case len(v.Got) == 0:
		x.Got, x.Want = "(absent)", shortJSON(v.Want[0])
	case len(v.Want) == 0:
		x.Got, x.Want = shortJSON(v.Got[0]), "(absent)"
	case len(v.Got) != len(v.Want):
		x.Got, x.Want = shortValues(v.Got), shortValues(v.Want)
	default:
		x.Got, x.Want = shortPair(v.Got[0].Raw, v.Want[0].Raw)
	}
	d.add(x)
	return d.count < maxCount
}

const shortLen = 60

func shortJSON(v gjson.Result) string { return short(v.Raw) }

// shortValues renders the values of a repeated name.
func shortValues(vs []gjson.Result) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Raw
	}
	return short(strings.Join(parts, ", ")) + fmt.Sprintf(" (%d values)", len(vs))
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= shortLen {
		return s
	}
	r := []rune(s)
	return string(r[:shortLen-1]) + "…"
}

// shortPair shortens two differing values around their first difference, so
// that two long strings that differ near the end do not look the same.
func shortPair(g, w string) (string, string) {
	g = strings.Join(strings.Fields(g), " ")
	w = strings.Join(strings.Fields(w), " ")
	gr, wr := []rune(g), []rune(w)
	if len(gr) <= shortLen && len(wr) <= shortLen {
		return g, w
	}
	i := 0
	for i < len(gr) && i < len(wr) && gr[i] == wr[i] {
		i++
	}
	start := 0
	if i > shortLen/3 {
		start = i - shortLen/3
	}
	cut := func(r []rune) string {
		s := r[min(start, len(r)):]
		prefix := ""
		if start > 0 {
			prefix = "…"
		}
		if len(s) > shortLen {
			return prefix + string(s[:shortLen-1]) + "…"
		}
		return prefix + string(s)
	}
	return cut(gr), cut(wr)
}
