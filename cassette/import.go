package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/llmproxy/llmproxy/store"
)

// importChunk is how much of an export ImportFile reads at a time, and
// about how much of it goes into one batch of interactions (one
// transaction of the new file).
const importChunk = 4 << 20

// ImportFile writes the export read from r, of size bytes, as the whole
// cassette at path, replacing any file there atomically (see Draft): each
// interaction redacted with red, then indexed with keys under the rules
// named, as ReadExport, Redactor.Redact and WriteFile would have it. It
// reads the export as a stream: batches of interactions are decoded,
// redacted, indexed and encoded on every CPU while earlier batches are
// written, so memory holds a few batches, not the export, its
// interactions and their records at once.
//
// It takes only exports that ReadExport would accept, with the fields and
// the top-level form readExportFast takes (an interaction it does not take
// is read with encoding/json, as ReadExport would), and for any other (or
// when it cannot read r to its end) it
// returns false having written nothing: the caller reads the export with
// ReadExport, which decides and names the place at fault. An error is a
// failure to write the cassette.
func ImportFile(path string, r io.Reader, size int64, red *Redactor, keys Keys, rules string, opts Options) (ok bool, err error) {
	if size >= 32<<20 {
		opts.mapSize = size + size/2 // as mapSizeFor: the map never moves
	}
	d, err := Create(path, opts)
	if err != nil {
		return false, err
	}
	defer d.Discard()
	fill, err := d.st.Fill()
	if err != nil {
		return false, err
	}
	imp := &importer{s: exportStream{r: r}, red: red, keys: keys, stop: make(chan struct{})}
	ok, err = imp.run(fill)
	if !ok || err != nil {
		return false, err
	}
	h := imp.head
	if h.format != ExportFormat || h.meta.FormatVersion < 1 || h.meta.FormatVersion > ExportFormatVersion {
		return false, nil
	}
	fx := make(map[string][]byte, len(h.fixtures))
	for id, v := range h.fixtures {
		var b bytes.Buffer
		if id == "" || json.Compact(&b, v) != nil {
			return false, nil
		}
		fx[id] = b.Bytes()
	}
	m := store.Meta{FormatVersion: h.meta.FormatVersion, Created: h.meta.Created, Updated: h.meta.Updated, Version: h.meta.Version, IndexRules: rules}
	if err := fill.Finish(fx, m); err != nil {
		return false, err
	}
	return true, d.Commit()
}

// importer runs the stages of ImportFile: the caller's goroutine writes,
// one goroutine reads the export and cuts it into batches, and a worker
// per CPU turns a batch into records.
type importer struct {
	s    exportStream
	red  *Redactor
	keys Keys

	stop chan struct{} // closed when the writer gives up
	head exportHead    // what the export holds besides its interactions, once read
}

// exportHead is the export's fields other than its interactions.
type exportHead struct {
	format   string
	meta     exportMeta
	fixtures map[string]json.RawMessage
	ok       bool // the whole export was read and taken
}

// importBatch is a run of interactions, the first at index first of the
// export, and where its records are delivered (nil when one of them is
// not taken).
type importBatch struct {
	first int
	elems [][]byte
	out   chan []store.Record
}

func (imp *importer) run(fill *store.Fill) (ok bool, err error) {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *importBatch, workers)
	order := make(chan *importBatch, workers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(order)
		imp.head.ok = imp.read(func(b *importBatch) bool {
			select {
			case order <- b:
			case <-imp.stop:
				return false
			}
			select {
			case work <- b:
				return true
			case <-imp.stop:
				return false
			}
		})
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				b.out <- imp.records(b)
			}
		}()
	}
	defer wg.Wait()
	for b := range order {
		recs := <-b.out
		if recs == nil {
			close(imp.stop)
			return false, nil
		}
		if err := fill.Add(recs); err != nil {
			close(imp.stop)
			return false, err
		}
	}
	// The reader closed order on its way out: head is set.
	return imp.head.ok, nil
}

// records decodes, checks, redacts, indexes and encodes a batch, as
// ReadExport and WriteFile do each interaction; nil if one is not taken.
func (imp *importer) records(b *importBatch) []store.Record {
	recs := make([]store.Record, len(b.elems))
	for k, e := range b.elems {
		n := b.first + k
		i, ok := decodeFast(e, false)
		if !ok {
			// What decodeFast leaves to encoding/json (a base64 body),
			// read as ReadExport reads the whole export.
			i = &Interaction{}
			dec := json.NewDecoder(bytes.NewReader(e))
			dec.DisallowUnknownFields()
			if dec.Decode(i) != nil {
				return nil
			}
		}
		if checkInteraction(n, i) != nil {
			return nil
		}
		imp.red.Redact(i)
		key, shape, err := imp.keys(i)
		if err != nil {
			return nil
		}
		v, err := encode(i)
		if err != nil {
			return nil
		}
		recs[k] = store.Record{ID: i.ID, Key: key, Shape: shape, Value: v}
	}
	return recs
}

// read reads the export's top-level object, handing its interactions to
// emit batch by batch in order, and reports whether it took the whole
// export: the fields it knows, each once, and nothing after the object.
// emit returns false to stop.
func (imp *importer) read(emit func(*importBatch) bool) bool {
	s := &imp.s
	if c, ok := s.peek(); !ok || c != '{' {
		return false
	}
	s.pos++
	seen := map[string]bool{}
	for {
		key, ok := s.key()
		if !ok || seen[key] {
			return false
		}
		seen[key] = true
		if c, ok := s.peek(); !ok || c != ':' {
			return false
		}
		s.pos++
		if key == "interactions" {
			ok = imp.interactions(emit)
		} else {
			ok = imp.field(key)
		}
		if !ok {
			return false
		}
		c, ok := s.peek()
		if ok && c == ',' {
			s.pos++
			continue
		}
		if !ok || c != '}' {
			return false
		}
		s.pos++
		break
	}
	_, more := s.peek()
	return !more && s.err == nil
}

// field reads a top-level field other than the interactions, as
// readExportFast does.
func (imp *importer) field(key string) bool {
	v, ok := imp.s.value()
	if !ok {
		return false
	}
	d := fastDecoder{b: v}
	switch key {
	case "format":
		return d.string(&imp.head.format)
	case "meta":
		return d.exportMeta(&imp.head.meta) && d.i == len(v)
	case "fixtures":
		return json.Unmarshal(v, &imp.head.fixtures) == nil && imp.head.fixtures != nil
	}
	return false
}

// interactions reads the array of interactions, cutting it into batches.
func (imp *importer) interactions(emit func(*importBatch) bool) bool {
	s := &imp.s
	if c, ok := s.peek(); !ok || c != '[' {
		return false
	}
	s.pos++
	if c, ok := s.peek(); ok && c == ']' {
		s.pos++
		return true
	}
	b := &importBatch{out: make(chan []store.Record, 1)}
	size, n := 0, 0
	for {
		if c, ok := s.peek(); !ok || c != '{' {
			return false
		}
		e, ok := s.value()
		if !ok {
			return false
		}
		b.elems = append(b.elems, e)
		n++
		if size += len(e); size >= importChunk {
			if !emit(b) {
				return false
			}
			b, size = &importBatch{first: n, out: make(chan []store.Record, 1)}, 0
		}
		c, ok := s.peek()
		if ok && c == ',' {
			s.pos++
			continue
		}
		if !ok || c != ']' {
			return false
		}
		s.pos++
		return len(b.elems) == 0 || emit(b)
	}
}

// exportStream reads an export a chunk at a time. The bytes it returns
// stay valid: a chunk is never reused, only dropped once nothing refers to
// it.
type exportStream struct {
	r   io.Reader
	buf []byte // buf[pos:] is read and not yet consumed
	pos int
	eof bool
	err error // a failure to read, other than the end
}

// more reads another chunk after the bytes not yet consumed, reporting
// whether it read any.
func (s *exportStream) more() bool {
	if s.eof {
		return false
	}
	rest := s.buf[s.pos:]
	b := make([]byte, len(rest), max(importChunk, 2*len(rest)))
	copy(b, rest)
	n, err := io.ReadFull(s.r, b[len(rest):cap(b)])
	s.buf, s.pos = b[:len(rest)+n], 0
	if err != nil {
		s.eof = true
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			s.err = err
		}
	}
	return n > 0
}

// peek steps over white space and returns the next byte, unconsumed;
// false at the end of the export.
func (s *exportStream) peek() (byte, bool) {
	for {
		for s.pos < len(s.buf) {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c, true
			}
		}
		if !s.more() {
			return 0, false
		}
	}
}

// key reads an object key, unescaped.
func (s *exportStream) key() (string, bool) {
	if c, ok := s.peek(); !ok || c != '"' {
		return "", false
	}
	for {
		d := fastDecoder{b: s.buf[s.pos:]}
		if k, ok := d.key(); ok {
			s.pos += d.i
			return string(k), true
		}
		if !s.more() {
			return "", false
		}
	}
}

// value steps over a string, object or array, returning its bytes (which
// it does not check beyond their nesting: whoever reads them does). A
// value cut by the end of what has been read is read again with more; one
// that is not well nested reads on to the end of the export and fails.
func (s *exportStream) value() ([]byte, bool) {
	if c, ok := s.peek(); !ok || c != '{' && c != '[' && c != '"' {
		return nil, false
	}
	for {
		d := fastDecoder{b: s.buf[s.pos:]}
		if v, ok := d.skip(); ok {
			s.pos += d.i
			return v, true
		}
		if !s.more() {
			return nil, false
		}
	}
}
