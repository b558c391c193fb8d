package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/wire"
)

// esMessage frames one message with string headers name, value, ….
func esMessage(t testing.TB, payload string, headers ...string) []byte {
	t.Helper()
	var hs []wire.EventStreamHeader
	for i := 0; i+1 < len(headers); i += 2 {
		hs = append(hs, wire.StringHeader(headers[i], headers[i+1]))
	}
	b, err := wire.EncodeEventStream(hs, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixCRCs recomputes both CRCs of a message edited in place.
func fixCRCs(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
	return b
}

// The AWS SDK's encoder, with a header of every type, and our decoder
// agree; so do our encoder and the SDK's decoder.
func TestEventStreamAgreesWithAWSSDK(t *testing.T) {
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	msg := eventstream.Message{Payload: []byte(`{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)}
	msg.Headers.Set("t", eventstream.BoolValue(true))
	msg.Headers.Set("f", eventstream.BoolValue(false))
	msg.Headers.Set("b", eventstream.Int8Value(-3))
	msg.Headers.Set("s", eventstream.Int16Value(300))
	msg.Headers.Set("i", eventstream.Int32Value(70000))
	msg.Headers.Set("l", eventstream.Int64Value(1<<40))
	msg.Headers.Set("y", eventstream.BytesValue([]byte{0, 1, 2}))
	msg.Headers.Set(":event-type", eventstream.StringValue("contentBlockDelta"))
	msg.Headers.Set("ts", eventstream.TimestampValue(time.UnixMilli(1733300000000)))
	msg.Headers.Set("u", eventstream.UUIDValue(uuid))
	var sdk bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&sdk, msg); err != nil {
		t.Fatal(err)
	}
	m, err := wire.DecodeEventStream(sdk.Bytes())
	if err != nil {
		t.Fatalf("our decoder refuses the SDK's message: %v", err)
	}
	if string(m.Payload) != string(msg.Payload) || len(m.Headers) != len(msg.Headers) || m.Header(":event-type") != "contentBlockDelta" {
		t.Fatalf("decoded %d headers, payload %q; want %d and %q", len(m.Headers), m.Payload, len(msg.Headers), msg.Payload)
	}
	again, err := wire.EncodeEventStream(m.Headers, m.Payload)
	if err != nil || !bytes.Equal(again, sdk.Bytes()) {
		t.Errorf("re-encoded %x (%v), want the SDK's %x", again, err, sdk.Bytes())
	}

	ours := esMessage(t, `{"role":"assistant"}`, ":event-type", "messageStart", ":message-type", "event")
	back, err := eventstream.NewDecoder().Decode(bytes.NewReader(ours), nil)
	if err != nil {
		t.Fatalf("the SDK refuses our message: %v", err)
	}
	if string(back.Payload) != `{"role":"assistant"}` || back.Headers.Get(":event-type").String() != "messageStart" {
		t.Errorf("the SDK read %q, %v", back.Payload, back.Headers)
	}
}

// Bad messages are refused with an error naming what is wrong; the
// Splitter gives every valid message before it and keeps the rest.
func TestEventStreamBadMessages(t *testing.T) {
	good := esMessage(t, `{"role":"assistant"}`, ":event-type", "messageStart")
	unknownType := esMessage(t, `{}`, ":event-type", "x")
	unknownType[12+1+len(":event-type")] = 10 // the header's type byte
	for _, tc := range []struct {
		name, want string
		msg        []byte
	}{
		{"message CRC mismatch", "message CRC", func() []byte { b := bytes.Clone(good); b[len(b)-6] ^= 1; return b }()},
		{"prelude CRC mismatch", "prelude CRC", func() []byte { b := bytes.Clone(good); b[9] ^= 0xff; return b }()},
		{"truncated message", "total length", good[:len(good)-3]},
		{"unknown header type", "unknown value type 10", fixCRCs(unknownType)},
		{"headers longer than the message", "does not fit", func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint32(b[4:], uint32(len(b)))
			return fixCRCs(b)
		}()},
		{"total under the minimum", "under the 16", fixCRCs([]byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.DecodeEventStream(tc.msg)
			if !errors.Is(err, wire.ErrEventStream) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeEventStream = %v, want ErrEventStream saying %q", err, tc.want)
			}
			body := append(bytes.Clone(good), tc.msg...)
			s := wire.NewSplitter(wire.FramingEventStream)
			evs := s.Push(body)
			evs2, rest := s.Finish()
			evs = append(evs, evs2...)
			if len(evs) != 1 || !bytes.Equal(evs[0].Raw, good) || evs[0].Name != "messageStart" {
				t.Fatalf("split into %d events, want only the good one", len(evs))
			}
			if !bytes.Equal(rest, tc.msg) {
				t.Errorf("rest is %d bytes, want the bad message's %d", len(rest), len(tc.msg))
			}
			if tc.name == "truncated message" {
				return // nothing is wrong yet: more bytes may come
			}
			if err := s.Err(); !errors.Is(err, wire.ErrEventStream) || !strings.Contains(err.Error(), "event stream message 1") {
				t.Errorf("Err() = %v, want message 1 named", err)
			}
		})
	}
}

// A message of the largest payload the SDKs allow (16 MiB) is split like
// any other; one byte more is refused from its prelude, before its bytes
// arrive.
func TestEventStream16MiBPayload(t *testing.T) {
	payload := bytes.Repeat([]byte("a"), wire.MaxEventStreamPayload)
	big := esMessage(t, string(payload), ":event-type", "chunk")
	s := wire.NewSplitter(wire.FramingEventStream)
	var evs []wire.Event
	for off := 0; off < len(big); off += 1 << 20 {
		evs = append(evs, s.Push(big[off:min(off+1<<20, len(big))])...)
	}
	if len(evs) != 1 || len(evs[0].Data) != wire.MaxEventStreamPayload || s.Err() != nil {
		t.Fatalf("split into %d events (err %v), want one of 16 MiB", len(evs), s.Err())
	}
	if _, err := wire.EncodeEventStream(nil, append(payload, 'a')); !errors.Is(err, wire.ErrEventStream) {
		t.Errorf("EncodeEventStream of 16 MiB + 1 = %v, want ErrEventStream", err)
	}
	over := make([]byte, 12)
	binary.BigEndian.PutUint32(over, uint32(16+wire.MaxEventStreamPayload+1))
	binary.BigEndian.PutUint32(over[8:], crc32.ChecksumIEEE(over[:8]))
	s = wire.NewSplitter(wire.FramingEventStream)
	if evs := s.Push(over); len(evs) != 0 || !errors.Is(s.Err(), wire.ErrEventStream) || !strings.Contains(s.Err().Error(), "over the limit") {
		t.Errorf("a prelude announcing 16 MiB + 1: %d events, Err %v; want the limit named", len(evs), s.Err())
	}
}

// Every captured Bedrock stream splits into its messages whatever the
// chunking, each Raw a whole message.
func TestEventStreamSplitAnyChunking(t *testing.T) {
	body := fake.Captured("bedrock/converse-stream-tooluse.eventstream")
	whole := wire.Split(wire.FramingEventStream, body)
	if len(whole) != 8 || whole[0].Name != "messageStart" || whole[7].Name != "metadata" {
		t.Fatalf("split into %d events", len(whole))
	}
	s := wire.NewSplitter(wire.FramingEventStream)
	var got []wire.Event
	for i := range body {
		got = append(got, s.Push(body[i:i+1])...)
	}
	if evs, rest := s.Finish(); len(evs) != 0 || len(rest) != 0 || len(got) != len(whole) {
		t.Fatalf("byte by byte: %d events and %d rest bytes, want %d and none", len(got)+len(evs), len(rest), len(whole))
	}
	for i := range got {
		if !bytes.Equal(got[i].Raw, whole[i].Raw) || got[i].Name != whole[i].Name || !bytes.Equal(got[i].Data, whole[i].Data) {
			t.Errorf("event %d differs when pushed byte by byte", i)
		}
	}
	if f := wire.DetectFraming("application/vnd.amazon.eventstream"); f != wire.FramingEventStream || f.String() != "eventstream" {
		t.Errorf("DetectFraming = %v", f)
	}
	if f, ok := wire.ParseFraming("eventstream"); !ok || f != wire.FramingEventStream {
		t.Errorf("ParseFraming(eventstream) = %v, %v", f, ok)
	}
}

// FuzzEventStream: on any bytes the Splitter neither panics nor loses a
// byte, returns only messages that decode, and a message that decodes
// encodes back to itself.
func FuzzEventStream(f *testing.F) {
	for _, name := range fake.CapturedFiles() {
		if strings.HasSuffix(name, ".eventstream") {
			f.Add(fake.Captured(name))
		}
	}
	f.Add(esMessage(f, ""))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := wire.NewSplitter(wire.FramingEventStream)
		evs := s.Push(body)
		more, rest := s.Finish()
		var joined []byte
		for _, ev := range append(evs, more...) {
			m, err := wire.DecodeEventStream(ev.Raw)
			if err != nil {
				t.Fatalf("the Splitter returned a message that does not decode: %v", err)
			}
			again, err := wire.EncodeEventStream(m.Headers, m.Payload)
			if err != nil || !bytes.Equal(again, ev.Raw) {
				t.Fatalf("a decoded message encodes to %x (%v), want %x", again, err, ev.Raw)
			}
			joined = append(joined, ev.Raw...)
		}
		if !bytes.Equal(append(joined, rest...), body) {
			t.Fatalf("events and rest do not add up to the body")
		}
		if _, err := wire.DecodeEventStream(body); err != nil && !errors.Is(err, wire.ErrEventStream) {
			t.Fatalf("DecodeEventStream error %v does not wrap ErrEventStream", err)
		}
	})
}
