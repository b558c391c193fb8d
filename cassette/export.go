package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/llmproxy/llmproxy/store"
	"github.com/llmproxy/llmproxy/wire"
)

// ExportFormat names the JSON export format in its "format" field.
const ExportFormat = "llmproxy-cassette"

// ExportFormatVersion is the version of the export format, written in its
// "meta.format_version" field. It is the export's own, apart from the
// store's format version (store.FormatVersion): the store's layout changed
// in its version 2 while the export stayed as it was, so that a cassette
// exports the same bytes whichever layout holds it. Import reads every
// export version up to this one.
const ExportFormatVersion = 1

// exportFile is the JSON export: stable field order, interactions in
// recorded order, fixtures sorted by call id (encoding/json sorts map keys).
type exportFile struct {
	Format       string                     `json:"format"`
	Meta         exportMeta                 `json:"meta"`
	Interactions []*Interaction             `json:"interactions"`
	Fixtures     map[string]json.RawMessage `json:"fixtures"`
}

// exportMeta is the metadata worth reviewing; the index settings are
// rebuilt on import and left out.
type exportMeta struct {
	FormatVersion int       `json:"format_version"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	Version       string    `json:"llmproxy_version"`
}

// Export writes the whole cassette as stable, pretty JSON: the same cassette
// always exports the same bytes.
func (c *Cassette) Export(w io.Writer) error {
	ct, err := c.Load()
	if err != nil {
		return err
	}
	return WriteExport(w, ct)
}

// WriteExport writes contents in the export format.
func WriteExport(w io.Writer, ct *Contents) error {
	m := exportMeta{FormatVersion: ExportFormatVersion, Created: ct.Meta.Created, Updated: ct.Meta.Updated, Version: ct.Meta.Version}
	f := exportFile{Format: ExportFormat, Meta: m, Interactions: ct.Interactions, Fixtures: ct.Fixtures}
	if f.Interactions == nil {
		f.Interactions = []*Interaction{}
	}
	if f.Fixtures == nil {
		f.Fixtures = map[string]json.RawMessage{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ReadExport parses and checks an export. Every error wraps ErrBadExport (or
// store.ErrFormatVersion for a newer format) and names the place at fault:
// the line and column of a syntax error, or the interaction and field.
func ReadExport(r io.Reader) (*Contents, error) {
	var buf bytes.Buffer
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		// A file is read into a buffer of its size at once, rather than
		// one doubled again and again (a second of copies at 400 MB).
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() < math.MaxInt32 {
			buf.Grow(int(st.Size()) + bytes.MinRead)
		}
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("read export: %w", err)
	}
	data := buf.Bytes()
	f, ok := readExportFast(data)
	if !ok {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %w", describeJSONError(data, err), ErrBadExport)
		}
		if dec.More() {
			return nil, fmt.Errorf("trailing data after the export object: %w", ErrBadExport)
		}
	}
	if f.Format != ExportFormat {
		return nil, fmt.Errorf("\"format\" is %q, want %q: %w", f.Format, ExportFormat, ErrBadExport)
	}
	if f.Meta.FormatVersion > ExportFormatVersion {
		return nil, fmt.Errorf("export format version %d, this llmproxy reads up to %d: %w", f.Meta.FormatVersion, ExportFormatVersion, store.ErrFormatVersion)
	}
	if f.Meta.FormatVersion < 1 {
		return nil, fmt.Errorf("meta.format_version %d: %w", f.Meta.FormatVersion, ErrBadExport)
	}
	for n, i := range f.Interactions {
		if err := checkInteraction(n, i); err != nil {
			return nil, err
		}
	}
	fx := make(map[string]json.RawMessage, len(f.Fixtures))
	ids := make([]string, 0, len(f.Fixtures))
	for id := range f.Fixtures {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if id == "" {
			return nil, fmt.Errorf("fixtures: empty call id: %w", ErrBadExport)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, f.Fixtures[id]); err != nil {
			return nil, fmt.Errorf("fixtures.%s: %v: %w", id, err, ErrBadExport)
		}
		fx[id] = b.Bytes()
	}
	m := store.Meta{FormatVersion: f.Meta.FormatVersion, Created: f.Meta.Created, Updated: f.Meta.Updated, Version: f.Meta.Version}
	return &Contents{Meta: m, Interactions: f.Interactions, Fixtures: fx}, nil
}

func checkInteraction(n int, i *Interaction) error {
	at := func(field, format string, args ...any) error {
		return fmt.Errorf("interactions[%d].%s: %s: %w", n, field, fmt.Sprintf(format, args...), ErrBadExport)
	}
	switch {
	case i == nil:
		return fmt.Errorf("interactions[%d]: null: %w", n, ErrBadExport)
	case i.ID != uint64(n+1):
		return at("id", "is %d, want %d (ids are 1..n in order)", i.ID, n+1)
	case i.Request.Method == "":
		return at("request.method", "missing")
	case i.Request.Path == "" || i.Request.Path[0] != '/':
		return at("request.path", "%q does not start with /", i.Request.Path)
	case i.Response.Status < 100 || i.Response.Status > 999:
		return at("response.status", "%d is not an HTTP status", i.Response.Status)
	case i.Response.Status < 200:
		return at("response.status", "%d is an informational (1xx) status, not a final answer; a recorded response has a status from 200 to 999", i.Response.Status)
	case !knownFraming(i.Response.Framing):
		return at("response.framing", "%q is not sse, ndjson or eventstream", i.Response.Framing)
	case i.Response.Framing != "" && len(i.Response.Body) > 0:
		return at("response.body", "a streamed response keeps its bytes in events")
	}
	if _, err := http.NewRequest(i.Request.Method, "http://x"+i.Request.Path, nil); err != nil {
		return at("request", "%v", err)
	}
	if i.Response.WireFraming() == wire.FramingEventStream {
		// Replay serves each event as it is: each must be one whole
		// message whose CRCs match.
		for k, e := range i.Response.Events {
			if _, err := wire.DecodeEventStream(e.Data); err != nil {
				return at(fmt.Sprintf("response.events[%d].data", k), "%v", err)
			}
		}
	}
	return nil
}

func describeJSONError(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.Offset)
		return fmt.Sprintf("line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		line, col := position(data, te.Offset)
		return fmt.Sprintf("line %d, column %d: %s: %v", line, col, te.Field, err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected end of file"
	}
	if where, ok := locateBody(data); ok {
		return where + ": " + err.Error()
	}
	return err.Error()
}

func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
