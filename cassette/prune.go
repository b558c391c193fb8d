package cassette

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// Prune rewrites the cassette at path without the interactions whose ids
// drop lists, and returns the listing form of those it removed, with the
// ids they had. The rest keep their order and are renumbered 1..n (as
// scrub and import renumber); the fixtures and metadata are kept, the
// index rebuilt with keys and its fingerprint recorded as rules.
//
// The new cassette is written whole beside the old one and put in its
// place at once (WriteFile), while the old file's writer lock is held, so
// that no recording slips in and is lost: a crash, a kill or a failed
// write leaves the old file as it was. An id the cassette does not hold is
// an error wrapping ErrNoInteraction that names every such id, and nothing
// is written; so is nothing to drop.
func Prune(path string, drop []uint64, keys Keys, rules string, opts Options) ([]Summary, error) {
	opts.ReadOnly, opts.Overwrite = false, false
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	} else if st.Size() == 0 {
		// Opened for writing, bbolt would make a new cassette of it.
		return nil, fmt.Errorf("cassette %s: empty file: %w", path, store.ErrNotCassette)
	}
	c, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	last, err := c.Last()
	if err != nil {
		return nil, err
	}
	gone := map[uint64]bool{}
	var missing []string
	for _, id := range drop {
		if id == 0 || id > last {
			missing = append(missing, fmt.Sprint(id))
		}
		gone[id] = true
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cassette %s holds interactions 1 to %d, not %s: %w; nothing removed", path, last, strings.Join(missing, ", "), ErrNoInteraction)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	ct, err := c.Load()
	if err != nil {
		return nil, err
	}
	var removed []Summary
	kept := ct.Interactions[:0:0]
	for _, i := range ct.Interactions {
		if gone[i.ID] {
			removed = append(removed, Summarize(i))
		} else {
			kept = append(kept, i)
		}
	}
	ct.Interactions = kept
	ct.Meta.Updated = time.Now().UTC()
	ct.Meta.IndexRules = rules
	if err := WriteFile(path, ct, keys, opts); err != nil {
		return nil, err
	}
	return removed, nil
}
