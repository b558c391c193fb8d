package view

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

const (
	// pageSize is the number of rows of the interactions table.
	pageSize = 50
	// scanLimit and scanBytes bound the interactions, and the bytes of
	// their bodies, one filtered request reads; the table then offers to
	// continue the search from where it stopped.
	scanLimit = 5000
	scanBytes = 64 << 20
	// previewLen is the characters of the latest user text a row shows.
	previewLen = 100
	// maxSearchText bounds the conversation text a row's filter searches:
	// the answer's text first, then the turns newest first.
	maxSearchText = 16 << 10
)

// row is one interaction in the table.
type row struct {
	ID                      uint64
	Provider, Kind, Method  string
	Path                    string
	Status                  int
	Stream, Served          bool
	Tools                   []string
	TTFBMillis, TotalMillis float64
	// Model is the model the provider said answered; Age how long ago the
	// interaction was recorded, and Recorded when (RFC 3339).
	Model, Age, Recorded string
	Href                 string
	// Preview is the latest user text, on one line and shortened.
	Preview string
	text    string // what the filter searches, lower case
}

// newRow summarises an interaction for the table.
func newRow(i *cassette.Interaction, name string) row {
	r := row{
		ID: i.ID, Provider: i.Provider, Kind: i.Kind, Method: i.Request.Method, Path: cassette.ProxyPath(i.Upstream, i.Request.Path),
		Status: i.Response.Status, Stream: i.Response.Streamed(),
		TTFBMillis: i.Response.TTFBMillis, TotalMillis: i.Response.DurationMillis,
		Href: InteractionURL("", name, i.ID),
		Age:  cassette.FormatAge(time.Since(i.RecordedAt)), Recorded: i.RecordedAt.UTC().Format(time.RFC3339),
	}
	if i.Request.Query != "" {
		r.Path += "?" + i.Request.Query
	}
	conv := r.read(i)
	stream := ""
	if r.Stream {
		stream = "stream streamed"
	}
	r.text = strings.ToLower(strings.Join(append([]string{
		strconv.FormatUint(r.ID, 10), r.Provider, r.Kind, r.Model, r.Method, r.Path, strconv.Itoa(r.Status), stream, conv,
	}, r.Tools...), " "))
	return r
}

// read fills in the tool calls of the answer and the preview, and returns
// the conversation's text the filter searches: the answer's text, then
// each turn's text and tool names, newest first, at most maxSearchText
// bytes.
func (r *row) read(i *cassette.Interaction) string {
	kind := wire.Kind(i.Kind)
	var b strings.Builder
	add := func(s string) {
		if room := maxSearchText - b.Len(); room > 0 && s != "" {
			b.WriteString(s[:min(len(s), room)])
			b.WriteByte(' ')
		}
	}
	if kind == wire.KindMCP {
		r.readMCP(i, add)
		return b.String()
	}
	resp, err := wire.ParseResponse(kind, framing(i.Response.Framing), i.Response.Bytes())
	r.Model = resp.Model
	if err == nil {
		for _, c := range resp.ToolCalls {
			r.Tools = append(r.Tools, c.Name)
		}
		add(resp.Text)
	}
	if kind == wire.KindGeneric {
		return b.String()
	}
	msgs, _ := wire.Transcript(kind, i.Request.Path, i.Request.Body)
	for k := len(msgs) - 1; k >= 0; k-- {
		m := msgs[k]
		if r.Preview == "" && m.Role == "user" {
			r.Preview = shorten(strings.Join(strings.Fields(m.Text), " "), previewLen)
		}
		add(m.Text)
		for _, c := range m.ToolCalls {
			add(c.Name)
		}
		for _, res := range m.ToolResults {
			add(res.Name)
		}
	}
	return b.String()
}

// framing maps a cassette's framing name to wire's.
func framing(name string) wire.Framing {
	f, _ := wire.ParseFraming(name)
	return f
}

// filter is the table's query: every word must appear in a row.
type filter []string

func parseFilter(q string) filter { return strings.Fields(strings.ToLower(q)) }

func (f filter) match(r *row) bool {
	for _, w := range f {
		if !strings.Contains(r.text, w) {
			return false
		}
	}
	return true
}

// tablePage is the interactions page.
type tablePage struct {
	// Cassettes lists the cassettes to pick from when the Source has
	// several and none is chosen; Picking is set then, even when it has
	// none.
	Cassettes []string
	Picking   bool
	// NoCassette is set when the Source serves scenarios and no cassette.
	NoCassette bool
	Name       string // the chosen cassette's name
	Q          string
	Count      uint64
	Rows       []row
	// Scanned is the range of ids read to fill Rows.
	FirstScanned, LastScanned uint64
	// Stopped is set when a filtered scan hit scanLimit before filling the
	// page.
	Stopped          bool
	Prev, Next, Home string
}

func (h *Handler) interactions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	name := q.Get("cassette")
	src := h.opts.Source
	names, err := src.Cassettes(ctx)
	if errors.Is(err, ErrNoCassette) {
		h.render(w, r, http.StatusOK, "interactions", &page{Title: "Interactions", Nav: "interactions", Data: tablePage{NoCassette: true}})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if names != nil && name == "" {
		h.render(w, r, http.StatusOK, "interactions", &page{Title: "Cassettes", Nav: "interactions", Data: tablePage{Cassettes: names, Picking: true}})
		return
	}
	after, errA := cursor(q.Get("after"))
	before, errB := cursor(q.Get("before"))
	if errA != nil || errB != nil {
		h.problem(w, r, http.StatusBadRequest, "llmproxy: the parameters after and before take an interaction id")
		return
	}
	p := tablePage{Name: name, Q: q.Get("q")}
	if p.Count, err = src.Last(ctx, name); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.fill(r, &p, after, before); err != nil {
		h.fail(w, r, err)
		return
	}
	title := "Interactions"
	if name != "" {
		title = name + " · Interactions"
	}
	h.render(w, r, http.StatusOK, "interactions", &page{Title: title, Nav: "interactions", Data: p})
}

// cursor reads an after/before parameter; "" is 0.
func cursor(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// fill reads one page of rows: those after the id after, or those before
// the id before (read backwards), matching the filter, at most scanLimit
// interactions read.
func (h *Handler) fill(r *http.Request, p *tablePage, after, before uint64) error {
	f := parseFilter(p.Q)
	back := before > 0
	from := after + 1
	if back {
		from = before - 1
	}
	scanned, read := 0, 0
	var more bool
	err := h.opts.Source.Walk(r.Context(), p.Name, from, back, func(i *cassette.Interaction) (bool, error) {
		if len(p.Rows) == pageSize || (len(f) > 0 && (scanned == scanLimit || read >= scanBytes)) {
			more = true
			return false, nil
		}
		scanned++
		read += len(i.Request.Body) + len(i.Response.Body)
		for _, e := range i.Response.Events {
			read += len(e.Data)
		}
		if p.FirstScanned == 0 {
			p.FirstScanned = i.ID
		}
		p.LastScanned = i.ID
		if row := newRow(i, p.Name); f.match(&row) {
			row.Served = h.opts.Source.Served(p.Name, i.ID)
			p.Rows = append(p.Rows, row)
		}
		return true, r.Context().Err()
	})
	if err != nil {
		return err
	}
	p.Stopped = more && len(p.Rows) < pageSize
	if back {
		reverse(p.Rows)
		p.FirstScanned, p.LastScanned = p.LastScanned, p.FirstScanned
	}
	link := func(key string, id uint64) string {
		v := url.Values{key: {strconv.FormatUint(id, 10)}}
		if p.Name != "" {
			v.Set("cassette", p.Name)
		}
		if p.Q != "" {
			v.Set("q", p.Q)
		}
		return Prefix + "?" + v.Encode()
	}
	// Backwards, there is more after the page (it came from there);
	// forwards, there is more before it unless it starts at the start.
	if (back && more) || (!back && after > 0 && p.FirstScanned > 0) {
		p.Prev = link("before", p.FirstScanned)
	}
	if (!back && more) || (back && p.LastScanned > 0) {
		p.Next = link("after", p.LastScanned)
	}
	if after > 0 || before > 0 {
		v := url.Values{}
		if p.Name != "" {
			v.Set("cassette", p.Name)
		}
		if p.Q != "" {
			v.Set("q", p.Q)
		}
		p.Home = Prefix
		if len(v) > 0 {
			p.Home += "?" + v.Encode()
		}
	}
	return nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
