package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FormatVersion is the cassette format this package writes. Open refuses a
// cassette whose metadata names a larger one. The store does not read the
// records; the format version says which form its caller stored them in:
// 1, a JSON document each; 2, package cassette's binary record. An older
// file is upgraded by its first append (see Options.Upgrade) or by a
// Replace, which writes every record anew.
const FormatVersion = 2

// maxMapSize bounds Options.MapSize: a larger map is not asked for, and
// none on a 32-bit system, whose address space a large map could exhaust.
const maxMapSize = (1<<40 - 1) * (strconv.IntSize / 64)

// DefaultLockTimeout is how long a writer waits for another writer's lock
// when Options.LockTimeout is zero.
const DefaultLockTimeout = 5 * time.Second

var (
	bucketMeta         = []byte("meta")
	bucketInteractions = []byte("interactions")
	bucketIndex        = []byte("index")
	bucketShapes       = []byte("shapes")
	bucketFixtures     = []byte("fixtures")
	keyMeta            = []byte("meta")
)

// Options configure Open. A nil *Options means the zero value: a writable
// store, DefaultLockTimeout, time.Now as the clock.
type Options struct {
	// ReadOnly opens the file with a shared lock; writes fail with ErrReadOnly.
	// The file must exist.
	ReadOnly bool
	// LockTimeout bounds the wait for another process's lock; zero means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// Version is the llmproxy version recorded in new metadata.
	Version string
	// Now is the clock used for created/updated times; nil means time.Now.
	Now func() time.Time
	// Overwrite starts the cassette afresh, lazily: the first AppendAll
	// that stores an interaction removes, in its own transaction, every
	// earlier interaction, index entry and fixture, and resets the created
	// time. Until then the old contents stay readable, and a process that
	// ends before that write leaves them as they were.
	Overwrite bool
	// ResidentLimit bounds, in a read-only store, the bytes of the file
	// that reads leave mapped in the process: each time reads have touched
	// about that many, the file's pages are dropped from the process (they
	// stay in the system's page cache), so what stays mapped is a few times
	// the limit at most, whatever the file's size. A file no larger than
	// four times the limit stays mapped whole: dropping its pages would
	// hold no less. Zero means DefaultResidentLimit; negative, no bound. A
	// writable store does not drop pages. (A read-only store's Get reads
	// values with pread, leaving them unmapped; what the limit bounds is
	// what ForEach, Range and index lookups touch.)
	ResidentLimit int64
	// MapSize, when larger than the file, is the size a writer maps at
	// open: the size the file is expected to reach. bbolt maps the file
	// again each time a commit outgrows the map, copying every node of the
	// transaction each time, which made one Replace of 100 000 interactions
	// spend seconds in copies; a map that is large enough from the start
	// never moves. It reserves address space, not memory.
	MapSize int64
	// Upgrade converts a record stored in an older format version into the
	// current one. The first AppendAll into a cassette of an older format
	// first rewrites the whole file with it, as a new file written in
	// batches and renamed over the old one (memory stays bounded; a crash
	// leaves the old file or the whole new one), then appends. Nil means
	// an older cassette cannot be appended to (ErrFormatVersion).
	Upgrade func(id uint64, old []byte) ([]byte, error)
}

// Records passed to Replace and AppendAll must be in the current format
// version's form: both stamp FormatVersion.

// Store is an open cassette file. Its methods are safe for concurrent use.
type Store struct {
	// db is the open bbolt file: replaced once, by the file an append's
	// upgrade writes (see upgradeFile), whose old one is then retired.
	db      atomic.Pointer[bolt.DB]
	retired *bolt.DB
	// swapMu keeps writes off the file while upgradeFile replaces it.
	swapMu   sync.RWMutex
	path     string
	readOnly bool
	now      func() time.Time

	// appendMu orders AppendAll calls, so that the one that clears a
	// cassette opened with Options.Overwrite is the only one to, and no
	// other append can slip in between its commit and clearing the flag.
	appendMu sync.Mutex
	reset    bool // Options.Overwrite, until the first append
	upgrade  func(id uint64, old []byte) ([]byte, error)
	// current is set, under appendMu, once an append found the file in
	// the current format: no write of this store makes it older, and no
	// other process writes it, so later appends need not read its
	// metadata again.
	current bool

	res resident // for a read-only store: bounds what stays mapped
	txs txPool   // for a read-only store: the read transactions Read reuses
	// values, in a read-only store opened with the page walk, locates the
	// interactions' values in file, which Tx.Get reads them from.
	values *valueTable
	file   *os.File
}

// Open opens the cassette at path, creating it unless opts.ReadOnly.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReadOnly {
		st, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("open cassette %s: %w", path, ErrMissing)
			}
			return nil, fmt.Errorf("open cassette %s: %w", path, err)
		}
		if st.Size() == 0 {
			// bbolt would try to initialise it, and fail on a read-only file.
			return nil, fmt.Errorf("open cassette %s: empty file: %w", path, ErrNotCassette)
		}
	}
	bo := &bolt.Options{Timeout: o.LockTimeout, ReadOnly: o.ReadOnly}
	if !o.ReadOnly && o.MapSize > 0 && o.MapSize <= maxMapSize {
		bo.InitialMmapSize = int(o.MapSize)
	}
	db, opened, err := openBolt(path, bo, true)
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("open cassette %s: another process holds it (waited %s): %w", path, o.LockTimeout, ErrLocked)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum),
			strings.HasPrefix(err.Error(), "file size too small"): // bbolt has no sentinel for a truncated file
			return nil, fmt.Errorf("open cassette %s: %v: %w", path, err, ErrNotCassette)
		case errors.Is(err, ErrCorrupt):
			return nil, fmt.Errorf("open cassette %s: %w", path, err)
		}
		return nil, fmt.Errorf("open cassette %s: %w", path, err)
	}
	s := &Store{path: path, readOnly: o.ReadOnly, now: o.Now, reset: o.Overwrite && !o.ReadOnly, upgrade: o.Upgrade}
	s.db.Store(db)
	if o.ReadOnly {
		s.values, s.file = opened.values, opened.file
	}
	if err := s.init(o.Version); err != nil {
		db.Close()
		return nil, err
	}
	if o.ReadOnly && o.ResidentLimit >= 0 {
		s.res.limit = o.ResidentLimit
		if s.res.limit == 0 {
			s.res.limit = DefaultResidentLimit
		}
		info := db.Info()
		s.res.addr, s.res.page = info.Data, int64(info.PageSize)
		if s.values != nil {
			s.res.valuesApart(s.values.pageBytes)
		}
	}
	return s, nil
}

// openBolt is bolt.Open for a file that may be damaged: bbolt panics (or
// faults on its memory map) when a page it reads is corrupt, and that panic
// is returned as an error wrapping ErrCorrupt, with the file closed.
//
// With walk set, walkPages checks the whole file before bbolt reads any
// page beyond the metas: a file whose pages would make bbolt loop for ever,
// allocate without bound, fault or read the wrong key is refused with
// ErrCorrupt. The walk reads the file, not bbolt's memory map, so that
// only the pages a process serves become resident in it. The walk runs in
// the OpenFile hook, once the file's lock is taken (by lockFile, on the
// descriptor bbolt then locks again), because bolt.Open itself loads a
// writer's freelist: it reads the freelist page or, when the file keeps
// none, walks the whole tree. Where lockFile cannot take bbolt's lock
// first, the walk runs as soon as bolt.Open returns, which covers the tree
// but not a writer's freelist load.
//
// For a read-only file, the walk also locates the interactions' values
// (see valueTable); openBolt returns their table with the file it is
// for.
func openBolt(path string, opts *bolt.Options, walk bool) (db *bolt.DB, o opened, err error) {
	var f *os.File
	walked := !walk || skipPageWalk
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		file, err := os.OpenFile(name, flag, perm)
		if err != nil || walked {
			f = file
			return file, err
		}
		locked, err := lockFirst(file, !opts.ReadOnly, opts.Timeout)
		if err != nil {
			file.Close()
			return nil, err
		}
		if locked {
			walked = true
			if o.values, err = walkPages(file, opts.ReadOnly); err != nil {
				unlock(file)
				file.Close()
				return nil, err
			}
		}
		f = file
		return file, nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if f != nil {
				// bbolt's memory map of the file, if it made one, is
				// leaked: it is out of reach. The lock and the file are not.
				unlock(f)
				f.Close()
			}
			db, o, err = nil, opened{}, fmt.Errorf("%v: %w", r, ErrCorrupt)
		}
	}()
	if db, err = bolt.Open(path, 0o644, opts); err != nil {
		return nil, opened{}, err
	}
	o.file = f
	if walked {
		return db, o, nil
	}
	if o.values, err = walkPages(f, opts.ReadOnly); err != nil {
		db.Close()
		return nil, opened{}, err
	}
	return db, o, nil
}

// opened is what openBolt found beside the bbolt file: the file bbolt
// reads, and the table of its values when the walk made one.
type opened struct {
	file   *os.File
	values *valueTable
}

// init checks the metadata, and in a writable store creates what is missing.
func (s *Store) init(version string) error {
	check := func(tx *bolt.Tx) (bool, error) {
		mb := tx.Bucket(bucketMeta)
		if mb == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty {
				return false, fmt.Errorf("open cassette %s: bbolt file without llmproxy metadata: %w", s.path, ErrNotCassette)
			}
			return false, nil
		}
		var m Meta
		if err := json.Unmarshal(mb.Get(keyMeta), &m); err != nil {
			return false, fmt.Errorf("open cassette %s: metadata: %v: %w", s.path, err, ErrNotCassette)
		}
		if m.FormatVersion > FormatVersion {
			return false, fmt.Errorf("open cassette %s: format version %d, this llmproxy reads up to %d: %w", s.path, m.FormatVersion, FormatVersion, ErrFormatVersion)
		}
		if m.FormatVersion < 1 {
			return false, fmt.Errorf("open cassette %s: format version %d: %w", s.path, m.FormatVersion, ErrNotCassette)
		}
		for _, b := range [][]byte{bucketInteractions, bucketIndex, bucketShapes, bucketFixtures} {
			if tx.Bucket(b) == nil {
				return false, fmt.Errorf("open cassette %s: bucket %q is missing: %w", s.path, b, ErrNotCassette)
			}
		}
		return true, nil
	}
	// A read transaction first: opening an existing cassette writes nothing.
	st, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("open cassette %s: %w", s.path, err)
	}
	var ready bool
	err = s.view("open", func(tx *bolt.Tx) error {
		if st.Size() < tx.Size() {
			return fmt.Errorf("open cassette %s: the file has %d bytes, its pages need %d (truncated?): %w", s.path, st.Size(), tx.Size(), ErrCorrupt)
		}
		s.res.size = tx.Size() // a reader's map covers at least these pages, and never moves
		var err error
		ready, err = check(tx)
		return err
	})
	switch {
	case err != nil:
		return err
	case ready:
		// The whole file was checked (walkPages) before bbolt read it.
		return nil
	case s.readOnly:
		return fmt.Errorf("open cassette %s: empty bbolt file: %w", s.path, ErrNotCassette)
	}
	return s.update(func(tx *bolt.Tx) error {
		ok, err := check(tx)
		if err != nil || ok {
			return err
		}
		for _, b := range [][]byte{bucketMeta, bucketInteractions, bucketIndex, bucketShapes, bucketFixtures} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create cassette %s: %w", s.path, err)
			}
		}
		now := s.now().UTC()
		return putMeta(tx, Meta{FormatVersion: FormatVersion, Created: now, Updated: now, Version: version})
	})
}

// Path is the file the store was opened from.
func (s *Store) Path() string { return s.path }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close releases the file and its lock.
func (s *Store) Close() error {
	s.txs.close()
	s.res.close()
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	err := s.db.Load().Close()
	if s.retired != nil {
		err = errors.Join(err, s.retired.Close())
	}
	if err != nil {
		return fmt.Errorf("close cassette %s: %w", s.path, err)
	}
	return nil
}

func idKey(id uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	return b[:]
}

// indexPrefix is a length-prefixed key, so that no key is a prefix of another.
func indexPrefix(key string) []byte { return appendIndexPrefix(nil, key) }

func appendIndexPrefix(b []byte, key string) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

func indexKey(key string, id uint64) []byte {
	return append(indexPrefix(key), idKey(id)...)
}
