package view

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

const (
	// timelineWidth and timelineHeight are the SVG's user units.
	timelineWidth, timelineHeight = 800.0, 70.0
	// timelinePad is the margin left and right of the time axis.
	timelinePad = 12.0
	// maxTicks bounds the events drawn; the event table lists them all.
	maxTicks = 2000
)

// timeline draws a stream's events at their recorded offsets.
type timeline struct {
	Width, Height float64
	Ticks         []tick
	// TTFB marks the first byte; End the last.
	TTFB, End      marker
	AxisY, TickTop float64
	Omitted        int
	// Legend names the SSE event names the ticks are coloured by; empty
	// when the stream names none.
	Legend []legendItem
}

type tick struct {
	X        float64
	N        int
	AtMillis float64
	Name     string // the SSE event name
	Class    string // its colour
	Excerpt  string
}

type legendItem struct {
	Name, Class string
	Count       int
}

// colours is the number of event names that get a colour of their own; the
// rest share one.
const colours = 6

type marker struct {
	X      float64
	Millis float64
	Anchor string // the text-anchor of its label
}

// newTimeline lays out the events of a streamed response.
func newTimeline(r cassette.Response) *timeline {
	span := r.DurationMillis
	for _, e := range r.Events {
		span = max(span, e.AtMillis)
	}
	span = max(span, 0.001)
	x := func(ms float64) float64 {
		return timelinePad + max(ms, 0)/span*(timelineWidth-2*timelinePad)
	}
	t := &timeline{Width: timelineWidth, Height: timelineHeight, AxisY: 44, TickTop: 14}
	byName := map[string]int{} // index into t.Legend
	for n, e := range r.Events {
		if n == maxTicks {
			t.Omitted = len(r.Events) - n
			break
		}
		name := eventName(framing(r.Framing), e.Data)
		k, ok := byName[name]
		if !ok {
			class := "kx"
			if len(t.Legend) < colours {
				class = fmt.Sprintf("k%d", len(t.Legend))
			}
			k = len(t.Legend)
			byName[name] = k
			t.Legend = append(t.Legend, legendItem{Name: name, Class: class})
		}
		t.Legend[k].Count++
		t.Ticks = append(t.Ticks, tick{
			X: x(e.AtMillis), N: n + 1, AtMillis: e.AtMillis, Name: name, Class: t.Legend[k].Class, Excerpt: excerpt(e.Data, 120),
		})
	}
	if len(t.Legend) == 1 && t.Legend[0].Name == "" {
		t.Legend = nil
	}
	t.TTFB = marker{X: x(r.TTFBMillis), Millis: r.TTFBMillis, Anchor: "start"}
	t.End = marker{X: x(span), Millis: span, Anchor: "end"}
	if t.TTFB.X > timelineWidth/2 {
		t.TTFB.Anchor = "end"
	}
	return t
}

// eventName is the SSE "event:" name of a stored event ("" for NDJSON and
// unnamed events).
func eventName(f wire.Framing, data []byte) string {
	if f != wire.FramingSSE {
		return ""
	}
	for _, e := range wire.Split(f, data) {
		if e.Name != "" {
			return e.Name
		}
	}
	return ""
}

// excerpt is the start of b as one line of at most n characters.
func excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return fmt.Sprintf("%s…", string(r[:n]))
}
