package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// WriteOptions says how to write an answer. The zero value writes the
// whole (non-streamed) JSON body; OptionsFor reads the options a request
// asks for.
type WriteOptions struct {
	// Stream asks for the streamed form: SSE (OpenAI, Anthropic, Gemini
	// with alt=sse), NDJSON (Ollama) or Gemini's streamed JSON array.
	Stream bool
	// Chunk is the length in characters of the pieces that streamed text
	// and reasoning are cut into; 0 cuts them into words, each piece but the
	// first starting with the spaces before its word (" is", " sunny").
	Chunk int
	// IncludeUsage ends an OpenAI chat stream with the usage chunk
	// ("choices":[]) and puts "usage":null on every other chunk, as
	// stream_options.include_usage asks. The other wires always report
	// usage.
	IncludeUsage bool
	// Obfuscation adds OpenAI's "obfuscation" padding field to chat chunks
	// and Responses delta events, as OpenAI does unless
	// stream_options.include_obfuscation is false.
	Obfuscation bool
	// JSONArray writes a Gemini stream as one JSON array, as
	// streamGenerateContent does without alt=sse, instead of SSE.
	JSONArray bool
	// OllamaGenerate writes an Ollama answer as /api/generate sends it (the
	// text as "response" at the top level) rather than as /api/chat does
	// (in "message").
	OllamaGenerate bool
	// Base64 writes an embedding as the base64 of its little-endian
	// float32 values, as encoding_format "base64" asks (the openai Python
	// and Node SDKs ask for it by default).
	Base64 bool
	// Buffer, when not nil, is memory the writer may lay the answer out
	// in (OpenAI chat's whole body; every wire's stream but Bedrock
	// InvokeModel's), overwriting it, when its capacity is enough: a
	// server passes the Written.Buffer of an answer it no longer uses, so
	// that answers do not each allocate theirs.
	Buffer []byte
	// EventBuffer, when not nil, is memory the writer may lay the list of
	// a stream's events out in (the same streams), overwriting it, when
	// its capacity is enough: a server passes the Written.Events of an
	// answer it no longer uses, as it does Buffer.
	EventBuffer []Event
	// Request is the body of the request answered, or nil. The Responses
	// API echoes its settings in the response object (instructions, tools,
	// tool_choice, store, reasoning, temperature, …); the other writers do
	// not read it.
	Request []byte
}

// OptionsFor returns the options the provider would answer a request with:
// Stream as ParseRequest reads it, IncludeUsage and Obfuscation from
// stream_options, JSONArray for a Gemini stream asked without alt=sse,
// OllamaGenerate for Ollama's /api/generate, Base64 from encoding_format, and the body itself as Request. path is the
// upstream-relative path with its query. Chunk is left 0 (one piece per
// word). A body ParseRequest rejects is its error.
func OptionsFor(kind Kind, path string, body []byte) (WriteOptions, error) {
	req, err := ParseRequest(kind, path, body)
	if err != nil {
		return WriteOptions{}, err
	}
	return OptionsOf(kind, path, req, body), nil
}

// OptionsOf is OptionsFor of a request already read: req is what
// ParseRequest returned for kind, path and body (the stream options are
// taken from req, which read them, not from body).
func OptionsOf(kind Kind, path string, req Request, body []byte) WriteOptions {
	o := WriteOptions{Stream: req.Stream, Request: body, Obfuscation: true}
	switch kind {
	case KindOpenAIChat, KindOpenAIResponses:
		o.IncludeUsage, o.Obfuscation = req.streamOptions.includeUsage, !req.streamOptions.noObfuscation
	case KindGemini:
		o.JSONArray = o.Stream && queryValue(path, "alt") != "sse"
	case KindOllama:
		o.OllamaGenerate = isOllamaGenerate(path)
	case KindEmbeddings:
		o.Base64 = strOf(gjson.GetBytes(body, "encoding_format")) == "base64"
	}
	return o
}

// queryValue returns the first value of key in path's query, "" when absent.
func queryValue(path, key string) string {
	_, q, ok := strings.Cut(path, "?")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q = q[:i]
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	return v.Get(key)
}

// Written is an answer (or an error) as the provider sends it: a status,
// headers, and either a whole body or a stream of events.
type Written struct {
	// Status is the HTTP status.
	Status int
	// Header holds the headers the provider sends with it: Content-Type,
	// the request id header where the provider has one, Retry-After on an
	// error that says when to retry. It never holds Content-Length: a
	// server that writes Body in one piece may add it, a stream must go
	// without.
	Header http.Header
	// Body is the whole body; nil for a stream.
	Body []byte
	// Events is the stream in order, nil when the answer is not streamed.
	// Each event's Raw carries its own framing (SSE event and blank line,
	// NDJSON line, JSON-array piece), so a server writes Raw of events 0,
	// 1, … with a flush after each, may wait between them, and may stop
	// after any of them, as a provider that breaks mid-stream does. Name is
	// the SSE event name and Data the event's JSON document.
	Events []Event
	// joined, when set, is the buffer the writer laid Events out in, side
	// by side (see JoinedPrefix).
	joined []byte
	// buffer is the memory the answer's bytes lie in, when the writer
	// allocated it for this answer or took it from WriteOptions.Buffer.
	buffer []byte
}

// Buffer returns the memory the answer's bytes (Body, or the events'
// Raw) lie in when the writer allocated it for this answer or took it
// from WriteOptions.Buffer, and nil otherwise. Once the answer is no
// longer used, it may be passed as the WriteOptions.Buffer of another.
func (w Written) Buffer() []byte { return w.buffer }

// buffer returns o.Buffer emptied when it holds size bytes, else new
// memory for them.
func (o WriteOptions) buffer(size int) []byte {
	if cap(o.Buffer) >= size {
		return o.Buffer[:0]
	}
	return make([]byte, 0, size)
}

// JoinedPrefix returns the Raw of the first n events as one slice, without
// copying, when the writer laid them out side by side in one buffer and
// they are still those; ok is false otherwise (the caller joins them). The
// slice must not be changed.
func (w Written) JoinedPrefix(n int) (b []byte, ok bool) {
	if w.joined == nil || n < 0 || n > len(w.Events) {
		return nil, false
	}
	end := 0
	for _, e := range w.Events[:n] {
		if len(e.Raw) == 0 || end+len(e.Raw) > len(w.joined) || &w.joined[end] != &e.Raw[0] {
			return nil, false
		}
		end += len(e.Raw)
	}
	return w.joined[:end:end], true
}

// Streamed reports whether w is a stream of events.
func (w Written) Streamed() bool { return w.Events != nil }

// Bytes returns the whole body: Body, or the Raw of every event joined.
func (w Written) Bytes() []byte {
	if !w.Streamed() {
		return w.Body
	}
	var b []byte
	for _, e := range w.Events {
		b = append(b, e.Raw...)
	}
	return b
}

// Write writes an answer as the provider of kind sends it, streamed or
// whole as o says. The same answer and options always give the same bytes:
// the ids, timestamps and usage are the answer's, and what a provider
// randomises (padding, signatures) is derived from the answer's content.
//
// Each wire writes what it carries: reasoning is an OpenAI chat
// reasoning_content, a Responses reasoning summary, an Anthropic thinking
// block, Gemini thought parts, Ollama thinking; an embedding is written
// only for KindEmbeddings, and only the embedding is. ParseResponse given
// the result returns the answer's text, reasoning, tool calls (arguments
// as the same JSON value), finish reason and usage; docs/providers.md lists
// what each wire leaves out.
//
// An answer whose tool call arguments are not a JSON object, whose usage is
// negative or whose embedding is not finite is ErrInvalidAnswer; KindGeneric,
// an unknown kind and a streamed embedding are ErrUnsupported.
func Write(kind Kind, a Answer, o WriteOptions) (Written, error) {
	if kind == KindEmbeddings {
		if o.Stream {
			return Written{}, fmt.Errorf("write %s answer: %w: embeddings are not streamed", kind, ErrUnsupported)
		}
		return writeEmbeddings(a, o)
	}
	var write func(*answer, WriteOptions) Written
	switch kind {
	case KindOpenAIChat:
		write = writeChat
	case KindOpenAIResponses:
		write = writeResponses
	case KindAnthropicMessages:
		write = writeAnthropic
	case KindGemini:
		write = writeGemini
	case KindOllama:
		write = writeOllama
	case KindBedrockConverse:
		write = writeConverse
	case KindBedrockInvoke:
		f, err := invokeBodyFamily(o.Request)
		if err != nil {
			return Written{}, err
		}
		if (f == familyTitan || f == familyLlama) && len(a.ToolCalls) > 0 {
			return Written{}, fmt.Errorf("write %s answer: %w: %d tool calls: a Titan or Llama InvokeModel body carries no tool calls", kind, ErrUnsupported, len(a.ToolCalls))
		}
		write = writeInvoke
	default:
		return Written{}, fmt.Errorf("write %s answer: %w: no answer format for this API kind", kind, ErrUnsupported)
	}
	p, err := prepare(kind, a, o)
	if err != nil {
		return Written{}, fmt.Errorf("write %s answer: %w", kind, err)
	}
	written := write(p, o) // holds nothing of p
	p.release()
	return written, nil
}

// Answerable says whether Write can answer a request of a chat kind with
// this body: nil, or an ErrUnsupported error naming what it cannot
// write. Only bedrock-invoke depends on the body: an InvokeModel request
// is answered in its model family's shape (Anthropic Messages, Amazon
// Nova, Amazon Titan Text, Meta Llama), and a body of none of them is
// refused.
func Answerable(kind Kind, body []byte) error {
	if kind == KindBedrockInvoke {
		_, err := invokeBodyFamily(body)
		return err
	}
	return nil
}

// answer is an Answer checked and ready to write.
type answer struct {
	Answer
	calls []call
	rnd   prng
	// textPieces and thinkPieces are Text and Reasoning cut for a stream.
	textPieces, thinkPieces []string
}

// answers keeps the answers Write is done with: the next takes one, with
// its stream generator, the bytes it was keyed from and its lists of
// pieces, instead of allocating them.
var answers = sync.Pool{New: func() any { return new(answer) }}

// maxPooledPieces bounds the pieces an answer kept in answers holds room
// for, so that one long answer does not pin its lists in memory.
const maxPooledPieces = 4096

// newAnswer returns an answer for a from answers.
func newAnswer(a Answer) *answer {
	p := answers.Get().(*answer)
	text, think := p.textPieces[:0], p.thinkPieces[:0]
	rnd := p.rnd.reset()
	*p = answer{Answer: a, rnd: rnd, textPieces: text, thinkPieces: think}
	return p
}

// release gives p back to answers: nothing may use it any more. What it
// points into is let go, so that a kept answer pins no answer's memory
// (it keeps only its own buffers).
func (p *answer) release() {
	for _, l := range []*[]string{&p.textPieces, &p.thinkPieces} {
		clear(*l)
		if cap(*l) > maxPooledPieces {
			*l = nil
		}
	}
	p.Answer, p.calls = Answer{}, nil
	p.rnd.src = nil
	answers.Put(p)
}

// call is a tool call ready to write.
type call struct {
	id, name string
	args     string // the arguments as given (OpenAI sends this string)
	compact  []byte // the arguments compacted (object-carrying wires)
}

// prepare checks a and fills in its defaults: a finish reason follows from
// the calls when none is given, and empty arguments are "{}".
func prepare(kind Kind, a Answer, o WriteOptions) (*answer, error) {
	if u := a.Usage; u.Input < 0 || u.Output < 0 || u.Reasoning < 0 || u.Reasoning > u.Output {
		return nil, fmt.Errorf("%w: usage of %d input, %d output and %d reasoning tokens", ErrInvalidAnswer, u.Input, u.Output, u.Reasoning)
	}
	p := newAnswer(a)
	if len(a.ToolCalls) > 0 {
		p.calls = make([]call, 0, len(a.ToolCalls))
	}
	for i, tc := range a.ToolCalls {
		args := bytes.TrimSpace(tc.Arguments)
		if len(args) == 0 {
			args = emptyObjectJSON
		}
		if checkJSON(args) != nil || args[0] != '{' || !utf8.Valid(args) {
			p.release()
			return nil, fmt.Errorf("%w: tool call %d (%s): arguments %.80q are not a UTF-8 JSON object", ErrInvalidAnswer, i, tc.Name, args)
		}
		var buf bytes.Buffer
		buf.Grow(len(args))
		if err := json.Compact(&buf, args); err != nil {
			p.release()
			return nil, fmt.Errorf("%w: tool call %d (%s): arguments: %v", ErrInvalidAnswer, i, tc.Name, err)
		}
		p.calls = append(p.calls, call{id: tc.ID, name: tc.Name, args: string(args), compact: buf.Bytes()})
	}
	if p.Finish == "" {
		p.Finish = FinishStop
		if len(p.calls) > 0 {
			p.Finish = FinishToolCalls
		}
	}
	p.rnd.from(kind, &p.Answer, a.Finish)
	if o.Stream {
		p.textPieces = appendPieces(p.textPieces, a.Text, o.Chunk)
		p.thinkPieces = appendPieces(p.thinkPieces, a.Reasoning, o.Chunk)
	}
	return p, nil
}

// created is the answer's creation time in Unix seconds.
func (a *answer) created() int64 {
	if a.Created.IsZero() {
		return 0
	}
	return a.Created.Unix()
}

// header returns the headers every answer of a provider carries.
func header(contentType string) http.Header {
	return http.Header{"Content-Type": {contentType}}
}

// requestID derives a provider-looking request id ("req_" and 32 hex
// digits) from a response id, so that the same answer carries the same one.
func requestID(id string) string {
	var in [64]byte
	sum := sha256.Sum256(append(append(in[:0], "request-id\x00"...), id...))
	var out [4 + 32]byte
	copy(out[:], "req_")
	hex.Encode(out[4:], sum[:16])
	return string(out[:])
}

// pieces cuts s into stream pieces: chunk characters each, or words.
func pieces(s string, chunk int) []string { return appendPieces(nil, s, chunk) }

// appendPieces appends pieces(s, chunk) to dst, growing it at most once.
func appendPieces(dst []string, s string, chunk int) []string {
	if s == "" {
		return dst
	}
	if chunk <= 0 {
		return appendWords(dst, s)
	}
	dst = slices.Grow(dst, (utf8.RuneCountInString(s)+chunk-1)/chunk)
	for len(s) > 0 {
		end, n := 0, 0
		for end < len(s) && n < chunk {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			n++
		}
		dst = append(dst, s[:end])
		s = s[end:]
	}
	return dst
}

// appendWords appends to dst text cut the way models stream it: a piece
// per word, each but the first carrying the spaces before it ("It", " is",
// " 21", " °C"). A space is one byte and no byte of another character, so
// the text is searched byte by byte, and there is at most one piece more
// than spaces.
func appendWords(dst []string, text string) []string {
	dst = slices.Grow(dst, strings.Count(text, " ")+1)
	start := 0
	for i := 0; ; i++ {
		j := strings.IndexByte(text[i:], ' ')
		if j < 0 {
			break
		}
		if i += j; i > start && text[i-1] != ' ' {
			dst = append(dst, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		dst = append(dst, text[start:])
	}
	return dst
}

// tokens cuts a JSON arguments string into tokenizer-like fragments, as
// OpenAI streams them: runs of letters, runs of up to three digits, runs of
// punctuation, a space staying with what follows. `{"country":"UK"}` gives
// `{"`, `country`, `":"`, `UK`, `"}`.
func tokens(s string) []string {
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || r == '_':
			return 1
		case unicode.IsDigit(r):
			return 2
		case r == ' ':
			return 3
		}
		return 4
	}
	var out []string
	start, prev, digits := 0, 0, 0
	for i, r := range s {
		c := class(r)
		split := i > start && c != prev && prev != 3
		if c == 2 && prev == 2 && digits == 3 {
			split = true
		}
		if split {
			out = append(out, s[start:i])
			start, digits = i, 0
		}
		if c == 2 {
			digits++
		} else {
			digits = 0
		}
		prev = c
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// prng is a deterministic stream of pseudo-random numbers: ChaCha8 (the
// c2sp.org/chacha8rand generator of math/rand/v2) keyed with a SHA-256 of
// the answer's content. It stands in for what providers randomise, so that
// the same answer always gives the same bytes.
type prng struct {
	// gen is nil until the first draw keys it (it is then &state); until
	// then src, kind and finish are what it is keyed from (see from): an
	// answer that draws nothing, as most that do not stream, never hashes
	// its content.
	gen    *rand.ChaCha8
	state  rand.ChaCha8
	kind   Kind
	src    *Answer
	finish Finish
	// keyed is the memory of the bytes gen was keyed from, for the next
	// keying.
	keyed []byte
}

// maxKeptKeying bounds the memory a prng keeps for the next keying.
const maxKeptKeying = 64 << 10

// reset returns r unkeyed, keeping its memory (not its state's value).
func (r *prng) reset() prng {
	keyed := r.keyed[:0]
	if cap(keyed) > maxKeptKeying {
		keyed = nil
	}
	return prng{keyed: keyed}
}

// from makes r seed itself, on its first draw, from kind and the answer
// src with its finish reason as finish (src's own may have been filled in
// since); src must not change until then.
func (r *prng) from(kind Kind, src *Answer, finish Finish) {
	r.gen, r.kind, r.src, r.finish = nil, kind, src, finish
}

// seed keys r from everything the answer says: the SHA-256 of each
// field's length (8 bytes, big-endian) and bytes.
func (r *prng) seed(kind Kind, a Answer) {
	fields := []string{string(kind), a.Model, a.ID, a.Text, a.Reasoning}
	size := 8 * (len(fields) + 1 + 3*len(a.ToolCalls))
	for _, f := range fields {
		size += len(f)
	}
	for _, c := range a.ToolCalls {
		size += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	size += len(a.Finish)
	b := slices.Grow(r.keyed[:0], size)
	field := func(s string) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, f := range fields {
		field(f)
	}
	for _, c := range a.ToolCalls {
		field(c.ID)
		field(c.Name)
		b = binary.BigEndian.AppendUint64(b, uint64(len(c.Arguments)))
		b = append(b, c.Arguments...)
	}
	field(string(a.Finish))
	r.keyed = b
	r.state.Seed(sha256.Sum256(b))
	r.gen = &r.state
}

// next returns the stream's next 64 bits.
func (r *prng) next() uint64 {
	if r.gen == nil {
		a := *r.src
		a.Finish = r.finish
		r.seed(r.kind, a)
	}
	return r.gen.Uint64()
}

// between returns a number in [lo, hi].
func (r *prng) between(lo, hi int) int {
	return lo + int(r.next()%uint64(hi-lo+1))
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// alnum returns n letters and digits.
func (r *prng) alnum(n int) string { return string(r.appendAlnum(make([]byte, 0, n), n)) }

// appendAlnum appends n letters and digits to dst (what alnum returns).
func (r *prng) appendAlnum(dst []byte, n int) []byte {
	for end := len(dst) + n; len(dst) < end; {
		v := r.next()
		for k := 0; k < 8 && len(dst) < end; k++ {
			dst = append(dst, alnum[int(byte(v>>(8*k)))%len(alnum)])
		}
	}
	return dst
}

// base64 returns n pseudo-random bytes in standard base64, like Gemini's
// thoughtSignature and Anthropic's thinking signature.
func (r *prng) base64(n int) string {
	raw := make([]byte, 0, n+8)
	for len(raw) < n {
		raw = binary.LittleEndian.AppendUint64(raw, r.next())
	}
	raw = raw[:n]
	return base64.StdEncoding.EncodeToString(raw)
}
