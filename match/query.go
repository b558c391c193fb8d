package match

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/llmproxy/llmproxy/internal/query"
)

// leftOut reports whether a query parameter is never compared: a secret or
// an ignored one.
func (m *Matcher) leftOut(name string) bool {
	return query.Named(name, m.leftOutQuery)
}

// queryParams appends to ps the compared parameters of a raw query, read
// as package query reads them, in the order written; empty parameters are
// skipped.
func (m *Matcher) queryParams(ps [][2]string, raw string) [][2]string {
	for rest := raw; rest != ""; {
		var p string
		p, _, rest = query.Cut(rest)
		if p == "" {
			continue
		}
		if k, v := query.Param(p); !m.leftOut(k) {
			ps = append(ps, [2]string{k, v})
		}
	}
	return ps
}

// appendParams sorts parameters by name, then value, and appends them to b
// as a query, each part escaped.
func appendParams(b []byte, ps [][2]string) []byte {
	if len(ps) <= maxQuickQueryParams {
		for i := 1; i < len(ps); i++ { // few: an insertion sort allocates nothing
			for j := i; j > 0 && compareParams(ps[j], ps[j-1]) < 0; j-- {
				ps[j], ps[j-1] = ps[j-1], ps[j]
			}
		}
	} else {
		slices.SortFunc(ps, compareParams)
	}
	for i, p := range ps {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, url.QueryEscape(p[0])...)
		b = append(b, '=')
		b = append(b, url.QueryEscape(p[1])...)
	}
	return b
}

func compareParams(a, b [2]string) int {
	return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
}

// appendQuery appends the canonical form of a raw query to b: its compared
// parameters (see queryParams) in order. A query of at most
// maxQuickQueryParams parameters is sorted in a buffer on the stack.
func (m *Matcher) appendQuery(b []byte, raw string) []byte {
	if raw == "" {
		return b
	}
	var buf [maxQuickQueryParams][2]string
	return appendParams(b, m.queryParams(buf[:0], raw))
}

// maxQuickQueryParams bounds the queries appendQuery sorts on the stack.
const maxQuickQueryParams = 16

// canonQuery is appendQuery's form as a string.
func (m *Matcher) canonQuery(raw string) string { return string(m.appendQuery(nil, raw)) }

// diffQuery adds a difference for each compared parameter whose values
// (in any order) differ, read as the key reads them.
func (m *Matcher) diffQuery(d *differ, got, want string) {
	if m.canonQuery(got) == m.canonQuery(want) {
		return
	}
	gv, wv := groupParams(m.queryParams(nil, got)), groupParams(m.queryParams(nil, want))
	names := make([]string, 0, len(gv)+len(wv))
	for k := range gv {
		names = append(names, k)
	}
	for k := range wv {
		if _, ok := gv[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		g, w := gv[k], wv[k]
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			d.add(Difference{Path: "query." + k, Got: orAbsent(g), Want: orAbsent(w)})
		}
	}
}

// groupParams gathers parameters' values by name.
func groupParams(ps [][2]string) map[string][]string {
	out := make(map[string][]string, len(ps))
	for _, p := range ps {
		out[p[0]] = append(out[p[0]], p[1])
	}
	return out
}
