// Package faults reads the faults replay, auto and mock inject on demand
// (--fault, the X-Llmproxy-Fault header, a session's "faults") and decides
// which requests get them.
//
// A fault is written KIND[@OPTION=VALUE,...]: an error status (429, 500,
// 503, 529, any of 400–599), timeout, cut, stall, malformed, slow or reset,
// with options saying where (event=K), how (retry-after, after, for, ttfb,
// per-event), how often (rate, request) and whether the faulted request uses
// up its recording (consume). Parse reads one; a bad one is an error
// wrapping ErrBadSpec that names the part at fault.
//
// Which requests are faulted is a function of the seed, the fault and the
// request's place in its conversation (Plan.Pick): never of timing, nor of
// the order in which requests of other conversations arrive, so a failing
// run repeats exactly. Counter numbers the requests of each conversation.
//
// The package imports nothing of llmproxy: the proxy applies what it reads.
package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrBadSpec marks a fault that does not parse.
var ErrBadSpec = errors.New("bad fault")

// Kind is what a fault does.
type Kind string

// The kinds of fault.
const (
	// Status answers the provider's error of Fault.Status in its own shape;
	// with Event, the stream ends after event Event with the provider's
	// stream error event (Anthropic's "event: error"…).
	Status Kind = "status"
	// Timeout sends nothing for After, then closes the connection.
	Timeout Kind = "timeout"
	// Cut closes the connection after event Event of the stream (without
	// event: after the status and headers, before any byte of the body).
	Cut Kind = "cut"
	// Stall stops for For after event Event (without event: before the
	// body), then sends the rest.
	Stall Kind = "stall"
	// Malformed sends event Event with its JSON cut short (without event:
	// the first event, or half of a body that is not a stream), then the
	// rest.
	Malformed Kind = "malformed"
	// Slow waits TTFB before the status line and PerEvent before each
	// event.
	Slow Kind = "slow"
	// Reset resets the TCP connection (RST) before any answer.
	Reset Kind = "reset"
)

// Defaults of the durations a spec leaves out.
const (
	DefaultTimeout = 30 * time.Second // timeout's after
	DefaultStall   = 30 * time.Second // stall's for
)

// Fault is one parsed fault.
type Fault struct {
	Kind Kind
	// Status is the HTTP status of a Status fault.
	Status int
	// Rate is the share of requests faulted, in [0,1]; 1 unless given.
	Rate float64
	// Request, when positive, restricts the fault to the Request-th request
	// of each conversation (counted from 1).
	Request uint64
	// Event is the event (from 1) a fault applies at; 0 when not given.
	Event int
	// RetryAfter is a Status fault's Retry-After; 0 for none.
	RetryAfter time.Duration
	// After is a Timeout's silence, For a Stall's, TTFB and PerEvent a
	// Slow fault's delays.
	After, For, TTFB, PerEvent time.Duration
	// Consume makes a faulted request use up its recording (or scenario
	// step) as an answer delivered would; without it the next request gets
	// the recording, so an SDK's retry succeeds.
	Consume bool
}

// options names the options each kind takes beside rate, request and
// consume.
var options = map[Kind][]string{
	Status:    {"retry-after", "event"},
	Timeout:   {"after"},
	Cut:       {"event"},
	Stall:     {"event", "for"},
	Malformed: {"event"},
	Slow:      {"ttfb", "per-event"},
	Reset:     {},
}

// Parse reads a fault: KIND[@OPTION=VALUE,...]. The error wraps ErrBadSpec
// and names the kind, option or value at fault.
func Parse(spec string) (Fault, error) {
	bad := func(format string, a ...any) (Fault, error) {
		return Fault{}, fmt.Errorf("fault %q: %s: %w", spec, fmt.Sprintf(format, a...), ErrBadSpec)
	}
	head, opts, hasOpts := strings.Cut(strings.TrimSpace(spec), "@")
	f := Fault{Rate: 1}
	switch head = strings.ToLower(strings.TrimSpace(head)); head {
	case "":
		return bad("no kind: want an error status (429, 500, 503, 529…), timeout, cut, stall, malformed, slow or reset")
	case string(Timeout), string(Cut), string(Stall), string(Malformed), string(Slow), string(Reset):
		f.Kind = Kind(head)
	default:
		n, err := strconv.Atoi(head)
		if err != nil {
			return bad("unknown kind %q: want an error status (429, 500, 503, 529…), timeout, cut, stall, malformed, slow or reset", head)
		}
		if n < 400 || n > 599 {
			return bad("status %d is not an error status (400–599)", n)
		}
		f.Kind, f.Status = Status, n
	}
	if hasOpts && strings.TrimSpace(opts) == "" {
		return bad("nothing after @: give OPTION=VALUE,… or leave the @ out")
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(opts, ",") {
		if !hasOpts {
			break
		}
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if seen[name] {
			return bad("option %s given twice", name)
		}
		seen[name] = true
		if err := f.set(name, strings.TrimSpace(value), strings.Contains(part, "=")); err != nil {
			return bad("%v", err)
		}
	}
	return f.withDefaults(), nil
}

// set sets one option.
func (f *Fault) set(name, value string, hasValue bool) error {
	if name == "" {
		return errors.New("an empty option")
	}
	if !f.takes(name) {
		return fmt.Errorf("%s takes no option %s (it takes %s)", f.kindName(), name, strings.Join(append(options[f.Kind], "rate", "request", "consume"), ", "))
	}
	if name == "consume" {
		if hasValue && value != "true" {
			return fmt.Errorf("consume takes no value, not %q", value)
		}
		f.Consume = true
		return nil
	}
	if value == "" {
		return fmt.Errorf("option %s has no value", name)
	}
	switch name {
	case "rate":
		r, err := strconv.ParseFloat(value, 64)
		if err != nil || r < 0 || r > 1 || r != r {
			return fmt.Errorf("rate %s is not a number in [0,1]", value)
		}
		f.Rate = r
	case "request", "event":
		n, err := strconv.ParseUint(value, 10, 31)
		if err != nil || n == 0 {
			return fmt.Errorf("%s %s is not a whole number from 1", name, value)
		}
		if name == "request" {
			f.Request = n
		} else {
			f.Event = int(n)
		}
	default:
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("%s %s is not a duration (like 2s, 500ms) of zero or more", name, value)
		}
		*f.duration(name) = d
	}
	return nil
}

// takes reports whether f's kind takes the option.
func (f *Fault) takes(name string) bool {
	switch name {
	case "rate", "request", "consume":
		return true
	}
	for _, o := range options[f.Kind] {
		if o == name {
			return true
		}
	}
	return false
}

// duration is the field of a duration option.
func (f *Fault) duration(name string) *time.Duration {
	switch name {
	case "retry-after":
		return &f.RetryAfter
	case "after":
		return &f.After
	case "for":
		return &f.For
	case "ttfb":
		return &f.TTFB
	}
	return &f.PerEvent
}

// withDefaults fills in the durations a spec left out.
func (f Fault) withDefaults() Fault {
	if f.Kind == Timeout && f.After == 0 {
		f.After = DefaultTimeout
	}
	if f.Kind == Stall && f.For == 0 {
		f.For = DefaultStall
	}
	return f
}

// kindName is the kind as a spec writes it: the status for Status.
func (f *Fault) kindName() string {
	if f.Kind == Status {
		return strconv.Itoa(f.Status)
	}
	return string(f.Kind)
}

// String is the fault's canonical spec, which Parse reads back to the same
// Fault: the kind, then the options that differ from the defaults in a
// fixed order.
func (f Fault) String() string { return string(f.appendSpec(nil)) }

// appendSpec appends String's spec to b, so that Chosen can hash it from a
// buffer on its stack, allocating nothing (BenchmarkChoose).
func (f *Fault) appendSpec(b []byte) []byte {
	if f.Kind == Status {
		b = strconv.AppendInt(b, int64(f.Status), 10)
	} else {
		b = append(b, f.Kind...)
	}
	sep := byte('@')
	opt := func(name string) {
		b = append(append(b, sep), name...)
		b = append(b, '=')
		sep = ','
	}
	if f.Rate != 1 {
		opt("rate")
		b = strconv.AppendFloat(b, f.Rate, 'g', -1, 64)
	}
	if f.Request > 0 {
		opt("request")
		b = strconv.AppendUint(b, f.Request, 10)
	}
	if f.Event > 0 {
		opt("event")
		b = strconv.AppendInt(b, int64(f.Event), 10)
	}
	for _, d := range [...]struct {
		name string
		v    time.Duration
		def  time.Duration
	}{{"retry-after", f.RetryAfter, 0}, {"after", f.After, DefaultTimeout}, {"for", f.For, DefaultStall}, {"ttfb", f.TTFB, 0}, {"per-event", f.PerEvent, 0}} {
		if d.v != d.def && f.takes(d.name) {
			opt(d.name)
			b = append(b, d.v.String()...)
		}
	}
	if f.Consume {
		b = append(append(b, sep), "consume"...)
	}
	return b
}

// ParseAll reads several faults, the error naming the first bad one.
func ParseAll(specs []string) ([]Fault, error) {
	out := make([]Fault, 0, len(specs))
	for _, s := range specs {
		f, err := Parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Plan is the faults a server or a session injects, and the seed that
// picks the requests they fall on. The zero Plan injects nothing.
type Plan struct {
	Seed   uint64
	Faults []Fault
}

// Empty reports whether the plan injects nothing.
func (p *Plan) Empty() bool { return p == nil || len(p.Faults) == 0 }

// Conversation names a conversation for Pick and Counter: a 64-bit digest
// of what identifies it, the same in every process.
type Conversation uint64

// Named is the conversation a caller names (a request header); "" is the
// one sequence of the requests that name none.
func Named(name string) Conversation {
	h := newHash(0)
	h.byte('n')
	h.str(name)
	return Conversation(h.sum())
}

// Opening is the conversation that opens with system prompt sys (nil when
// there is none) and first turn first, as its requests send them.
func Opening(sys, first []byte) Conversation {
	h := newHash(0)
	h.byte('o')
	h.bytes(sys)
	h.bytes(first)
	return Conversation(h.sum())
}

// Pick returns the first of the plan's faults that falls on the n-th
// request (from 1) of conversation conv, or nil. Whether a fault falls on
// it is Chosen(seed, fault, conv, n): the same in every process, whatever
// the timing.
func (p *Plan) Pick(conv Conversation, n uint64) *Fault {
	if p == nil {
		return nil
	}
	for k := range p.Faults {
		if Chosen(p.Seed, &p.Faults[k], conv, n) {
			return &p.Faults[k]
		}
	}
	return nil
}

// Chosen reports whether f falls on the n-th request of conversation conv
// under seed: never past its Request, always at rate 1, else when a hash of
// the seed, f's canonical spec, conv and n, read as a number in [0,1), is
// below the rate.
func Chosen(seed uint64, f *Fault, conv Conversation, n uint64) bool {
	switch {
	case f.Request > 0 && n != f.Request:
		return false
	case f.Rate >= 1:
		return true
	case f.Rate <= 0:
		return false
	}
	var buf [64]byte
	h := newHash(seed)
	h.bytes(f.appendSpec(buf[:0]))
	h.u64(uint64(conv))
	h.u64(n)
	return float64(h.sum()>>11)/(1<<53) < f.Rate
}

// hash is FNV-1a over 64 bits with a final mix (splitmix64's), so that
// nearby inputs give unrelated outputs.
type hash uint64

func newHash(seed uint64) hash {
	h := hash(14695981039346656037)
	h.u64(seed)
	return h
}

func (h *hash) byte(b byte) { *h = (*h ^ hash(b)) * 1099511628211 }

func (h *hash) u64(v uint64) {
	for i := range 8 {
		h.byte(byte(v >> (8 * i)))
	}
}

func (h *hash) str(s string) {
	h.u64(uint64(len(s)))
	for i := range len(s) {
		h.byte(s[i])
	}
}

func (h *hash) bytes(b []byte) {
	h.u64(uint64(len(b)))
	for _, c := range b {
		h.byte(c)
	}
}

func (h hash) sum() uint64 {
	z := uint64(h) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// MaxConversations bounds the conversations a Counter remembers: past it,
// it forgets them all and counts afresh (a run of more conversations than
// this numbers the later ones from 1 again, still the same in every run).
const MaxConversations = 1 << 16

// Counter numbers the requests of each conversation of each scope (a
// cassette, a scenario) from 1, in the order they arrive within it. It is
// safe for concurrent use; the zero value is ready. Counting allocates
// nothing but the first request of a conversation's place in its map.
type Counter struct {
	mu sync.Mutex
	n  map[counted]uint64
}

// counted is a conversation of a scope.
type counted struct {
	scope string
	conv  Conversation
}

// Next returns the number of this request in conversation conv of scope.
func (c *Counter) Next(scope string, conv Conversation) uint64 {
	k := counted{scope, conv}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.n[k]; !ok && len(c.n) >= MaxConversations || c.n == nil {
		c.n = map[counted]uint64{}
	}
	n := c.n[k] + 1
	c.n[k] = n
	return n
}
