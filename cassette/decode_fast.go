package cassette

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// decodeFast reads an interaction in the exact form encode writes, in one
// pass, without reflection. Replay decodes the interaction of every request
// it serves, and encoding/json spent most of a replayed request's CPU on it:
// it validates the whole document first, then scans every body a second
// time to hand it to Body.UnmarshalJSON.
//
// It accepts only what it fully understands: known keys spelled exactly,
// each at most once, string bodies, no nulls. Anything else (another field,
// a base64 body, a document that is not valid JSON) makes it return ok
// false, and decode hands the document to encoding/json, which decides. On
// every document it accepts, the result is the one encoding/json gives.
//
// With skipRequestBody the request body is stepped over, not decoded, and
// left empty: serving a recorded response does not need it.
func decodeFast(v []byte, skipRequestBody bool) (i *Interaction, ok bool) {
	d := fastDecoder{b: v, skipRequestBody: skipRequestBody}
	i = &Interaction{}
	if !d.interaction(i) {
		return nil, false
	}
	d.ws()
	if d.i != len(d.b) {
		return nil, false
	}
	return i, true
}

// fastDecoder is a cursor over a document. Every method returns false as
// soon as the input is not what it expects.
type fastDecoder struct {
	b               []byte
	i               int
	skipRequestBody bool
}

func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c.
func (d *fastDecoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads {"key": value, ...}, calling field for each key with the
// cursor on its value; field must consume the value. key is only valid
// during the call. A struct's keys must be distinct (for a repeated one
// encoding/json merges or overwrites: it decides); a map's may repeat, the
// last one winning, as encoding/json has it.
func (d *fastDecoder) object(distinct bool, field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seenArr [8][]byte
	seen := seenArr[:0]
	for {
		k, ok := d.key()
		if !ok || !d.next(':') {
			return false
		}
		if distinct {
			for _, s := range seen {
				if bytes.Equal(s, k) {
					return false
				}
			}
			seen = append(seen, k)
		}
		if !field(k) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// literal reads a string literal: its quotes included, and whether its
// content is plain printable ASCII with no escape, which reads as is.
func (d *fastDecoder) literal() (lit []byte, plain, ok bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false, false
	}
	start := d.i
	plain = true
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '\\':
			plain = false
			j++
		case c == '"':
			d.i = j + 1
			return d.b[start:d.i], plain, true
		case c < 0x20 || c >= 0x7f:
			plain = false
		}
	}
	return nil, false, false
}

// key reads an object key, as a slice of the document when it can.
func (d *fastDecoder) key() ([]byte, bool) {
	lit, plain, ok := d.literal()
	if !ok {
		return nil, false
	}
	if plain {
		return lit[1 : len(lit)-1], true
	}
	return jsonvalue.Unquote(lit)
}

func (d *fastDecoder) string(dst *string) bool {
	lit, plain, ok := d.literal()
	if !ok {
		return false
	}
	if plain {
		*dst = string(lit[1 : len(lit)-1])
		return true
	}
	b, ok := jsonvalue.Unquote(lit)
	*dst = string(b)
	return ok
}

// number reads a number literal, checking JSON's grammar (strconv accepts
// more: "+1", "0x1F", "1_000", "Inf").
func (d *fastDecoder) number() ([]byte, bool) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	intStart := d.i
	if n := digits(); n == 0 || (n > 1 && d.b[intStart] == '0') {
		return nil, false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return d.b[start:d.i], true
}

func (d *fastDecoder) uint64(dst *uint64) bool {
	s, ok := d.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	*dst = n
	return err == nil
}

func (d *fastDecoder) int(dst *int) bool {
	s, ok := d.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(s), 10, 0)
	*dst = int(n)
	return err == nil
}

func (d *fastDecoder) float(dst *float64) bool {
	s, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	*dst = f
	return err == nil
}

// body reads a Body written as a string; the {"base64": …} form and null
// are left to encoding/json.
func (d *fastDecoder) body(dst *Body) bool {
	// Bodies are long: find the closing quote with IndexByte and let
	// unquote do the one byte-by-byte pass.
	start, ok := d.stringEnd()
	if !ok {
		return false
	}
	b, ok := jsonvalue.Unquote(d.b[start:d.i]) // a copy: the document may be bbolt's memory
	*dst = b
	return ok
}

// stringEnd moves past a string literal, finding its closing quote with
// IndexByte, and returns where it started.
func (d *fastDecoder) stringEnd() (start int, ok bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return 0, false
	}
	start = d.i
	for j := d.i + 1; ; {
		q := bytes.IndexByte(d.b[j:], '"')
		if q < 0 {
			return 0, false
		}
		q += j
		bs := 0
		for k := q - 1; k > start && d.b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			d.i = q + 1
			return start, true
		}
		j = q + 1
	}
}

func (d *fastDecoder) headers(dst *http.Header) bool {
	h := http.Header{}
	*dst = h
	return d.object(false, func(key []byte) bool {
		if !d.next('[') {
			return false
		}
		vs := []string{}
		if !d.next(']') {
			for {
				var v string
				if !d.string(&v) {
					return false
				}
				vs = append(vs, v)
				if d.next(']') {
					break
				}
				if !d.next(',') {
					return false
				}
			}
		}
		h[string(key)] = vs
		return true
	})
}

func (d *fastDecoder) interaction(i *Interaction) bool {
	return d.object(true, func(key []byte) bool {
		switch string(key) {
		case "id":
			return d.uint64(&i.ID)
		case "upstream":
			return d.string(&i.Upstream)
		case "provider":
			return d.string(&i.Provider)
		case "kind":
			return d.string(&i.Kind)
		case "recorded_at":
			lit, _, ok := d.literal()
			return ok && i.RecordedAt.UnmarshalJSON(lit) == nil
		case "request":
			return d.request(&i.Request)
		case "response":
			return d.response(&i.Response)
		}
		return false
	})
}

func (d *fastDecoder) request(r *Request) bool {
	return d.object(true, func(key []byte) bool {
		switch string(key) {
		case "method":
			return d.string(&r.Method)
		case "path":
			return d.string(&r.Path)
		case "query":
			return d.string(&r.Query)
		case "headers":
			return d.headers(&r.Headers)
		case "body":
			if d.skipRequestBody {
				_, ok := d.stringEnd()
				return ok
			}
			return d.body(&r.Body)
		}
		return false
	})
}

func (d *fastDecoder) response(r *Response) bool {
	return d.object(true, func(key []byte) bool {
		switch string(key) {
		case "status":
			return d.int(&r.Status)
		case "headers":
			return d.headers(&r.Headers)
		case "body":
			return d.body(&r.Body)
		case "framing":
			return d.string(&r.Framing)
		case "events":
			return d.events(&r.Events)
		case "ttfb_ms":
			return d.float(&r.TTFBMillis)
		case "duration_ms":
			return d.float(&r.DurationMillis)
		}
		return false
	})
}

func (d *fastDecoder) events(dst *[]Event) bool {
	if !d.next('[') {
		return false
	}
	evs := []Event{}
	if !d.next(']') {
		for {
			var e Event
			ok := d.object(true, func(key []byte) bool {
				switch string(key) {
				case "at_ms":
					return d.float(&e.AtMillis)
				case "data":
					return d.body(&e.Data)
				}
				return false
			})
			if !ok {
				return false
			}
			evs = append(evs, e)
			if d.next(']') {
				break
			}
			if !d.next(',') {
				return false
			}
		}
	}
	*dst = evs
	return true
}
