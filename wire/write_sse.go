package wire

// The events of a stream are laid out side by side in one buffer, so that
// a server can write those that are ready at once in one write
// (Written.JoinedPrefix), and cut from it once it is whole.

// sseDataEvents cuts data-only SSE events from buf, each ending at its
// offset in ends and starting where the one before ended; the list is laid
// out in into when it holds them all.
func sseDataEvents(buf []byte, ends []int, into []Event) []Event {
	evs := eventList(into, len(ends))
	start := 0
	for i, end := range ends {
		raw := buf[start:end:end]
		evs[i] = Event{Raw: raw, Data: raw[len("data: ") : len(raw)-2 : len(raw)-2]}
		start = end
	}
	return evs
}

// sseData frames a data-only SSE event as OpenAI chat does (its
// mid-stream error event).
func sseData(doc []byte) Event {
	raw := make([]byte, 0, len(doc)+8)
	raw = append(raw, "data: "...)
	raw = append(raw, doc...)
	raw = append(raw, "\n\n"...)
	return Event{Raw: raw, Data: raw[6 : 6+len(doc) : 6+len(doc)]}
}

// sseNamed frames an SSE event with its name (the mid-stream error events
// of Responses and Anthropic).
func sseNamed(name string, doc []byte) Event {
	raw := make([]byte, 0, len(name)+len(doc)+16)
	raw = append(raw, "event: "...)
	raw = append(raw, name...)
	raw = append(raw, "\ndata: "...)
	start := len(raw)
	raw = append(raw, doc...)
	raw = append(raw, "\n\n"...)
	return Event{Raw: raw, Name: name, Data: raw[start : start+len(doc) : start+len(doc)]}
}

// eventList is a list of n events: into's memory when it has room for
// them, else a new one.
func eventList(into []Event, n int) []Event {
	if cap(into) >= n {
		return into[:n]
	}
	return make([]Event, n)
}

// mark is where an event lies in a buffer of events side by side: it
// starts at start, its data is [data, dataEnd) (data -1: it has none),
// and it ends where the next starts.
type mark struct {
	name                 string // its SSE name or event stream type, if any
	start, data, dataEnd int
}

// cutEvents cuts the events marks mark from buf, in into when it has room
// for them.
func cutEvents(buf []byte, marks []mark, into []Event) []Event {
	evs := eventList(into, len(marks))
	for i, m := range marks {
		end := len(buf)
		if i+1 < len(marks) {
			end = marks[i+1].start
		}
		evs[i] = Event{Raw: buf[m.start:end:end], Name: m.name}
		if m.data >= 0 {
			evs[i].Data = buf[m.data:m.dataEnd:m.dataEnd]
		}
	}
	return evs
}

// namedSSE lays named SSE events out side by side in one buffer.
type namedSSE struct {
	b     []byte
	marks []mark
}

// event appends the event name with doc as its data, pad spaces inserted
// before doc's last byte (as Anthropic pads its events, `{"type":"…"   }`).
func (s *namedSSE) event(name string, doc []byte, pad int) {
	m := mark{name: name, start: len(s.b)}
	s.b = append(s.b, "event: "...)
	s.b = append(s.b, name...)
	s.b = append(s.b, "\ndata: "...)
	m.data = len(s.b)
	s.b = append(s.b, doc[:len(doc)-1]...)
	for range pad {
		s.b = append(s.b, ' ')
	}
	s.b = append(s.b, doc[len(doc)-1])
	m.dataEnd = len(s.b)
	s.b = append(s.b, "\n\n"...)
	s.marks = append(s.marks, m)
}

// events cuts the events from s.b, in into when it has room for them.
func (s *namedSSE) events(into []Event) []Event { return cutEvents(s.b, s.marks, into) }
