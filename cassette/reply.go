package cassette

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"

	"github.com/llmproxy/llmproxy/store"
)

// A Reader reads a cassette inside one read transaction (see Cassette.Read).
type Reader struct {
	tx   *store.Tx
	path string
}

// Read runs fn in one read transaction: a lookup and the read of the
// response it finds see the same cassette, and cost one transaction.
//
// The bytes of a Reply that fn gets belong to the transaction (the file's
// mapped pages, or in a read-only cassette the record read into the
// transaction's buffer): valid only until fn returns (Clone copies them
// out). While fn runs, a write of
// this process that must grow the file waits for it to return, so fn must
// be short in a cassette this process writes. In a cassette opened
// read-only no process writes, and fn may take as long as it needs.
func (c *Cassette) Read(fn func(r *Reader) error) error {
	return c.st.Read(func(tx *store.Tx) error { return fn(&Reader{tx: tx, path: c.Path()}) })
}

// Lookup returns the ids indexed under a match key, in recorded order.
func (r *Reader) Lookup(key string) ([]uint64, error) { return r.tx.Lookup(key) }

// Reply returns the recorded response of an interaction, without decoding
// its body or events: it checks the record's framing and event table, and
// an error names the interaction and wraps ErrBadRecord (or
// store.ErrNotFound). An interaction in format 1 is decoded and re-encoded,
// so that its Reply is the same as it would be in format 2.
func (r *Reader) Reply(id uint64) (Reply, error) {
	v, err := r.tx.Get(id)
	if err != nil {
		return Reply{}, err
	}
	rep, err := replyOf(v)
	if err != nil {
		return Reply{}, fmt.Errorf("cassette %s: interaction %d: %v: %w", r.path, id, err, ErrBadRecord)
	}
	return rep, nil
}

// replyOf reads a stored record's response.
func replyOf(v []byte) (Reply, error) {
	if len(v) == 0 || v[0] != recordTag {
		i, ok := decodeFast(v, true)
		if !ok {
			var err error
			if i, err = decode(0, v); err != nil {
				return Reply{}, err
			}
		}
		head, table, events := encodeResponse(&i.Response)
		v = nil
		v = append(v, recordTag)
		for _, s := range [][]byte{nil, head, i.Response.Body, events, table} {
			v = binary.AppendUvarint(v, uint64(len(s)))
		}
		v = append(append(append(append(v, head...), i.Response.Body...), events...), table...)
	}
	rec, err := split(v)
	if err != nil {
		return Reply{}, err
	}
	h, err := readHead(rec.head)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Status: h.status, TTFBMillis: h.ttfb, framing: h.framing, headers: h.headers, rec: rec}, nil
}

// A Reply is a recorded response as stored, for serving: the status and
// time to first byte, with the headers, body and events read on demand from
// the stored bytes.
type Reply struct {
	Status     int
	TTFBMillis float64
	framing    string
	headers    []byte // the encoded headers, checked
	rec        record
}

// Streamed reports whether the response was recorded event by event; its
// bytes are then the events, and Body is empty.
func (r *Reply) Streamed() bool { return r.framing != "" }

// Framing is the stored framing name, "" for a response not streamed.
func (r *Reply) Framing() string { return r.framing }

// SetHeaders sets each recorded header in h under its canonical name,
// replacing what h holds under that name, and, for a response not
// streamed, Content-Length, the length of its body. Headers that are never
// recorded (hop-by-hop, framing, Set-Cookie; see ResponseHeaders) are
// skipped in any spelling, should a crafted or old cassette hold one. It
// costs two allocations however many headers there are: the names and
// values are parts of one string, the value lists parts of one slice.
func (r *Reply) SetHeaders(h http.Header) {
	var digits [20]byte
	var length []byte // Content-Length's value, nil for a stream
	if !r.Streamed() {
		length = strconv.AppendInt(digits[:0], int64(len(r.rec.body)), 10)
	}
	all := string(length) + string(r.headers) // strOf reads the headers from its end
	rd := reader{b: r.headers}
	n, values := rd.count(), 0
	for range n {
		rd.bytes()
		for range rd.count() {
			rd.bytes()
			values++
		}
	}
	vs := make([]string, values, values+1)
	rd = reader{b: r.headers}
	for range rd.count() {
		k := http.CanonicalHeaderKey(rd.strOf(all)) // no allocation when it is canonical, as recorded
		m := rd.count()
		for j := range m {
			vs[j] = rd.strOf(all)
		}
		if !neverServed(k) {
			h[k] = vs[:m:m]
		}
		vs = vs[m:]
	}
	if length != nil {
		h["Content-Length"] = append(vs, all[:len(length)])[:1:1]
	}
}

// Body is the response body as stored.
func (r *Reply) Body() []byte { return r.rec.body }

// Events is the number of stream events.
func (r *Reply) Events() int { return len(r.rec.table) / eventEntry }

// Event returns stream event k (0 <= k < Events): its bytes, and its
// arrival time in milliseconds from the start of the request.
func (r *Reply) Event(k int) (data []byte, atMillis float64) { return r.rec.event(k) }

// Size is the number of bytes a Clone of the reply holds.
func (r *Reply) Size() int {
	return len(r.headers) + len(r.rec.body) + len(r.rec.events) + len(r.rec.table)
}

// Clone returns a copy of the reply that holds no byte of the cassette file,
// for use after the transaction that read it.
func (r *Reply) Clone() Reply {
	buf := make([]byte, 0, r.Size())
	part := func(b []byte) []byte {
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	c := *r
	c.headers = part(r.headers)
	c.rec = record{body: part(r.rec.body), events: part(r.rec.events), table: part(r.rec.table)}
	return c
}
