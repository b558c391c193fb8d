package match

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
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
// differences (capped at 10000), which ranks candidates: fewer is closer.
func (m *Matcher) Diff(got, want *Request, limit int) ([]Difference, int) {
	if limit <= 0 {
		limit = 20
	}
	d := differ{limit: limit}
	if !strings.EqualFold(got.Method, want.Method) {
		d.add(Difference{Path: "method", Got: got.Method, Want: want.Method})
	}
	if got.Upstream != want.Upstream {
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
	gj, gerr := jsonBody(got)
	wj, werr := jsonBody(want)
	switch {
	case gerr != nil || werr != nil || !gj || !wj:
		if string(got.Body) != string(want.Body) {
			gs, ws := shortPair(string(got.Body), string(want.Body))
			d.add(Difference{Path: "body", Got: gs, Want: ws})
		}
	default:
		w := m.walker(got.Kind)
		d.body = got.Body
		d.kind = got.Kind
		d.m = m
		w.diff(&d, nil, gjson.ParseBytes(got.Body), gjson.ParseBytes(want.Body), w.all(), 0)
	}
	return d.out, d.count
}

type differ struct {
	out   []Difference
	count int
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

func (m *Matcher) diffQuery(d *differ, got, want string) {
	if m.canonQuery(got) == m.canonQuery(want) {
		return
	}
	gv, _ := parseQuery(got)
	wv, _ := parseQuery(want)
	names := map[string]bool{}
	for k := range gv {
		names[k] = true
	}
	for k := range wv {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		if !m.ignoreQuery[k] {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		g, w := gv[k], wv[k]
		sort.Strings(g)
		sort.Strings(w)
		if strings.Join(g, "&") != strings.Join(w, "&") {
			d.add(Difference{Path: "query." + k, Got: orAbsent(g), Want: orAbsent(w)})
		}
	}
}

func parseQuery(raw string) (map[string][]string, error) {
	out := map[string][]string{}
	req, err := http.NewRequest("GET", "http://x/?"+raw, nil)
	if err != nil {
		return out, err
	}
	for k, v := range req.URL.Query() {
		out[k] = v
	}
	return out, nil
}

func orAbsent(v []string) string {
	if len(v) == 0 {
		return "(absent)"
	}
	return short(strings.Join(v, ","))
}

func joinPath(path []string, seg string) []string {
	out := make([]string, len(path), len(path)+1)
	copy(out, path)
	return append(out, seg)
}

func renderPath(path []string) string {
	var b strings.Builder
	for i, s := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		if s == "" {
			b.WriteString(`""`) // a member with an empty name: gjson has no path for it
			continue
		}
		for j := 0; j < len(s); j++ {
			if c := s[j]; c == '.' || c == '*' || c == '?' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[j])
		}
	}
	return b.String()
}

func (w *walker) diff(d *differ, path []string, got, want gjson.Result, live []int, depth int) {
	if d.count >= maxCount {
		return
	}
	switch {
	case got.IsObject() && want.IsObject():
		gm, wm := members(got), members(want)
		keys := make([]string, 0, len(gm)+len(wm))
		for k := range gm {
			keys = append(keys, k)
		}
		for k := range wm {
			if _, ok := gm[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			next, ignored := w.advance(live, depth, k, false)
			if ignored {
				continue
			}
			gs, ws := gm[k], wm[k]
			p := joinPath(path, k)
			switch {
			case len(gs) == 0:
				d.add(Difference{Path: renderPath(p), Got: "(absent)", Want: shortJSON(ws[0])})
			case len(ws) == 0:
				d.add(Difference{Path: renderPath(p), Got: shortJSON(gs[0]), Want: "(absent)"})
			case len(gs) != len(ws):
				// A name given more than once: the canonical form keeps
				// every value, in order, so a count that differs differs.
				d.add(Difference{Path: renderPath(p), Got: shortValues(gs), Want: shortValues(ws)})
			default:
				for i := range gs {
					w.diff(d, p, gs[i], ws[i], next, depth+1)
				}
			}
		}
	case got.IsArray() && want.IsArray():
		ga, wa := got.Array(), want.Array()
		n := max(len(ga), len(wa))
		for i := 0; i < n; i++ {
			seg := strconv.Itoa(i)
			next, ignored := w.advance(live, depth, seg, true)
			if ignored {
				continue
			}
			p := joinPath(path, seg)
			switch {
			case i >= len(ga):
				d.add(Difference{Path: renderPath(p), Got: "(absent)", Want: shortJSON(wa[i])})
			case i >= len(wa):
				d.add(Difference{Path: renderPath(p), Got: shortJSON(ga[i]), Want: "(absent)"})
			default:
				w.diff(d, p, ga[i], wa[i], next, depth+1)
			}
		}
	default:
		g := w.canon(nil, got, live, depth)
		x := w.canon(nil, want, live, depth)
		if string(g) != string(x) {
			p := renderPath(path)
			if p == "" {
				p = "body"
			}
			gs, ws := shortPair(got.Raw, want.Raw)
			d.add(Difference{Path: p, Got: gs, Want: ws})
		}
	}
}

const shortLen = 60

func shortJSON(v gjson.Result) string { return short(v.Raw) }

// members is an object's values by name, in order; a name given more than
// once has them all (gjson's Map keeps only the first).
func members(v gjson.Result) map[string][]gjson.Result {
	out := map[string][]gjson.Result{}
	v.ForEach(func(k, val gjson.Result) bool {
		out[k.String()] = append(out[k.String()], val)
		return true
	})
	return out
}

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
