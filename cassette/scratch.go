package cassette

import (
	"fmt"
	"os"
)

// Scratch opens a private, writable copy of the open cassette c: a file
// created beside c's path (see Create) and unlinked at once, holding c's
// interactions (their ids kept), index, fixtures and metadata in the
// current store format. Its Path is c's, so that logs and messages name
// the cassette the run is about. Nothing but the returned Cassette can reach it:
// whatever is written to it is gone once it is closed or the process
// dies, and c's file is never written. A run that must leave the old file
// as it was until it has finished (auto --refresh) records into a scratch
// copy and writes the outcome with WriteFile.
func (c *Cassette) Scratch(opts Options) (*Cassette, error) {
	opts.Overwrite = false
	d, err := Create(c.Path(), opts)
	if err != nil {
		return nil, err
	}
	defer d.Discard()
	if err := c.st.CopyTo(d.st, upgrade, 0); err != nil {
		return nil, fmt.Errorf("cassette %s: copying: %w", c.Path(), err)
	}
	if err := os.Remove(d.Cassette.Path()); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", c.Path(), err)
	}
	d.done = true // the open file is the caller's now; Discard leaves it
	d.Cassette.name = c.Path()
	return d.Cassette, nil
}
