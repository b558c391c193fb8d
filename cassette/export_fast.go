package cassette

import (
	"encoding/json"
	"errors"

	"github.com/llmproxy/llmproxy/internal/parallel"
)

// readExportFast reads an export in one pass, as decodeFast reads a stored
// interaction, and decodes its interactions on every CPU at once: reading
// a 100 000-interaction export with encoding/json took seconds. It accepts
// only what it fully understands — the four fields spelled exactly, each
// at most once, interactions decodeFast accepts, valid JSON throughout —
// and returns ok false for anything else, which ReadExport then reads with
// encoding/json, which decides and names the place at fault. On every
// export it accepts, the result is the one encoding/json gives.
func readExportFast(data []byte) (f exportFile, ok bool) {
	d := fastDecoder{b: data}
	var elems [][]byte
	ok = d.object(true, func(key []byte) bool {
		switch string(key) {
		case "format":
			return d.string(&f.Format)
		case "meta":
			return d.exportMeta(&f.Meta)
		case "interactions":
			var ok bool
			elems, ok = d.elements()
			return ok
		case "fixtures":
			raw, ok := d.skip()
			return ok && json.Unmarshal(raw, &f.Fixtures) == nil && f.Fixtures != nil
		}
		return false
	})
	if d.ws(); !ok || d.i != len(d.b) {
		return exportFile{}, false
	}
	if elems != nil {
		if f.Interactions, ok = decodeAll(elems); !ok {
			return exportFile{}, false
		}
	}
	return f, true
}

func (d *fastDecoder) exportMeta(m *exportMeta) bool {
	return d.object(true, func(key []byte) bool {
		switch string(key) {
		case "format_version":
			return d.int(&m.FormatVersion)
		case "created":
			lit, _, ok := d.literal()
			return ok && m.Created.UnmarshalJSON(lit) == nil
		case "updated":
			lit, _, ok := d.literal()
			return ok && m.Updated.UnmarshalJSON(lit) == nil
		case "llmproxy_version":
			return d.string(&m.Version)
		}
		return false
	})
}

// elements steps over an array of objects, returning each one's bytes.
func (d *fastDecoder) elements() ([][]byte, bool) {
	if !d.next('[') {
		return nil, false
	}
	elems := [][]byte{}
	if d.next(']') {
		return elems, true
	}
	for {
		if d.ws(); d.i >= len(d.b) || d.b[d.i] != '{' {
			return nil, false
		}
		e, ok := d.skip()
		if !ok {
			return nil, false
		}
		elems = append(elems, e)
		if d.next(']') {
			return elems, true
		}
		if !d.next(',') {
			return nil, false
		}
	}
}

// skip steps over one value, returning its bytes. It follows strings and
// nesting only; whoever reads the bytes checks them.
func (d *fastDecoder) skip() ([]byte, bool) {
	d.ws()
	start, depth := d.i, 0
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '"':
			if _, ok := d.stringEnd(); !ok {
				return nil, false
			}
			if depth == 0 {
				return d.b[start:d.i], true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, false
			}
			if depth == 0 {
				d.i++
				return d.b[start:d.i], true
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return d.b[start:d.i], d.i > start
			}
		}
		d.i++
	}
	return d.b[start:d.i], depth == 0 && d.i > start
}

// decodeAll decodes interactions with decodeFast on every CPU at once; ok
// is false if it does not accept one of them.
func decodeAll(elems [][]byte) ([]*Interaction, bool) {
	out := make([]*Interaction, len(elems))
	_, err := parallel.Each(len(elems), func(n int) error {
		i, ok := decodeFast(elems[n], false)
		if !ok {
			return errNotFast
		}
		out[n] = i
		return nil
	})
	return out, err == nil
}

// errNotFast stops decodeAll at an interaction decodeFast does not take.
var errNotFast = errors.New("not read by the fast decoder")
