package wire

import "bytes"

// Malformed returns an event of framing f (or, with FramingNone, a whole
// body) with its JSON cut short, as a broken provider or network leaves
// it, for a client's parser to meet: an SSE event keeps its fields and the
// blank line that ends it, but its first data line stops half-way; an
// NDJSON line stops half-way and keeps its newline; an AWS event stream
// message keeps valid lengths and CRCs round a payload cut in half; a body
// stops half-way. The result is always shorter than raw (an SSE event
// without data gains a data line "{"); raw is not changed.
func Malformed(f Framing, raw []byte) []byte {
	switch f {
	case FramingSSE:
		return malformedSSE(raw)
	case FramingNDJSON:
		line := bytes.TrimRight(raw, "\r\n")
		out := append([]byte{}, line[:len(line)/2]...)
		return append(out, '\n')
	case FramingEventStream:
		out, err := ReframeEventStream(raw, func(p []byte) []byte { return p[:len(p)/2] })
		if err != nil {
			return raw[:len(raw)/2]
		}
		return out
	}
	return append([]byte{}, raw[:len(raw)/2]...)
}

// malformedSSE cuts the first data line of an SSE event in half.
func malformedSSE(raw []byte) []byte {
	out := make([]byte, 0, len(raw)+8)
	rest := raw
	cut := false
	for len(rest) > 0 {
		end := bytes.IndexByte(rest, '\n') + 1
		if end == 0 {
			end = len(rest)
		}
		line := rest[:end]
		rest = rest[end:]
		body := bytes.TrimRight(line, "\r\n")
		if !cut && bytes.HasPrefix(body, []byte("data:")) {
			value := bytes.TrimPrefix(body[len("data:"):], []byte(" "))
			head := body[:len(body)-len(value)]
			out = append(append(out, head...), value[:len(value)/2]...)
			out = append(out, line[len(body):]...)
			cut = true
			continue
		}
		if !cut && len(body) == 0 {
			out = append(out, "data: {\n"...) // an event without data gets a broken one
			cut = true
		}
		out = append(out, line...)
	}
	return out
}
