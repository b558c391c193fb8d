package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/llmproxy/llmproxy/presets"
)

// resolve follows aliases and counts nodes, so that a file cannot expand
// without bound. It returns nil past the bound.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.nodes++
	if d.nodes == maxNodes+1 {
		d.errorAt(n, loc{}, "the file expands to more than %d YAML nodes (aliases included)", maxNodes)
	}
	if d.nodes > maxNodes {
		return nil
	}
	return n
}

// entry is one key of a mapping.
type entry struct {
	key   *yaml.Node
	value *yaml.Node
}

// mapping reads a mapping whose keys are among allowed, reporting unknown
// and repeated keys. It returns nil (after reporting) when n is not a
// mapping.
func (d *decoder) mapping(n *yaml.Node, l loc, what string, allowed ...string) map[string]entry {
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorAt(n, l, "%s is a mapping, not %s", what, describe(n))
		return nil
	}
	out := make(map[string]entry, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			return out
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.errorAt(k, l, "a key of %s is a string, not %s", what, describe(k))
			continue
		}
		kl := l.key(k.Value)
		if _, dup := out[k.Value]; dup {
			d.errorAt(k, kl, "the key %q appears twice", k.Value)
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			at := kl
			at.tail = l.tail // named by the mapping it is in
			if hint := misplaced[what][k.Value]; hint != "" {
				d.errorAt(k, at, "unknown key %q (%s)", k.Value, hint)
			} else if near := nearest(k.Value, allowed); near != "" {
				d.errorAt(k, at, "unknown key %q (did you mean %q?)", k.Value, near)
			} else {
				d.errorAt(k, at, "unknown key %q (%s has: %s)", k.Value, what, strings.Join(allowed, ", "))
			}
			continue
		}
		out[k.Value] = entry{k, v}
	}
	return out
}

// misplaced says, for keys that belong one level down, where they go: by
// the mapping's description, then the key.
var misplaced = map[string]map[string]string{
	"respond": {
		"template": "a text generator goes under text: text: {template: …}",
		"echo":     "a text generator goes under text: text: {echo: true}",
		"summary":  "a text generator goes under text: text: {summary: …}",
		"generate": "json: {generate: true} makes a value from the request's schema",
	},
}

// nearest returns the allowed key within two edits of key, if one is.
func nearest(key string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if dist := editDistance(key, a, bestDist); dist < bestDist {
			best, bestDist = a, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// describe names a node's kind for an error.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", shorten(n.Value, 40))
		case "!!null":
			return "null"
		}
		return shorten(n.Value, 40)
	}
	return "an empty document"
}

func (d *decoder) str(e entry, l loc) (string, bool) {
	n := d.resolve(e.value)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = " (quote it)"
		}
		d.errorAt(n, l, "a string, not %s%s", describe(n), hint)
		return "", false
	}
	return n.Value, true
}

func (d *decoder) boolean(e entry, l loc) bool {
	n := d.resolve(e.value)
	if n == nil {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.errorAt(n, l, "true or false, not %s", describe(n))
		return false
	}
	return n.Value == "true"
}

// integer reads an integer of at least min.
func (d *decoder) integer(e entry, l loc, min int) (int, bool) {
	n := d.resolve(e.value)
	if n == nil {
		return 0, false
	}
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v > math.MaxInt32 {
		d.errorAt(n, l, "a whole number up to %d, not %s", math.MaxInt32, describe(n))
		return 0, false
	}
	if v < int64(min) {
		d.errorAt(n, l, "must be >= %d, got %d", min, v)
		return 0, false
	}
	return int(v), true
}

// durationPattern is a Go duration without a sign, as the schema says it.
var durationPattern = regexp.MustCompile(`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`)

func (d *decoder) duration(e entry, l loc) time.Duration {
	if n := d.resolve(e.value); n != nil && n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		// A bare number: quoting it would only meet the next error.
		d.errorAt(n, l, "a duration such as 250ms, 2s or 1m30s, not the number %s (give its unit: %ss)", shorten(n.Value, 20), shorten(n.Value, 20))
		return 0
	}
	s, ok := d.str(e, l)
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil || !durationPattern.MatchString(s) {
		d.errorAt(e.value, l, "%q is not a duration such as 250ms, 2s or 1m30s", s)
		return 0
	}
	return v
}

// value reads any YAML value as canonical JSON (see presets.Canonical).
func (d *decoder) value(e entry, l loc) json.RawMessage {
	w := jsonWriter{d: d, base: l}
	if !w.write(e.value, 0) {
		return nil
	}
	canon, err := presets.Canonical(w.b.Bytes())
	if err != nil {
		d.errorAt(e.value, l, "not a JSON value: %v", err)
		return nil
	}
	return canon
}

// jsonWriter writes a YAML value as JSON. It keeps the path to the element
// it is at, and makes it a loc only for an error.
type jsonWriter struct {
	d    *decoder
	base loc
	b    bytes.Buffer
	path []any // keys (string) and indexes (int) below base
}

func (w *jsonWriter) at() loc {
	l := w.base
	for _, p := range w.path {
		if k, ok := p.(string); ok {
			l = l.key(k)
		} else {
			l = l.index(p.(int))
		}
	}
	return l
}

func (w *jsonWriter) write(n *yaml.Node, depth int) bool {
	n = w.d.resolve(n)
	if n == nil {
		return false
	}
	if depth > maxDepth {
		w.d.errorAt(n, w.at(), "nested deeper than %d", maxDepth)
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := w.d.resolve(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				w.d.errorAt(n, w.at(), "a JSON object's keys are strings")
				return false
			}
			if i > 0 {
				w.b.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			w.b.Write(key)
			w.b.WriteByte(':')
			w.path = append(w.path, k.Value)
			ok := w.write(n.Content[i+1], depth+1)
			w.path = w.path[:len(w.path)-1]
			if !ok {
				return false
			}
		}
		w.b.WriteByte('}')
	case yaml.SequenceNode:
		w.b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.path = append(w.path, i)
			ok := w.write(c, depth+1)
			w.path = w.path[:len(w.path)-1]
			if !ok {
				return false
			}
		}
		w.b.WriteByte(']')
	case yaml.ScalarNode:
		return w.scalar(n)
	default:
		w.d.errorAt(n, w.at(), "not a JSON value")
		return false
	}
	return true
}

func (w *jsonWriter) scalar(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!null":
		w.b.WriteString("null")
	case "!!bool":
		w.b.WriteString(n.Value)
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			w.b.WriteString(n.Value) // a JSON number: kept as written
			return true
		}
		var v any
		out, err := []byte(nil), n.Decode(&v)
		if err == nil {
			out, err = json.Marshal(v)
		}
		if err != nil {
			w.d.errorAt(n, w.at(), "%s is not a number JSON can hold", n.Value)
			return false
		}
		w.b.Write(out)
	default:
		out, _ := json.Marshal(n.Value)
		w.b.Write(out)
	}
	return true
}
