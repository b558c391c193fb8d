package jsonvalue

import (
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// A Difference is one place where two JSON values differ.
type Difference struct {
	// Path is where, as member names and element indexes from the root;
	// empty for the roots themselves.
	Path []string
	// Got and Want are the values at Path, none when absent. A member name
	// given more than once has all its values, in order; it differs when
	// the counts differ.
	Got, Want []gjson.Result
}

// Diff calls fn with each difference between got and want, paths of ig left
// out, in path order (members by name, elements by index), until fn returns
// false. Two values differ where their canonical forms do; got and want
// must be valid JSON no deeper than the caller's bound.
func (ig Ignore) Diff(got, want gjson.Result, fn func(Difference) bool) {
	d := differ{ig: ig, fn: fn}
	d.diff(nil, got, want, ig.all(), 0)
}

type differ struct {
	ig   Ignore
	fn   func(Difference) bool
	stop bool
}

func (d *differ) emit(path []string, got, want []gjson.Result) {
	if !d.stop && !d.fn(Difference{Path: path, Got: got, Want: want}) {
		d.stop = true
	}
}

func one(v gjson.Result) []gjson.Result { return []gjson.Result{v} }

func joinPath(path []string, seg string) []string {
	out := make([]string, len(path), len(path)+1)
	copy(out, path)
	return append(out, seg)
}

func (d *differ) diff(path []string, got, want gjson.Result, live []int, depth int) {
	if d.stop {
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
			next, ignored := d.ig.advance(live, depth, k, false)
			if ignored {
				continue
			}
			gs, ws := gm[k], wm[k]
			p := joinPath(path, k)
			if len(gs) != len(ws) {
				// Absent, or a name given more than once: the canonical
				// form keeps every value, in order, so a count that
				// differs differs.
				d.emit(p, gs, ws)
				continue
			}
			for i := range gs {
				d.diff(p, gs[i], ws[i], next, depth+1)
			}
		}
	case got.IsArray() && want.IsArray():
		ga, wa := got.Array(), want.Array()
		for i := range max(len(ga), len(wa)) {
			seg := strconv.Itoa(i)
			next, ignored := d.ig.advance(live, depth, seg, true)
			if ignored {
				continue
			}
			p := joinPath(path, seg)
			switch {
			case i >= len(ga):
				d.emit(p, nil, one(wa[i]))
			case i >= len(wa):
				d.emit(p, one(ga[i]), nil)
			default:
				d.diff(p, ga[i], wa[i], next, depth+1)
			}
		}
	default:
		var st canonState
		g, gerr := d.ig.appendCanonical(&st, nil, got, live, depth)
		st = canonState{}
		w, werr := d.ig.appendCanonical(&st, nil, want, live, depth)
		if gerr != nil || werr != nil {
			// A number out of range: compared as written.
			g, w = []byte(got.Raw), []byte(want.Raw)
		}
		if string(g) != string(w) {
			d.emit(path, one(got), one(want))
		}
	}
}

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

// Path renders path segments in gjson syntax: joined by dots, with '.',
// '*', '?' and '\' escaped, and an empty member name as "".
func Path(path []string) string {
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

// First returns the first difference between two JSON documents, and
// whether there is one. Its errors are those of Canonical.
func First(got, want []byte) (Difference, bool, error) {
	g, err := Parse(got)
	if err != nil {
		return Difference{}, false, err
	}
	w, err := Parse(want)
	if err != nil {
		return Difference{}, false, err
	}
	var first Difference
	found := false
	Ignore(nil).Diff(g, w, func(d Difference) bool {
		first, found = d, true
		return false
	})
	return first, found, nil
}
