package match

import (
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/match"
)

// pattern is a parsed ignore path: dot-separated segments in gjson syntax,
// where "*" or "#" match any key or array index and other segments may use
// gjson's * and ? wildcards.
type pattern []string

func parsePattern(p string) (pattern, bool) {
	p = strings.TrimSpace(p)
	if p == "" {
		return nil, false
	}
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			cur.WriteByte(p[i])
		case c == '.':
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	segs = append(segs, cur.String())
	for _, s := range segs {
		if s == "" {
			return nil, false
		}
	}
	return segs, true
}

func (p pattern) matchSeg(depth int, seg string, index bool) bool {
	s := p[depth]
	if s == "*" || (s == "#" && index) {
		return true
	}
	if s == seg {
		return true
	}
	return match.IsPattern(s) && match.Match(seg, s)
}

// walker canonicalises a JSON value while skipping ignored paths.
type walker struct {
	patterns []pattern
}

// live is the set of patterns still matching at a depth; a nil live set at
// depth 0 means all patterns.
func (w *walker) advance(live []int, depth int, seg string, index bool) (next []int, ignored bool) {
	for _, pi := range live {
		p := w.patterns[pi]
		if depth >= len(p) || !p.matchSeg(depth, seg, index) {
			continue
		}
		if depth == len(p)-1 {
			return nil, true
		}
		next = append(next, pi)
	}
	return next, false
}

func (w *walker) all() []int {
	live := make([]int, len(w.patterns))
	for i := range live {
		live[i] = i
	}
	return live
}

// canon appends the canonical form of v to b.
func (w *walker) canon(b []byte, v gjson.Result, live []int, depth int) []byte {
	switch {
	case v.IsObject():
		type kv struct {
			k string
			v gjson.Result
		}
		var kvs []kv
		v.ForEach(func(k, val gjson.Result) bool {
			kvs = append(kvs, kv{k.String(), val})
			return true
		})
		sort.SliceStable(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
		b = append(b, '{')
		first := true
		for _, e := range kvs {
			next, ignored := w.advance(live, depth, e.k, false)
			if ignored {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = strconv.AppendQuote(b, e.k)
			b = append(b, ':')
			b = w.canon(b, e.v, next, depth+1)
		}
		return append(b, '}')
	case v.IsArray():
		b = append(b, '[')
		n := 0
		first := true
		v.ForEach(func(_, val gjson.Result) bool {
			next, ignored := w.advance(live, depth, strconv.Itoa(n), true)
			n++
			if ignored {
				return true
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = w.canon(b, val, next, depth+1)
			return true
		})
		return append(b, ']')
	}
	return append(b, leaf(v)...)
}

// leaf is the canonical spelling of a scalar.
func leaf(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return strconv.Quote(v.Str)
	case gjson.Number:
		return canonNumber(v.Raw)
	case gjson.True:
		return "true"
	case gjson.False:
		return "false"
	case gjson.Null:
		return "null"
	}
	return v.Raw
}

func canonNumber(raw string) string {
	if isPlainInt(raw) {
		if raw == "-0" {
			return "0"
		}
		return raw
	}
	var r big.Rat
	if _, ok := r.SetString(raw); !ok {
		return raw
	}
	return r.RatString()
}

func isPlainInt(s string) bool {
	if strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
