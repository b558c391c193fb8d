package cassette

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmproxy/llmproxy/store"
)

// A Draft is a new cassette being built in a temporary file beside the path
// it is for; Commit puts it in place whole. Whoever opens the path, and
// whatever crashes, finds the file that was there before or the whole new
// one, never a part of it. Until then the draft is an ordinary open
// Cassette.
type Draft struct {
	*Cassette
	path string
	done bool
}

// Create starts a draft of the cassette at path: a file under a unique
// name, ".NAME.tmp-*", in path's directory (so that the final rename stays
// on one file system), opened writable with opts. The directory must exist.
// Nothing is at path until Commit.
func Create(path string, opts Options) (*Draft, error) {
	tmp, err := store.CreateTemp(path)
	if err != nil {
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	}
	// bbolt makes a cassette of the empty file; the name stays ours.
	opts.ReadOnly = false
	c, err := Open(tmp, opts)
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	}
	return &Draft{Cassette: c, path: path}, nil
}

// Commit closes the draft's cassette, flushes its file to disk, renames it
// over the path (replacing a file there), and flushes the directory, so
// that the new name survives a crash. On an error the draft is removed and
// the path left as it was. Commit and Discard after Commit do nothing.
func (d *Draft) Commit() error {
	if d.done {
		return nil
	}
	d.done = true
	tmp := d.Cassette.Path()
	err := d.Cassette.Close()
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, d.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cassette %s: %w", d.path, err)
	}
	if err := store.SyncDir(filepath.Dir(d.path)); err != nil {
		return fmt.Errorf("cassette %s: %w", d.path, err)
	}
	return nil
}

// Discard closes the draft's cassette and removes its file, leaving the
// path as it was. After Commit it does nothing, so it may be deferred.
func (d *Draft) Discard() {
	if d.done {
		return
	}
	d.done = true
	d.Cassette.Close()
	os.Remove(d.Cassette.Path())
}

// WriteFile writes ct, indexed with keys, as the whole cassette at path,
// replacing any file there atomically (see Draft). Interactions are
// renumbered as Replace does.
func WriteFile(path string, ct *Contents, keys Keys, opts Options) error {
	sc, err := storeContents(path, ct, keys)
	if err != nil {
		return err
	}
	opts.mapSize = mapSizeFor(sc)
	d, err := Create(path, opts)
	if err != nil {
		return err
	}
	defer d.Discard()
	if err := d.st.Replace(sc); err != nil {
		return err
	}
	if opts.beforeCommit != nil {
		if err := opts.beforeCommit(); err != nil {
			return fmt.Errorf("cassette %s: %w", path, err)
		}
	}
	return d.Commit()
}

// mapSizeFor is the map to open a new file with for contents: about the
// size they will take, with room for the indexes and the pages' slack. It
// is 0 (bbolt's default, which grows the map as the file grows) for
// contents under 32 MB, whose file bbolt would otherwise round up to the
// map's size; the map of larger ones never moves.
func mapSizeFor(sc store.Contents) int64 {
	var n int64
	for _, r := range sc.Records {
		n += int64(len(r.Value)+2*len(r.Key)+2*len(r.Shape)) + 64
	}
	for id, v := range sc.Fixtures {
		n += int64(len(id)+len(v)) + 32
	}
	if n < 32<<20 {
		return 0
	}
	return n + n/2
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// A Migration says what Migrate did.
type Migration struct {
	From, To     int // format versions; equal when the file was left as it was
	Interactions int
	Fixtures     int
}

// Migrate rewrites the cassette at path in the current store format
// (store.FormatVersion), as a whole new file put in place atomically (see
// Draft): a crash or a kill leaves the old file. Nothing but the form of
// the records changes: the interactions, fixtures, metadata and the index
// (its keys and the rules it was built under) are kept, so the cassette
// exports the same bytes and matches as before. A cassette already in the
// current format is left untouched once every record of it decoded (a
// damaged one is an error naming the interaction, ErrBadRecord); an empty
// file is store.ErrNotCassette, and stays empty. The file is held with the writer's
// lock throughout, so no recording can slip in and be lost. The new file is
// written in batches (store.CopyBatch), so memory stays bounded whatever
// the cassette's size.
func Migrate(path string, opts Options) (Migration, error) {
	return migrate(path, opts, upgrade, 0)
}

// migrate is Migrate with the records converted by convert, written in
// transactions of about batch bytes (store.CopyBatch when not positive).
func migrate(path string, opts Options, convert func(id uint64, old []byte) ([]byte, error), batch int64) (Migration, error) {
	opts.ReadOnly, opts.Overwrite = false, false
	if st, err := os.Stat(path); err != nil {
		return Migration{}, fmt.Errorf("cassette %s: %w", path, err)
	} else if st.Size() == 0 {
		// Opened for writing, bbolt would make a new cassette of it.
		return Migration{}, fmt.Errorf("cassette %s: empty file: %w", path, store.ErrNotCassette)
	}
	c, err := Open(path, opts)
	if err != nil {
		return Migration{}, err
	}
	defer c.Close()
	m, err := c.Meta()
	if err != nil {
		return Migration{}, err
	}
	// Last, not Len: the ids count from 1 with no gaps, and Len would
	// read a page of every interaction, mapping the whole file in.
	last, err := c.Last()
	if err != nil {
		return Migration{}, err
	}
	n := int(last)
	fixtures := 0
	if err := c.st.Fixtures(func(string, []byte) error { fixtures++; return nil }); err != nil {
		return Migration{}, err
	}
	mig := Migration{From: m.FormatVersion, To: m.FormatVersion, Interactions: n, Fixtures: fixtures}
	if m.FormatVersion >= store.FormatVersion {
		// A cassette is left as it was only once every record decodes.
		if err := c.ForEach(func(*Interaction) error { return nil }); err != nil {
			return Migration{}, err
		}
		return mig, nil
	}
	d, err := Create(path, opts)
	if err != nil {
		return Migration{}, err
	}
	defer d.Discard()
	if err := c.st.CopyTo(d.st, convert, batch); err != nil {
		return Migration{}, fmt.Errorf("cassette %s: %w", path, err)
	}
	if err := d.Commit(); err != nil {
		return Migration{}, err
	}
	mig.To = store.FormatVersion
	return mig, nil
}
