package cassette

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmproxy/llmproxy/internal/parallel"
	"github.com/llmproxy/llmproxy/store"
)

// Keys computes the index keys of an interaction: its match key and its
// coarse shape. An Indexer's Keys is the one llmproxy indexes with; the
// store only keeps what it gives. It must be safe for concurrent use: a
// whole cassette is indexed on every CPU at once.
type Keys func(i *Interaction) (key, shape string, err error)

// Options configure Open.
type Options struct {
	ReadOnly    bool
	LockTimeout time.Duration
	Version     string // llmproxy version written into new metadata
	// Overwrite starts the cassette afresh (record --overwrite): the first
	// interaction appended replaces every earlier one and the fixtures, in
	// one transaction. Until it is written the old ones stay readable, and
	// a process that ends before leaves the cassette as it was.
	Overwrite bool

	mapSize int64 // store.Options.MapSize, for a cassette about to be written whole
	// beforeCommit, when set, runs before WriteFile puts its draft in
	// place; an error from it fails the write (tests of atomicity).
	beforeCommit func() error
}

// Cassette is an open cassette file. Its methods are safe for concurrent use.
type Cassette struct {
	st   *store.Store
	name string // the path it stands for, when not its file's (Scratch)
}

// Open opens (or, unless read-only, creates) the cassette at path. The
// errors of package store pass through wrapped: store.ErrLocked,
// store.ErrNotCassette, store.ErrFormatVersion, store.ErrMissing.
//
// A cassette of format version 1 opens and reads as one of version 2. Its
// first append (record, auto) first rewrites the whole cassette in version
// 2, as Migrate does, then appends; Replace (scrub, import, a reindex) and
// WriteFile (migrate) write version 2 whole. Nothing else writes it.
func Open(path string, opts Options) (*Cassette, error) {
	st, err := store.Open(path, &store.Options{ReadOnly: opts.ReadOnly, LockTimeout: opts.LockTimeout, Version: opts.Version, Overwrite: opts.Overwrite, Upgrade: upgrade, MapSize: opts.mapSize})
	if err != nil {
		return nil, err
	}
	return &Cassette{st: st}, nil
}

// Path is the cassette's file; a scratch copy's is the path of the
// cassette it copies.
func (c *Cassette) Path() string {
	if c.name != "" {
		return c.name
	}
	return c.st.Path()
}

// ReadOnly reports whether the cassette was opened read-only.
func (c *Cassette) ReadOnly() bool { return c.st.ReadOnly() }

// Close closes the file.
func (c *Cassette) Close() error { return c.st.Close() }

// Meta returns the cassette's metadata.
func (c *Cassette) Meta() (store.Meta, error) { return c.st.Meta() }

// SetIndexRules records the matching settings of the index.
func (c *Cassette) SetIndexRules(rules string) error { return c.st.SetIndexRules(rules) }

// A Keyed is a complete, redacted interaction with the index keys
// AppendAll stores it under.
type Keyed struct {
	Interaction *Interaction
	Key, Shape  string
}

// Appended is the outcome of one Keyed: its id, or why it was not stored.
type Appended = store.Appended

// AppendAll stores interactions in order, with consecutive ids, in one
// transaction (one pair of disk syncs for the lot). An incomplete
// interaction is left out with ErrIncomplete and takes no id; the others
// are stored. An error from the transaction itself stores none.
func (c *Cassette) AppendAll(items []Keyed) ([]Appended, error) {
	pending := make([]store.Pending, len(items))
	for k, it := range items {
		i := it.Interaction
		pending[k] = store.Pending{Key: it.Key, Shape: it.Shape, Encode: func(id uint64) ([]byte, error) {
			if i.Request.Method == "" || i.Response.Status == 0 {
				return nil, fmt.Errorf("%w: method %q, status %d", ErrIncomplete, i.Request.Method, i.Response.Status)
			}
			i.ID = id
			return encode(i)
		}}
	}
	return c.st.AppendAll(pending)
}

// upgrade rewrites a format-1 record as a format-2 one.
func upgrade(id uint64, old []byte) ([]byte, error) {
	i, err := decode(id, old)
	if err != nil {
		return nil, err
	}
	v, err := encode(i)
	if err != nil {
		return nil, fmt.Errorf("interaction %d: %w", id, err)
	}
	return v, nil
}

// Get returns the interaction with the given id.
func (c *Cassette) Get(id uint64) (*Interaction, error) {
	var i *Interaction
	err := c.st.Read(func(tx *store.Tx) error {
		v, err := tx.Get(id)
		if err != nil {
			return err
		}
		if i, err = decode(id, v); err != nil {
			return fmt.Errorf("cassette %s: %w", c.Path(), err)
		}
		return nil
	})
	return i, err
}

// Lookup returns the ids indexed under a match key, in recorded order.
func (c *Cassette) Lookup(key string) ([]uint64, error) { return c.st.Lookup(key) }

// Shape returns the ids of the interactions with a coarse shape.
func (c *Cassette) Shape(shape string) ([]uint64, error) { return c.st.Shape(shape) }

// Len is the number of interactions.
func (c *Cassette) Len() (int, error) { return c.st.Len() }

// ForEach calls fn with each interaction in recorded order.
func (c *Cassette) ForEach(fn func(i *Interaction) error) error {
	return c.st.ForEach(func(id uint64, v []byte) error {
		i, err := decode(id, v)
		if err != nil {
			return fmt.Errorf("cassette %s: %w", c.Path(), err)
		}
		return fn(i)
	})
}

// Last returns the id of the newest interaction, 0 when there is none;
// since ids count from 1 with no gaps, it is their number, at a cost that
// does not grow with the cassette.
func (c *Cassette) Last() (uint64, error) { return c.st.Last() }

// Walk calls fn with the interactions from id from onwards in recorded
// order, or, when back is set, from id from down to the first, until fn
// returns false or an error (which Walk returns). It decodes only the
// interactions it visits, so a page of a large cassette costs a page.
func (c *Cassette) Walk(from uint64, back bool, fn func(i *Interaction) (bool, error)) error {
	return c.st.Range(from, back, func(id uint64, v []byte) (bool, error) {
		i, err := decode(id, v)
		if err != nil {
			return false, fmt.Errorf("cassette %s: %w", c.Path(), err)
		}
		return fn(i)
	})
}

// All returns every interaction in recorded order.
func (c *Cassette) All() ([]*Interaction, error) {
	var all []*Interaction
	err := c.ForEach(func(i *Interaction) error { all = append(all, i); return nil })
	return all, err
}

// Fixture returns the raw fixture stored for a tool call id; the error wraps
// store.ErrNotFound when there is none.
func (c *Cassette) Fixture(callID string) (json.RawMessage, error) {
	v, err := c.st.Fixture(callID)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(v), nil
}

// Fixtures returns every fixture by call id.
func (c *Cassette) Fixtures() (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := c.st.Fixtures(func(id string, v []byte) error {
		out[id] = append(json.RawMessage(nil), v...)
		return nil
	})
	return out, err
}

// Contents is a whole cassette in memory, for rewriting it at once.
type Contents struct {
	Meta         store.Meta
	Interactions []*Interaction
	Fixtures     map[string]json.RawMessage
}

// Load reads the whole cassette.
func (c *Cassette) Load() (*Contents, error) {
	m, err := c.Meta()
	if err != nil {
		return nil, err
	}
	all, err := c.All()
	if err != nil {
		return nil, err
	}
	fx, err := c.Fixtures()
	if err != nil {
		return nil, err
	}
	return &Contents{Meta: m, Interactions: all, Fixtures: fx}, nil
}

// Replace rewrites the whole cassette in one transaction, renumbering
// interactions 1..n in the order given and indexing each with keys.
func (c *Cassette) Replace(ct *Contents, keys Keys) error {
	sc, err := storeContents(c.Path(), ct, keys)
	if err != nil {
		return err
	}
	return c.st.Replace(sc)
}

// storeContents renumbers ct's interactions 1..n and encodes them with
// their index keys, as store.Replace takes them; path names the cassette in
// errors. The interactions are encoded on every CPU at once: keys must be
// safe for concurrent use (a matcher's are).
func storeContents(path string, ct *Contents, keys Keys) (store.Contents, error) {
	recs := make([]store.Record, len(ct.Interactions))
	for n, i := range ct.Interactions {
		i.ID = uint64(n + 1)
	}
	n, err := parallel.Each(len(recs), func(n int) error {
		i := ct.Interactions[n]
		key, shape, err := keys(i)
		if err != nil {
			return err
		}
		if recs[n].Value, err = encode(i); err != nil {
			return err
		}
		recs[n].ID, recs[n].Key, recs[n].Shape = i.ID, key, shape
		return nil
	})
	if err != nil {
		return store.Contents{}, fmt.Errorf("cassette %s: interaction %d: %w", path, n+1, err)
	}
	fx := make(map[string][]byte, len(ct.Fixtures))
	for id, v := range ct.Fixtures {
		if id == "" {
			return store.Contents{}, fmt.Errorf("cassette %s: fixture with an empty call id: %w", path, ErrIncomplete)
		}
		fx[id] = v
	}
	return store.Contents{Records: recs, Fixtures: fx, Meta: ct.Meta}, nil
}

// IsNotFound reports whether err means a missing interaction or fixture.
func IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
