package store

import "os"

// windowBytes is how much of the file the page walk maps at once.
const windowBytes = 4 << 20

// A window is a read-only map of part of the file, which the page walk
// moves forward through the file as it reads each level in page order,
// and unmaps when it ends: the walk maps at most windowBytes of the file
// at once (a run is smaller), and leaves none of it mapped.
// Reading a page through the map costs a share of a fault (the kernel maps
// the pages around the one a read faults in) and no copy; the walk of a
// 100 000-interaction cassette, whose leaves it reads one page at a time,
// took about a third less CPU than with ReadAt, most of whose cost was the
// copy out of the page cache. A window is moved only between runs, so the
// slices of it that a page's checks hold stay valid while they run.
type window struct {
	fd   uintptr
	size int64  // the file's
	off  int64  // where b starts in the file
	b    []byte // nil when nothing is mapped
	maps int    // how many times it was mapped
}

// walkReadAt makes the walk read the file with ReadAt, as it does where
// the system does not map files; only tests set it.
var walkReadAt bool

// newWindow returns a window on f, nil where the system does not map files.
func newWindow(f *os.File, size int64) *window {
	if !mapsFiles || walkReadAt {
		return nil
	}
	return &window{fd: f.Fd(), size: size}
}

// at returns the mapped bytes from off to the end of the window, if the
// window holds at least n of them.
func (m *window) at(off int64, n uint64) ([]byte, bool) {
	if m == nil || m.b == nil || off < m.off || uint64(off-m.off)+n > uint64(len(m.b)) {
		return nil, false
	}
	return m.b[off-m.off:], true
}

// move maps the window anew to hold the n bytes at off (inside the file),
// and returns them as at does. Slices of the window's bytes from before
// are no longer valid.
func (m *window) move(off int64, n uint64) ([]byte, error) {
	m.close()
	start := off &^ int64(os.Getpagesize()-1)
	end := min(max(off+int64(n), start+windowBytes), m.size)
	b, err := mapFile(m.fd, start, int(end-start))
	if err != nil {
		return nil, err
	}
	m.off, m.b = start, b
	m.maps++
	return m.b[off-m.off:], nil
}

// close unmaps the window.
func (m *window) close() {
	if m != nil && m.b != nil {
		_ = unmapFile(m.b)
		m.b = nil
	}
}
