package view

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
)

const (
	// logLimit is the number of entries the log page shows.
	logLimit = 200
	// keepAlive is how often an idle live stream sends a comment, so that
	// a client that left is noticed.
	keepAlive = 15 * time.Second
)

// logPage is the live log.
type logPage struct {
	Name    string
	Entries []logRow
	// Events is the address of the live stream, continuing after the
	// newest entry shown.
	Events string
	Limit  int
}

// logRow is one entry as the log shows it.
type logRow struct {
	LogEntry
	When        string
	Href        string
	ClosestHref string
	First       *match.Difference
	More        []match.Difference
	Outcome     string // served, miss or error
	// Shown is the request's path as every listing shows it.
	Shown string
}

func newLogRow(e LogEntry) logRow {
	r := logRow{LogEntry: e, When: e.Time.Local().Format("15:04:05.000"), Shown: cassette.ProxyPath(e.Upstream, e.Path)}
	if e.Interaction != 0 {
		r.Href = InteractionURL("", e.Name, e.Interaction)
	}
	if e.Closest != 0 {
		r.ClosestHref = InteractionURL("", e.Name, e.Closest)
	}
	if len(e.Differences) > 0 {
		r.First, r.More = &e.Differences[0], e.Differences[1:]
	}
	if e.Kind == string(wire.KindMCP) {
		r.ToolCalls = mcpCalls(e.Upstream, e.ToolCalls)
	}
	switch {
	case e.Miss != "":
		r.Outcome = "miss"
	case e.Status >= 400:
		r.Outcome = "error"
	default:
		r.Outcome = "served"
	}
	return r
}

// wants reports whether a log filtered to cassette name shows e.
func wants(name string, e LogEntry) bool {
	d := delta{name: e.Name, cassette: e.Cassette}
	return d.wanted(name)
}

func (h *Handler) logPage(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("cassette")
	entries, err := h.opts.Source.Log(r.Context(), 0, logLimit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := logPage{Name: name, Limit: logLimit}
	var last uint64
	for k := len(entries) - 1; k >= 0; k-- {
		last = max(last, entries[k].Seq)
		if wants(name, entries[k]) {
			p.Entries = append(p.Entries, newLogRow(entries[k]))
		}
	}
	v := url.Values{"after": {strconv.FormatUint(last, 10)}}
	if name != "" {
		v.Set("cassette", name)
	}
	p.Events = Prefix + "log/events?" + v.Encode()
	h.render(w, r, http.StatusOK, "log", &page{Title: "Live log", Nav: "log", Data: p})
}

// logEvents streams the entries added after a cursor as server-sent
// events, each an "entry" event whose data is the entry's table rows and
// whose id is its Seq, so that a reconnecting browser continues where it
// stopped (Last-Event-ID). The entries up to the hub's position are read
// once, for this stream; every later one comes rendered from the hub, which
// renders it once for all streams. It ends when the client leaves, when it
// falls too far behind (its browser then reconnects), or when Close is
// called.
func (h *Handler) logEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	after, err := cursor(q.Get("after"))
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after, err = cursor(id)
	}
	if err != nil {
		h.problem(w, r, http.StatusBadRequest, "llmproxy: after and Last-Event-ID take an entry number")
		return
	}
	select {
	case h.live <- struct{}{}:
		defer func() { <-h.live }()
	default:
		w.Header().Set("Retry-After", "5")
		h.problem(w, r, http.StatusServiceUnavailable, fmt.Sprintf("llmproxy: %d live log streams are open, the most there may be; close a tab showing the live log and reload", cap(h.live)))
		return
	}
	name := q.Get("cassette")
	sub, from := h.hub.subscribe()
	defer h.hub.unsubscribe(sub)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	if after < from {
		entries, err := h.opts.Source.Log(ctx, after, logLimit)
		if err != nil {
			return
		}
		var earlier []LogEntry
		for _, e := range entries {
			if e.Seq <= from {
				earlier = append(earlier, e)
			}
		}
		if !h.send(w, rc, name, &after, h.hub.deltas(earlier)) {
			return
		}
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case batch, ok := <-sub.ch:
			if !ok || !h.send(w, rc, name, &after, batch) {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-h.closed:
			return
		}
	}
}

// send writes the deltas after *after that a stream filtered to cassette
// name shows, moving *after past them; false when the client is gone.
func (h *Handler) send(w http.ResponseWriter, rc *http.ResponseController, name string, after *uint64, batch []delta) bool {
	wrote := false
	for k := range batch {
		d := &batch[k]
		if d.seq <= *after {
			continue
		}
		*after = d.seq
		if d.wanted(name) && len(d.event) > 0 {
			if _, err := w.Write(d.event); err != nil {
				return false
			}
			wrote = true
		}
	}
	return !wrote || rc.Flush() == nil
}

// writeEntry writes one entry as a server-sent event.
func (h *Handler) writeEntry(buf *bytes.Buffer, e LogEntry) error {
	var html bytes.Buffer
	if err := h.pages["log"].ExecuteTemplate(&html, "entry", newLogRow(e)); err != nil {
		return err
	}
	fmt.Fprintf(buf, "id: %d\nevent: entry\n", e.Seq)
	// Any of CR, LF and CRLF ends an SSE line, and recorded text may hold
	// them: each becomes a data line of its own.
	lines := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(strings.TrimRight(html.String(), "\r\n"))
	for _, line := range strings.Split(lines, "\n") {
		buf.WriteString("data: ")
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	buf.WriteByte('\n')
	return nil
}
