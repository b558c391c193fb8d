package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// AWS event stream framing (application/vnd.amazon.eventstream), which
// Bedrock's ConverseStream and InvokeModelWithResponseStream answer in. A
// message is:
//
//	total length   uint32, big-endian: the whole message, these 4 bytes and the final CRC included
//	headers length uint32
//	prelude CRC    uint32: CRC-32 (IEEE) of the 8 bytes before it
//	headers        headers length bytes: each a name (uint8 length, bytes), a type (uint8) and a value
//	payload        total - headers - 16 bytes
//	message CRC    uint32: CRC-32 of every byte before it
//
// Header value types: 0 true and 1 false (no value), 2 byte, 3 int16, 4
// int32, 5 int64, 6 byte array and 7 string (uint16 length, bytes), 8
// timestamp (int64 ms), 9 UUID (16 bytes).

// ErrEventStream means bytes are not an AWS event stream message: a length
// out of bounds, a CRC that does not match, a header that does not parse.
// The wrapping error names the message and what is wrong.
var ErrEventStream = errors.New("bad event stream message")

const (
	esPrelude = 12 // total length, headers length, prelude CRC
	esMinimum = esPrelude + 4
	// MaxEventStreamPayload is the largest payload a message may carry, as
	// the AWS SDKs' decoders allow (16 MiB); a message announcing more is
	// refused before its bytes are read.
	MaxEventStreamPayload = 16 << 20
	// maxEventStreamHeaders is the largest headers section the AWS SDKs'
	// decoders allow (128 KiB).
	maxEventStreamHeaders = 128 << 10
)

// EventStreamType is the type of an event stream header's value.
type EventStreamType uint8

// The header value types.
const (
	ESTrue EventStreamType = iota
	ESFalse
	ESByte
	ESInt16
	ESInt32
	ESInt64
	ESBytes
	ESString
	ESTimestamp
	ESUUID
)

// EventStreamHeader is one header of a message. Value is the value's
// bytes as they are on the wire, without the length prefix of a string or
// byte array (nil for ESTrue and ESFalse).
type EventStreamHeader struct {
	Name  string
	Type  EventStreamType
	Value []byte
}

// EventStreamMessage is a decoded message. Its Payload and header values
// share memory with the bytes it was read from.
type EventStreamMessage struct {
	Headers []EventStreamHeader
	Payload []byte
}

// Header returns the value of the string header name ("" when absent or
// not a string): ":event-type", ":message-type", ":exception-type".
func (m EventStreamMessage) Header(name string) string {
	for _, h := range m.Headers {
		if h.Name == name && h.Type == ESString {
			return string(h.Value)
		}
	}
	return ""
}

// eventStreamLength reads the prelude at the start of b: the message's
// total length, or 0 when fewer than esPrelude bytes are there. A prelude
// whose CRC does not match or whose lengths are out of bounds is an error
// wrapping ErrEventStream.
func eventStreamLength(b []byte) (int, error) {
	if len(b) < esPrelude {
		return 0, nil
	}
	total, headers := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if got, want := binary.BigEndian.Uint32(b[8:]), crc32.ChecksumIEEE(b[:8]); got != want {
		return 0, fmt.Errorf("%w: prelude CRC %08x, want %08x", ErrEventStream, got, want)
	}
	switch {
	case total < esMinimum:
		return 0, fmt.Errorf("%w: total length %d is under the %d bytes of prelude and CRC", ErrEventStream, total, esMinimum)
	case headers > maxEventStreamHeaders:
		return 0, fmt.Errorf("%w: headers length %d over the limit of %d", ErrEventStream, headers, maxEventStreamHeaders)
	case uint64(headers)+esMinimum > uint64(total):
		return 0, fmt.Errorf("%w: headers length %d does not fit in total length %d", ErrEventStream, headers, total)
	case uint64(total)-uint64(headers)-esMinimum > MaxEventStreamPayload:
		return 0, fmt.Errorf("%w: payload of %d bytes over the limit of %d", ErrEventStream, uint64(total)-uint64(headers)-esMinimum, MaxEventStreamPayload)
	}
	return int(total), nil
}

// DecodeEventStream reads the one message that is all of b: prelude,
// headers, payload and both CRCs checked. A message that breaks the format
// (a length, a CRC, a header of an unknown type or cut short) is an error
// wrapping ErrEventStream that says which.
func DecodeEventStream(b []byte) (EventStreamMessage, error) {
	var m EventStreamMessage
	if len(b) < esMinimum {
		return m, fmt.Errorf("%w: %d bytes, under the %d of an empty message", ErrEventStream, len(b), esMinimum)
	}
	total, err := eventStreamLength(b)
	if err != nil {
		return m, err
	}
	if total != len(b) {
		return m, fmt.Errorf("%w: total length %d, but the message has %d bytes", ErrEventStream, total, len(b))
	}
	if got, want := binary.BigEndian.Uint32(b[total-4:]), crc32.ChecksumIEEE(b[:total-4]); got != want {
		return m, fmt.Errorf("%w: message CRC %08x, want %08x", ErrEventStream, got, want)
	}
	hlen := int(binary.BigEndian.Uint32(b[4:]))
	if m.Headers, err = decodeESHeaders(b[esPrelude : esPrelude+hlen]); err != nil {
		return m, err
	}
	m.Payload = b[esPrelude+hlen : total-4]
	return m, nil
}

// esFixed is the value length of the fixed-size header types.
var esFixed = [...]int{ESTrue: 0, ESFalse: 0, ESByte: 1, ESInt16: 2, ESInt32: 4, ESInt64: 8, ESTimestamp: 8, ESUUID: 16}

func decodeESHeaders(b []byte) ([]EventStreamHeader, error) {
	var hs []EventStreamHeader
	for off := 0; off < len(b); {
		n := int(b[off])
		if n == 0 || off+1+n+1 > len(b) {
			return nil, fmt.Errorf("%w: header %d: name cut short or empty", ErrEventStream, len(hs))
		}
		h := EventStreamHeader{Name: string(b[off+1 : off+1+n]), Type: EventStreamType(b[off+1+n])}
		off += 1 + n + 1
		var size int
		switch h.Type {
		case ESBytes, ESString:
			if off+2 > len(b) {
				return nil, fmt.Errorf("%w: header %q: value length cut short", ErrEventStream, h.Name)
			}
			size = int(binary.BigEndian.Uint16(b[off:]))
			off += 2
		case ESTrue, ESFalse, ESByte, ESInt16, ESInt32, ESInt64, ESTimestamp, ESUUID:
			size = esFixed[h.Type]
		default:
			return nil, fmt.Errorf("%w: header %q: unknown value type %d", ErrEventStream, h.Name, h.Type)
		}
		if off+size > len(b) {
			return nil, fmt.Errorf("%w: header %q: value cut short", ErrEventStream, h.Name)
		}
		if size > 0 {
			h.Value = b[off : off+size]
		}
		off += size
		hs = append(hs, h)
	}
	return hs, nil
}

// EncodeEventStream writes a message: its headers in order, then payload,
// with both lengths and CRCs computed. A header name over 255 bytes, a
// string or byte array value over 65535, a fixed-size value of the wrong
// size, an unknown type or a payload over MaxEventStreamPayload is an error
// wrapping ErrEventStream.
func EncodeEventStream(headers []EventStreamHeader, payload []byte) ([]byte, error) {
	hlen := 0
	for _, h := range headers {
		switch {
		case len(h.Name) == 0 || len(h.Name) > 255:
			return nil, fmt.Errorf("%w: header name %q: length must be 1 to 255", ErrEventStream, h.Name)
		case h.Type == ESBytes || h.Type == ESString:
			if len(h.Value) > 0xffff {
				return nil, fmt.Errorf("%w: header %q: value over 65535 bytes", ErrEventStream, h.Name)
			}
			hlen += 2 + len(h.Value)
		case int(h.Type) >= len(esFixed):
			return nil, fmt.Errorf("%w: header %q: unknown value type %d", ErrEventStream, h.Name, h.Type)
		case len(h.Value) != esFixed[h.Type]:
			return nil, fmt.Errorf("%w: header %q: %d value bytes for type %d", ErrEventStream, h.Name, len(h.Value), h.Type)
		default:
			hlen += len(h.Value)
		}
		hlen += 2 + len(h.Name)
	}
	if len(payload) > MaxEventStreamPayload || hlen > maxEventStreamHeaders {
		return nil, fmt.Errorf("%w: %d payload bytes and %d header bytes, over the limits", ErrEventStream, len(payload), hlen)
	}
	total := esMinimum + hlen + len(payload)
	b := make([]byte, 0, total)
	b = binary.BigEndian.AppendUint32(b, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(hlen))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	for _, h := range headers {
		b = append(b, byte(len(h.Name)))
		b = append(b, h.Name...)
		b = append(b, byte(h.Type))
		if h.Type == ESBytes || h.Type == ESString {
			b = binary.BigEndian.AppendUint16(b, uint16(len(h.Value)))
		}
		b = append(b, h.Value...)
	}
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// appendEventFrame appends to dst the message EncodeEventStream makes of
// payload with the headers of a Bedrock stream event of type typ
// (:event-type typ, :content-type application/json, :message-type
// event), and returns it with the offset of the payload in it. typ must be
// short and payload within MaxEventStreamPayload, as an answer's event is.
func appendEventFrame(dst []byte, typ string, payload []byte) (out []byte, data int) {
	headers := [...][2]string{{":event-type", typ}, {":content-type", "application/json"}, {":message-type", "event"}}
	hlen := 0
	for _, h := range headers {
		hlen += 1 + len(h[0]) + 1 + 2 + len(h[1])
	}
	start := len(dst)
	total := esMinimum + hlen + len(payload)
	b := binary.BigEndian.AppendUint32(dst, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(hlen))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
	for _, h := range headers {
		b = append(b, byte(len(h[0])))
		b = append(b, h[0]...)
		b = append(b, byte(ESString))
		b = binary.BigEndian.AppendUint16(b, uint16(len(h[1])))
		b = append(b, h[1]...)
	}
	data = len(b)
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:])), data
}

// StringHeader is a string header.
func StringHeader(name, value string) EventStreamHeader {
	return EventStreamHeader{Name: name, Type: ESString, Value: []byte(value)}
}

// ReframeEventStream returns the message in raw with its payload passed
// through edit: raw itself when edit returns the payload unchanged, else
// the message encoded anew with its lengths and CRCs. A raw message that
// does not decode is returned as it is, with the error.
func ReframeEventStream(raw []byte, edit func([]byte) []byte) ([]byte, error) {
	m, err := DecodeEventStream(raw)
	if err != nil {
		return raw, err
	}
	p := edit(m.Payload)
	if len(p) == len(m.Payload) && string(p) == string(m.Payload) {
		return raw, nil
	}
	return EncodeEventStream(m.Headers, p)
}
