package cassette

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"slices"
)

// recordTag is the first byte of an interaction stored in format version 2.
// A format-1 record is a JSON object, whose first byte is '{'.
const recordTag = 0x02

// eventEntry is the size of one row of a record's event table: the end
// offset of the event in the events section (uint64) and its arrival time
// in milliseconds (float64 bits), both big-endian.
const eventEntry = 16

// A format-2 record is the interaction's tag byte, the lengths of its five
// sections as uvarints, then the sections in this order:
//
//	front  the interaction's own fields and its request: upstream,
//	       provider, kind, recorded_at (RFC 3339 text), method, path,
//	       query, request headers, request body
//	head   status (varint), framing, ttfb_ms and duration_ms (float64
//	       bits), response headers
//	body   the response body, raw
//	events the stream's events, raw and concatenated
//	table  one eventEntry per event
//
// A string is a uvarint length then its bytes; headers are a uvarint count
// of names, in sorted order, each a string then a uvarint count of values
// and the values. Serving reads head, body, events and table and never the
// front, whose request body may be the largest part.
const sections = 5

// encode is the storage form of an interaction: a format-2 record.
func encode(i *Interaction) ([]byte, error) {
	at, err := i.RecordedAt.MarshalText()
	if err != nil {
		return nil, fmt.Errorf("recorded_at: %w", err)
	}
	if err := checkTimes(&i.Response); err != nil {
		return nil, err
	}
	strs := [...]string{i.Upstream, i.Provider, i.Kind, string(at), i.Request.Method, i.Request.Path, i.Request.Query}
	// The front is the largest section (it holds the request body): it
	// is written in place, after its length, which is counted first.
	n := bytesLen(len(i.Request.Body)) + headersLen(i.Request.Headers)
	for _, s := range strs {
		n += bytesLen(len(s))
	}
	head, table, events := encodeResponse(&i.Response)
	out := make([]byte, 0, 1+sections*binary.MaxVarintLen64+n+len(head)+len(i.Response.Body)+len(events)+len(table))
	out = append(out, recordTag)
	for _, k := range []int{n, len(head), len(i.Response.Body), len(events), len(table)} {
		out = binary.AppendUvarint(out, uint64(k))
	}
	for _, s := range strs {
		out = appendString(out, s)
	}
	out = appendHeaders(out, i.Request.Headers)
	out = appendBytes(out, i.Request.Body)
	out = append(out, head...)
	out = append(out, i.Response.Body...)
	out = append(out, events...)
	return append(out, table...), nil
}

// checkTimes refuses a response whose times a reader would refuse (see
// finite).
func checkTimes(r *Response) error {
	if !finite(r.TTFBMillis) || !finite(r.DurationMillis) {
		return fmt.Errorf("ttfb_ms %v, duration_ms %v: not a finite time", r.TTFBMillis, r.DurationMillis)
	}
	for k, e := range r.Events {
		if !finite(e.AtMillis) {
			return fmt.Errorf("event %d at %v ms: not a finite time", k, e.AtMillis)
		}
	}
	return nil
}

// bytesLen is the length of a string of n bytes as appendBytes writes it.
func bytesLen(n int) int { return uvarintLen(uint64(n)) + n }

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// headersLen is the length of h as appendHeaders writes it.
func headersLen(h http.Header) int {
	n := uvarintLen(uint64(len(h)))
	for k, vs := range h {
		n += bytesLen(len(k)) + uvarintLen(uint64(len(vs)))
		for _, v := range vs {
			n += bytesLen(len(v))
		}
	}
	return n
}

// encodeResponse is a response's head, event table and events sections.
func encodeResponse(r *Response) (head, table, events []byte) {
	head = binary.AppendVarint(nil, int64(r.Status))
	head = appendString(head, r.Framing)
	head = binary.BigEndian.AppendUint64(head, math.Float64bits(r.TTFBMillis))
	head = binary.BigEndian.AppendUint64(head, math.Float64bits(r.DurationMillis))
	head = appendHeaders(head, r.Headers)
	n := 0
	for _, e := range r.Events {
		n += len(e.Data)
	}
	events = make([]byte, 0, n)
	table = make([]byte, 0, len(r.Events)*eventEntry)
	for _, e := range r.Events {
		events = append(events, e.Data...)
		table = binary.BigEndian.AppendUint64(table, uint64(len(events)))
		table = binary.BigEndian.AppendUint64(table, math.Float64bits(e.AtMillis))
	}
	return head, table, events
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeaders(b []byte, h http.Header) []byte {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(h[k])))
		for _, v := range h[k] {
			b = appendString(b, v)
		}
	}
	return b
}

// record is a format-2 record split into its sections, which alias the
// stored bytes.
type record struct {
	front, head, body, events, table []byte
}

// split checks a record's framing and splits it into its sections.
func split(v []byte) (record, error) {
	if len(v) == 0 || v[0] != recordTag {
		return record{}, fmt.Errorf("not a format-2 record")
	}
	rd := reader{b: v[1:]}
	var n [sections]uint64
	total := uint64(0)
	for k := range n {
		n[k] = rd.uvarint()
		total += min(n[k], uint64(len(v)))
	}
	if rd.err != nil {
		return record{}, fmt.Errorf("section lengths: %w", rd.err)
	}
	if total != uint64(len(rd.b)) {
		return record{}, fmt.Errorf("sections of %d bytes in a record with %d after its lengths", total, len(rd.b))
	}
	b := rd.b
	cut := func(k int) []byte { s := b[:n[k]:n[k]]; b = b[n[k]:]; return s }
	r := record{front: cut(0), head: cut(1), body: cut(2), events: cut(3), table: cut(4)}
	if len(r.table)%eventEntry != 0 {
		return record{}, fmt.Errorf("event table of %d bytes, not a multiple of %d", len(r.table), eventEntry)
	}
	end := uint64(0)
	for k := 0; k < len(r.table); k += eventEntry {
		off := binary.BigEndian.Uint64(r.table[k:])
		if off < end || off > uint64(len(r.events)) {
			return record{}, fmt.Errorf("event %d ends at offset %d, outside %d..%d", k/eventEntry, off, end, len(r.events))
		}
		end = off
		if at := math.Float64frombits(binary.BigEndian.Uint64(r.table[k+8:])); !finite(at) {
			return record{}, fmt.Errorf("event %d arrived at %v ms, not a finite time", k/eventEntry, at)
		}
	}
	if end != uint64(len(r.events)) {
		return record{}, fmt.Errorf("events of %d bytes, the table covers %d", len(r.events), end)
	}
	return r, nil
}

// event returns the data and arrival time of event k of a checked record.
func (r *record) event(k int) ([]byte, float64) {
	start := uint64(0)
	if k > 0 {
		start = binary.BigEndian.Uint64(r.table[(k-1)*eventEntry:])
	}
	end := binary.BigEndian.Uint64(r.table[k*eventEntry:])
	at := math.Float64frombits(binary.BigEndian.Uint64(r.table[k*eventEntry+8:]))
	return r.events[start:end:end], at
}

// decodeRecord reads a whole format-2 record; what it returns shares no
// bytes with v.
func decodeRecord(v []byte) (*Interaction, error) {
	r, err := split(v)
	if err != nil {
		return nil, err
	}
	i := &Interaction{}
	if err := readFront(i, r.front); err != nil {
		return nil, err
	}
	h, err := readHead(r.head)
	if err != nil {
		return nil, err
	}
	i.Response.Status, i.Response.Framing, i.Response.TTFBMillis, i.Response.DurationMillis = h.status, h.framing, h.ttfb, h.duration
	hr := reader{b: h.headers}
	i.Response.Headers = hr.headers()
	i.Response.Body = Body(clone(r.body))
	if n := len(r.table) / eventEntry; n > 0 {
		events := clone(r.events)
		i.Response.Events = make([]Event, n)
		start := uint64(0)
		for k := range n {
			row := r.table[k*eventEntry:]
			end := binary.BigEndian.Uint64(row)
			i.Response.Events[k] = Event{AtMillis: math.Float64frombits(binary.BigEndian.Uint64(row[8:])), Data: Body(events[start:end:end])}
			start = end
		}
	}
	return i, nil
}

// readFront reads a record's front section (the request) into i; what it
// sets shares no bytes with front.
func readFront(i *Interaction, front []byte) error {
	rd := reader{b: front}
	at := readRoute(&rd, i)
	i.Request.Query = rd.str()
	i.Request.Headers = rd.headers()
	i.Request.Body = Body(clone(rd.bytes()))
	if err := rd.end("request"); err != nil {
		return err
	}
	return setRecordedAt(i, at)
}

// readRoute reads the fields a front section starts with into i: upstream,
// provider, kind, method and path; it returns recorded_at's text, which
// comes between them (see setRecordedAt).
func readRoute(rd *reader, i *Interaction) (at []byte) {
	i.Upstream, i.Provider, i.Kind = rd.str(), rd.str(), rd.str()
	at = rd.bytes()
	i.Request.Method, i.Request.Path = rd.str(), rd.str()
	return at
}

// setRecordedAt sets i's recorded time from its text in a front section.
func setRecordedAt(i *Interaction, at []byte) error {
	if err := i.RecordedAt.UnmarshalText(at); err != nil {
		return fmt.Errorf("recorded_at: %w", err)
	}
	return nil
}

// clone copies b, nil when it is empty (as a JSON "" decodes in format 1
// for an omitted body).
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// FinalStatus reports whether status is one a recorded response may have:
// a final HTTP status, 200 to 999. Import and every record reader refuse
// any other (a 1xx would be served as a switch or an interim answer, and
// anything outside 100..999 cannot be written at all).
func FinalStatus[N int | int64](status N) bool { return status >= 200 && status <= 999 }

// head is a record's head section, read; headers stay encoded.
type head struct {
	status         int
	framing        string
	ttfb, duration float64
	headers        []byte
}

// readHead reads a head section and checks its headers' encoding.
func readHead(b []byte) (head, error) {
	rd := reader{b: b}
	status := rd.varint()
	framing := rd.str()
	ttfb, duration := rd.f64(), rd.f64()
	if rd.err == nil && !FinalStatus(status) {
		rd.fail("status %d is not a final HTTP status (200 to 999)", status)
	}
	h := head{status: int(status), framing: framing, ttfb: ttfb, duration: duration, headers: rd.b}
	rd.skipHeaders()
	if err := rd.end("response head"); err != nil {
		return head{}, err
	}
	return h, nil
}

// reader is a cursor over a section; after the first fault every read
// returns zero values and err says what was wrong.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	r.b = nil
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad length")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// f64 reads a time in milliseconds, which must be finite.
func (r *reader) f64() float64 {
	if len(r.b) < 8 {
		r.fail("truncated number")
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	if !finite(v) {
		r.fail("a time of %v ms, not a finite time", v)
		return 0
	}
	return v
}

// finite reports whether a time in milliseconds is a number: every time a
// record holds is (a clock never reads NaN or infinity, and JSON, so an
// export, cannot hold one); a record with one is damaged, for every reader.
func finite(ms float64) bool { return !math.IsNaN(ms) && !math.IsInf(ms, 0) }

// bytes reads a string as a slice of the section.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("string of %d bytes with %d left", n, len(r.b))
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) str() string { return string(r.bytes()) }

// strOf reads a string as a part of all, which is the section's bytes (the
// whole of them, from where the reader started) as one string.
func (r *reader) strOf(all string) string {
	b := r.bytes()
	end := len(all) - len(r.b)
	return all[end-len(b) : end]
}

// count reads a count of items that each take at least one byte, so that
// no count can ask for more than the section holds.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("count %d with %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

// headers reads encoded headers, nil when there are none.
func (r *reader) headers() http.Header {
	n := r.count()
	if n == 0 {
		return nil
	}
	h := make(http.Header, n)
	for range n {
		k := r.str()
		vs := make([]string, r.count())
		for j := range vs {
			vs[j] = r.str()
		}
		if r.err != nil {
			return nil
		}
		h[k] = vs
	}
	return h
}

// skipHeaders steps over encoded headers, checking their framing.
func (r *reader) skipHeaders() {
	for range r.count() {
		r.bytes()
		for range r.count() {
			r.bytes()
		}
	}
}

// end reports a fault, or bytes left over, in the named section.
func (r *reader) end(section string) error {
	switch {
	case r.err != nil:
		return fmt.Errorf("%s: %w", section, r.err)
	case len(r.b) > 0:
		return fmt.Errorf("%s: %d bytes left over", section, len(r.b))
	}
	return nil
}
