package cassette

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// encodeV1 is the storage form of format version 1: the interaction as one
// JSON document. Only tests write it now; decode still reads it.
func encodeV1(i *Interaction) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(i); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// recordCorpus is fastCorpus with the shapes a format-2 record must keep
// apart: a zero-length body, a stream without events, events of zero
// bytes, an NDJSON stream, a body that is not UTF-8, and a huge body.
func recordCorpus() []*Interaction {
	huge := bytes.Repeat([]byte("0123456789abcdef\"\\\n"), 300_000) // 5.7 MB, every byte escaped or not
	all := fastCorpus()
	return append(all,
		&Interaction{ID: 7, Kind: "generic", Request: Request{Method: "GET", Path: "/empty"}, Response: Response{Status: 200, Body: Body{}}},
		&Interaction{ID: 8, Kind: "openai-chat", Request: Request{Method: "POST", Path: "/v1/chat/completions", Body: Body(`{"stream":true}`)},
			Response: Response{Status: 200, Framing: "sse", Headers: http.Header{"Content-Type": {"text/event-stream"}}}},
		&Interaction{ID: 9, Kind: "ollama", Request: Request{Method: "POST", Path: "/api/chat"},
			Response: Response{Status: 200, Framing: "ndjson", Events: []Event{
				{AtMillis: 1, Data: Body("{\"done\":false}\n")}, {AtMillis: 2, Data: nil}, {AtMillis: 3, Data: Body("{\"done\":true}\n")}}}},
		&Interaction{ID: 10, Kind: "generic", Request: Request{Method: "PUT", Path: "/huge", Body: huge},
			Response: Response{Status: 200, Headers: http.Header{"Content-Type": {"text/plain"}}, Body: huge}},
		&Interaction{ID: 11, Kind: "generic", Request: Request{Method: "GET", Path: "/latin1"},
			Response: Response{Status: 200, Body: Body("caf\xe9 \xff\xfe"), Framing: "", Events: nil}},
	)
}

// describeReply is everything a Reply serves, in one comparable string.
func describeReply(r *Reply) string {
	h := http.Header{}
	r.SetHeaders(h)
	var b strings.Builder
	fmt.Fprintf(&b, "status %d ttfb %v framing %q streamed %v headers %v body %q events %d", r.Status, r.TTFBMillis, r.Framing(), r.Streamed(), h, r.Body(), r.Events())
	for k := range r.Events() {
		data, at := r.Event(k)
		fmt.Fprintf(&b, "\n%v %q", at, data)
	}
	return b.String()
}

// A format-2 record reads back as the same interaction as its format-1
// document does: the same JSON (so the same export), and a Reply that
// serves the recorded bytes.
func TestRecordRoundTrip(t *testing.T) {
	for n, in := range recordCorpus() {
		v1, err := encodeV1(in)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := encode(in)
		if err != nil {
			t.Fatalf("interaction %d: encode: %v", n, err)
		}
		if v2[0] != recordTag {
			t.Fatalf("interaction %d: record starts with %#x", n, v2[0])
		}
		want, err := decode(in.ID, v1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(in.ID, v2)
		if err != nil {
			t.Fatalf("interaction %d: decode: %v", n, err)
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(gj, wj) {
			t.Errorf("interaction %d: format 2 reads as\n%.600s\nformat 1 as\n%.600s", n, gj, wj)
		}
		if !bytes.Equal(got.Response.Bytes(), in.Response.Bytes()) || !bytes.Equal(got.Request.Body, in.Request.Body) {
			t.Errorf("interaction %d: bodies differ after a round trip", n)
		}
		for k := range got.Response.Events {
			if d := got.Response.Events[k].Data; cap(d) != len(d) {
				t.Errorf("interaction %d event %d: capacity %d beyond its %d bytes: an append would write into the next event", n, k, cap(d), len(d))
			}
		}
		rep, err := replyOf(v2)
		if err != nil {
			t.Fatalf("interaction %d: Reply: %v", n, err)
		}
		var served []byte
		if rep.Streamed() {
			for k := range rep.Events() {
				data, at := rep.Event(k)
				if at != in.Response.Events[k].AtMillis {
					t.Errorf("interaction %d event %d at %v, want %v", n, k, at, in.Response.Events[k].AtMillis)
				}
				served = append(served, data...)
			}
		} else {
			served = rep.Body()
		}
		if !bytes.Equal(served, in.Response.Bytes()) || rep.Status != in.Response.Status || rep.TTFBMillis != in.Response.TTFBMillis {
			t.Errorf("interaction %d: Reply serves status %d, %d bytes; recorded %d, %d bytes", n, rep.Status, len(served), in.Response.Status, len(in.Response.Bytes()))
		}
		c := rep.Clone()
		if describeReply(&c) != describeReply(&rep) {
			t.Errorf("interaction %d: Clone differs from its reply", n)
		}
	}
}

// SetHeaders sets the recorded headers as they were recorded, and the
// body's Content-Length, replacing what the map held under their names and
// leaving the rest; each value list is its own, so that appending to one
// changes no other. A stream gets no Content-Length.
func TestReplySetHeaders(t *testing.T) {
	recorded := http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b", ""}, "Empty": {},
		"Openai-Processing-Ms": {"574"}, "Set-Later": {"1", "2"}}
	v, err := encode(&Interaction{ID: 1, Kind: "generic", Request: Request{Method: "GET", Path: "/"},
		Response: Response{Status: 200, Headers: recorded, Body: Body("{}")}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replyOf(v)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"text/plain"}, "Kept": {"yes"}, "Content-Length": {"99"}}
	rep.SetHeaders(h)
	want := recorded.Clone()
	want["Kept"], want["Content-Length"] = []string{"yes"}, []string{"2"}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("headers after SetHeaders:\n%v\nwant\n%v", h, want)
	}
	appended := []string{"Content-Type", "Empty", "Openai-Processing-Ms", "Set-Later", "Content-Length"}
	for _, k := range appended {
		h[k] = append(h[k], "appended")
	}
	want = recorded.Clone()
	want["Content-Length"] = []string{"2"}
	for _, k := range appended {
		want[k] = append(want[k], "appended")
	}
	want["Kept"] = []string{"yes"}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("headers after appending to some:\n%v\nwant\n%v", h, want)
	}

	v, err = encode(&Interaction{ID: 2, Kind: "generic", Request: Request{Method: "GET", Path: "/"},
		Response: Response{Status: 200, Headers: http.Header{"Content-Type": {"text/event-stream"}}, Framing: "sse",
			Events: []Event{{AtMillis: 1, Data: Body("data: 1\n\n")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err = replyOf(v); err != nil {
		t.Fatal(err)
	}
	h = http.Header{}
	rep.SetHeaders(h)
	if want := (http.Header{"Content-Type": {"text/event-stream"}}); !reflect.DeepEqual(h, want) {
		t.Errorf("headers of a stream: %v, want %v", h, want)
	}
}

// Without the huge body (which dominates both), a format-2 record is
// smaller than the format-1 document of the same interaction.
func TestRecordIsSmaller(t *testing.T) {
	var n1, n2 int
	for _, in := range fastCorpus() {
		v1, _ := encodeV1(in)
		v2, _ := encode(in)
		n1, n2 = n1+len(v1), n2+len(v2)
	}
	if n2 >= n1 {
		t.Errorf("format 2 takes %d bytes, format 1 %d", n2, n1)
	}
}

// rebuild assembles a record from sections, with the lengths given
// (nil: their true lengths).
func rebuild(lens []uint64, secs ...[]byte) []byte {
	v := []byte{recordTag}
	for k, s := range secs {
		l := uint64(len(s))
		if lens != nil {
			l = lens[k]
		}
		v = binary.AppendUvarint(v, l)
	}
	for _, s := range secs {
		v = append(v, s...)
	}
	return v
}

// streamRecord is the corpus's SSE stream of three events, its encoded
// record and that record's sections.
func streamRecord(t *testing.T) (*Interaction, []byte, record) {
	t.Helper()
	in := recordCorpus()[2]
	good, err := encode(in)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := split(good)
	if err != nil {
		t.Fatal(err)
	}
	return in, good, rec
}

// A damaged record is an error that names the interaction and what is
// wrong, and wraps ErrBadRecord; nothing panics.
func TestRecordDamage(t *testing.T) {
	_, good, rec := streamRecord(t)
	badTable := bytes.Clone(rec.table)
	binary.BigEndian.PutUint64(badTable, uint64(len(rec.events)+1))
	backwards := bytes.Clone(rec.table)
	binary.BigEndian.PutUint64(backwards[eventEntry:], 1)
	hugeLen := []uint64{uint64(len(rec.front)), uint64(len(rec.head)), math.MaxUint64, uint64(len(rec.events)), uint64(len(rec.table))}
	for _, tc := range []struct {
		name, v, want string
	}{
		{"truncated offset table", string(rebuild(nil, rec.front, rec.head, rec.body, rec.events, rec.table[:len(rec.table)-5])), "not a multiple of 16"},
		{"offset beyond the events", string(rebuild(nil, rec.front, rec.head, rec.body, rec.events, badTable)), "outside"},
		{"offsets going back", string(rebuild(nil, rec.front, rec.head, rec.body, rec.events, backwards)), "outside"},
		{"events the table does not cover", string(rebuild(nil, rec.front, rec.head, rec.body, append(bytes.Clone(rec.events), 'x'), rec.table)), "the table covers"},
		{"missing body section", string(good[:len(good)-len(rec.table)-1]), "sections of"},
		{"body length beyond the record", string(rebuild(hugeLen, rec.front, rec.head, rec.body, rec.events, rec.table)), "sections of"},
		{"no section lengths", string([]byte{recordTag}), "section lengths"},
		{"truncated head", string(rebuild(nil, rec.front, rec.head[:3], rec.body, rec.events, rec.table)), "response head"},
		{"truncated request", string(rebuild(nil, rec.front[:len(rec.front)-2], rec.head, rec.body, rec.events, rec.table)), "request"},
	} {
		_, err := decode(42, []byte(tc.v))
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "interaction 42") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: decode error %v, want ErrBadRecord naming interaction 42 and %q", tc.name, err, tc.want)
		}
	}
	// Every truncation of a good record is refused, by decode and by Reply.
	for n := 1; n < len(good); n++ {
		if _, err := decode(7, good[:n]); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("record cut to %d of %d bytes: decode error %v, want ErrBadRecord", n, len(good), err)
		}
		if _, err := replyOf(good[:n]); err == nil {
			t.Fatalf("record cut to %d of %d bytes: Reply accepted it", n, len(good))
		}
	}
}

// FuzzRecord: decode and Reply never panic on any record; what decode
// accepts encodes to a record that reads back the same.
func FuzzRecord(f *testing.F) {
	for _, in := range fastCorpus() {
		v, _ := encode(in)
		f.Add(v)
	}
	f.Add([]byte{recordTag, 0, 0, 0, 0, 0})
	f.Add([]byte{recordTag, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		if len(v) == 0 || v[0] != recordTag {
			v = append([]byte{recordTag}, v...)
		}
		rep, rerr := replyOf(v)
		if rerr == nil {
			_ = describeReply(&rep)
		}
		i, err := decode(1, v)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("decode error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("decode accepted what Reply refused: %v", rerr)
		}
		again, err := encode(i)
		if err != nil {
			return // a recorded_at that has no RFC 3339 form
		}
		j, err := decode(1, again)
		if err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
		a, _ := json.Marshal(i)
		b, _ := json.Marshal(j)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the interaction:\n%s\n%s", a, b)
		}
	})
}

// A time that is NaN or infinite is a damaged record for Reply (replay)
// as for decode (ls, export, the view), and encode refuses to write one.
func TestRecordNonFiniteTime(t *testing.T) {
	in, _, rec := streamRecord(t)
	table := bytes.Clone(rec.table)
	binary.BigEndian.PutUint64(table[eventEntry+8:], math.Float64bits(math.Inf(1)))
	bad := rebuild(nil, rec.front, rec.head, rec.body, rec.events, table)
	if _, err := decode(5, bad); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "event 1") || !strings.Contains(err.Error(), "not a finite time") {
		t.Errorf("decode of an event at +Inf: %v; want ErrBadRecord naming event 1", err)
	}
	if _, err := replyOf(bad); err == nil {
		t.Errorf("Reply accepted an event at +Inf")
	}
	nan := *in
	nan.Response.TTFBMillis = math.NaN()
	if _, err := encode(&nan); err == nil {
		t.Errorf("encode wrote a ttfb of NaN")
	}
}

// Every reader of a stored record — the whole decode and the serving Reply,
// of format 2 and of format 1 — refuses a status that is not a final HTTP
// status, naming the interaction, as import does.
func TestRecordRefusesBadStatus(t *testing.T) {
	for _, status := range []int{0, 1, 99, 100, 101, 199, 1000, math.MaxInt32, math.MinInt32, -5} {
		i := &Interaction{ID: 3, Kind: "generic", Request: Request{Method: "GET", Path: "/x"}, Response: Response{Status: status, Body: Body("{}")}}
		v2, err := encode(i)
		if err != nil {
			t.Fatal(err)
		}
		v1, err := encodeV1(i)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string][]byte{"v2": v2, "v1": v1} {
			if _, err := decode(3, v); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "interaction 3") {
				t.Errorf("%s status %d: decode: %v, want ErrBadRecord naming interaction 3", name, status, err)
			}
			if _, err := replyOf(v); err == nil {
				t.Errorf("%s status %d: replyOf served it", name, status)
			}
		}
	}
	for _, status := range []int{200, 404, 999} {
		i := &Interaction{ID: 3, Kind: "generic", Request: Request{Method: "GET", Path: "/x"}, Response: Response{Status: status}}
		v, _ := encode(i)
		if _, err := decode(3, v); err != nil {
			t.Errorf("status %d: %v", status, err)
		}
	}
}
