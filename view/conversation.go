package view

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/wire"
)

// rawLimit bounds the bytes of a body (or of one stream event) shown on a
// page; `llmproxy export` shows all of it.
const rawLimit = 256 << 10

// interactionPage is one interaction as a conversation.
type interactionPage struct {
	Name    string
	I       *cassette.Interaction
	Row     row
	Request []message
	// RequestProblem says why the request body could not be read as its
	// API kind ("" when it could, or when the kind has no conversation).
	RequestProblem string
	// Response is the answer as an assistant message; nil when it could
	// not be read (ResponseProblem says why) or the kind has none.
	Response        *message
	ResponseProblem string
	// ResponseNote says why there is no Response when that is the
	// protocol's way (an MCP notification's 202).
	ResponseNote    string
	Timeline        *timeline
	RequestHeaders  []header
	ResponseHeaders []header
	RequestBody     text
	ResponseBody    text
	Events          []event
	Prev, Next      string
	List            string
}

// message is one turn of the conversation.
type message struct {
	Role      string
	Class     string // system, user, assistant, tool or other
	Path      string
	Text      string
	Reasoning string
	Other     []string
	Calls     []toolCall
	Results   []toolResult
	// Stop and Error are a response's finish reason and error.
	Stop, Error string
}

type toolCall struct {
	ID, Name, Arguments string
	Fixture             *fixtureBadge
}

type toolResult struct {
	CallID, Name, Content string
	IsError               bool
	Fixture               *fixtureBadge
}

// fixtureBadge marks tool traffic that scrub substituted with a preset
// fixture.
type fixtureBadge struct {
	Preset   string
	Function string
	Result   string
	IsError  bool
}

type header struct{ Name, Value string }

// text is a body shown as text, shortened to rawLimit bytes.
type text struct {
	Text    string
	Omitted int // bytes left out
	Binary  bool
	// Indented marks JSON shown indented rather than as its bytes.
	Indented bool
}

// event is one stream event.
type event struct {
	N            int
	AtMillis     float64
	GapMillis    float64
	Data         text
	TimelineHref string
}

func (h *Handler) interaction(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		h.problem(w, r, http.StatusNotFound, fmt.Sprintf("llmproxy: %q is not an interaction id", r.PathValue("id")))
		return
	}
	name := r.URL.Query().Get("cassette")
	if names, err := h.opts.Source.Cassettes(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	} else if names != nil && name == "" {
		h.problem(w, r, http.StatusBadRequest, "llmproxy: name the cassette with ?cassette=NAME")
		return
	}
	i, err := h.opts.Source.Interaction(r.Context(), name, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := h.conversation(r.Context(), name, i)
	h.neighbours(r.Context(), &p)
	h.render(w, r, http.StatusOK, "interaction", &page{Title: fmt.Sprintf("Interaction %d", id), Nav: "interactions", Data: p})
}

// conversation builds the page of an interaction.
func (h *Handler) conversation(ctx context.Context, name string, i *cassette.Interaction) interactionPage {
	p := interactionPage{Name: name, I: i, Row: newRow(i, name)}
	p.Row.Served = h.opts.Source.Served(name, i.ID)
	p.List = Prefix
	if name != "" {
		p.List += "?cassette=" + url.QueryEscape(name)
	}
	fixtures := fixtureLookup{ctx: ctx, src: h.opts.Source, name: name, seen: map[string]*fixtureBadge{}}
	kind := wire.Kind(i.Kind)
	if kind == wire.KindMCP {
		p.Request, p.Response, p.ResponseNote = mcpTurns(i)
	} else if kind != wire.KindGeneric {
		msgs, err := wire.Transcript(kind, i.Request.Path, i.Request.Body)
		if err != nil {
			p.RequestProblem = err.Error()
		}
		for _, m := range msgs {
			p.Request = append(p.Request, fixtures.message(m))
		}
		resp, err := wire.ParseResponse(kind, framing(i.Response.Framing), i.Response.Bytes())
		if err != nil {
			p.ResponseProblem = err.Error()
		} else {
			m := fixtures.message(wire.Message{Role: "assistant", Text: resp.Text, ToolCalls: resp.ToolCalls})
			m.Stop, m.Error = resp.Stop, resp.Error
			p.Response = &m
		}
	}
	p.RequestHeaders, p.ResponseHeaders = headers(i.Request.Headers), headers(i.Response.Headers)
	p.RequestBody, p.ResponseBody = shown(i.Request.Body), shown(i.Response.Body)
	if i.Response.Streamed() {
		prev := 0.0
		for n, e := range i.Response.Events {
			p.Events = append(p.Events, event{N: n + 1, AtMillis: e.AtMillis, GapMillis: e.AtMillis - prev, Data: shown(e.Data)})
			prev = e.AtMillis
		}
		p.Timeline = newTimeline(i.Response)
	}
	return p
}

// neighbours links the interactions before and after.
func (h *Handler) neighbours(ctx context.Context, p *interactionPage) {
	near := func(from uint64, back bool) string {
		var id uint64
		_ = h.opts.Source.Walk(ctx, p.Name, from, back, func(i *cassette.Interaction) (bool, error) {
			id = i.ID
			return false, nil
		})
		if id == 0 {
			return ""
		}
		return InteractionURL("", p.Name, id)
	}
	if p.I.ID > 1 {
		p.Prev = near(p.I.ID-1, true)
	}
	p.Next = near(p.I.ID+1, false)
}

// roleClass groups the roles of every provider into the five the page
// styles.
func roleClass(role string) string {
	switch role {
	case "system", "developer":
		return "system"
	case "user":
		return "user"
	case "assistant", "model", "function_call", "reasoning":
		return "assistant"
	case "tool", "function", "function_call_output":
		return "tool"
	}
	return "other"
}

// fixtureLookup finds the fixtures of the calls on one page, once each.
type fixtureLookup struct {
	ctx  context.Context
	src  Source
	name string
	seen map[string]*fixtureBadge
}

func (f *fixtureLookup) badge(callID string) *fixtureBadge {
	if callID == "" {
		return nil
	}
	if b, ok := f.seen[callID]; ok {
		return b
	}
	// A call without a fixture, or whose fixture does not parse, gets no
	// badge: the badge says scrub substituted it, and only a valid fixture
	// is served.
	var b *fixtureBadge
	if raw, err := f.src.Fixture(f.ctx, f.name, callID); err == nil {
		if fx, err := fixture.Parse(callID, raw); err == nil {
			b = &fixtureBadge{Preset: fx.Preset, Function: fx.Function, Result: pretty(fx.Result.Content), IsError: fx.Result.IsError}
		}
	}
	f.seen[callID] = b
	return b
}

func (f *fixtureLookup) message(m wire.Message) message {
	out := message{Role: m.Role, Class: roleClass(m.Role), Path: m.Path, Text: m.Text, Reasoning: m.Reasoning, Other: m.Other}
	for _, c := range m.ToolCalls {
		out.Calls = append(out.Calls, toolCall{ID: c.ID, Name: c.Name, Arguments: pretty(c.Arguments), Fixture: f.badge(c.ID)})
	}
	for _, r := range m.ToolResults {
		out.Results = append(out.Results, toolResult{
			CallID: r.CallID, Name: r.Name, Content: resultText(r.Content), IsError: r.IsError, Fixture: f.badge(r.CallID),
		})
	}
	return out
}

// resultText shows a tool result: a JSON string as its text (pretty when
// that text is JSON), anything else as indented JSON.
func resultText(raw []byte) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		if json.Valid([]byte(s)) && (len(s) > 0 && (s[0] == '{' || s[0] == '[')) {
			return pretty([]byte(s))
		}
		return s
	}
	return pretty(raw)
}

// pretty indents JSON text, or returns it as it is when it is not JSON.
func pretty(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// headers lists stored headers sorted by name, one line per value.
func headers(h http.Header) []header {
	var out []header
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, header{k, v})
		}
	}
	slices.SortStableFunc(out, func(a, b header) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// shown is a body as the page shows it: valid UTF-8 as text (JSON
// indented), anything else as a note, at most rawLimit bytes.
func shown(b []byte) text {
	if !utf8.Valid(b) {
		return text{Binary: true, Omitted: len(b)}
	}
	t := text{}
	if len(b) > rawLimit {
		cut := rawLimit
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		t.Omitted, b = len(b)-cut, b[:cut]
		t.Text = string(b)
		return t
	}
	t.Text = pretty(b)
	t.Indented = t.Text != string(b)
	return t
}
