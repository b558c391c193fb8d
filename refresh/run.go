package refresh

import (
	"errors"
	"fmt"
	"os"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/store"
)

// ErrNothingToRefresh means the cassette to refresh does not exist.
var ErrNothingToRefresh = errors.New("nothing to refresh")

// A Run is a refresh under way on one cassette file: the old file held
// open with the writer's lock (opening an existing cassette writes
// nothing), which keeps every other writer, another refresh included, out
// until the run ends, and the scratch copy (Scratch) the proxy replays
// from and records into.
type Run struct {
	path string
	old  *cassette.Cassette
	// Scratch is the private copy to serve; its file has no name.
	Scratch *cassette.Cassette
	last    uint64 // the old last id: later ones were recorded in the run
}

// Start begins the refresh of the cassette at path. A cassette that does
// not exist wraps ErrNothingToRefresh, an empty file store.ErrNotCassette;
// one another process is writing is the open's error (store.ErrLocked).
func Start(path string, opts cassette.Options) (*Run, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("cassette %s does not exist: record it first (auto or record without --refresh): %w", path, ErrNothingToRefresh)
	case err != nil:
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	case st.Size() == 0:
		// Opened for writing, bbolt would make a new cassette of it.
		return nil, fmt.Errorf("cassette %s: empty file: %w", path, store.ErrNotCassette)
	}
	opts.ReadOnly, opts.Overwrite = false, false
	old, err := cassette.Open(path, opts)
	if err != nil {
		return nil, err
	}
	last, err := old.Last()
	if err == nil {
		var scratch *cassette.Cassette
		if scratch, err = old.Scratch(opts); err == nil {
			return &Run{path: path, old: old, Scratch: scratch, last: last}, nil
		}
	}
	old.Close()
	return nil, err
}

// Path is the cassette's path.
func (r *Run) Path() string { return r.path }

// Finish plans the refresh from what the scratch copy holds once every
// recording of the run is written (used tells the old interactions the run
// replayed whole), and, when the plan changes anything, writes it over the
// old file in one atomic rewrite, indexed by x. The run stays open: Close
// it after.
func (r *Run) Finish(used func(id uint64) bool, prune bool, x *cassette.Indexer, opts cassette.Options) (*Plan, error) {
	ct, err := r.Scratch.Load()
	if err != nil {
		return nil, fmt.Errorf("refresh %s: %w", r.path, err)
	}
	p := New(ct, r.last, used, prune)
	if !p.Changed() {
		return p, nil
	}
	ct.Interactions = p.Interactions
	ct.Meta.IndexRules = x.Fingerprint()
	opts.ReadOnly, opts.Overwrite = false, false
	if err := cassette.WriteFile(r.path, ct, x.Keys, opts); err != nil {
		return nil, fmt.Errorf("refresh: %w", err)
	}
	return p, nil
}

// Close closes the scratch copy (its recordings, unless Finish wrote
// them, are gone with it) and the old file.
func (r *Run) Close() error {
	return errors.Join(r.Scratch.Close(), r.old.Close())
}
