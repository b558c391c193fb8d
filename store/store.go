package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
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

// Meta is a cassette's metadata.
type Meta struct {
	FormatVersion int       `json:"format_version"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	Version       string    `json:"llmproxy_version"`
	// IndexRules identifies the matching settings the index was built with.
	// The store does not interpret it; a reader with other settings must build
	// its own index.
	IndexRules string `json:"index_rules"`
}

// Record is one interaction as the store sees it: opaque bytes with the keys
// it is indexed under.
type Record struct {
	ID    uint64
	Key   string // match key: the exact-lookup index
	Shape string // coarse request shape: the miss-diagnostics index
	Value []byte
}

// Contents is everything Replace writes.
type Contents struct {
	Records  []Record          // written with the ids they carry, which must be 1..n in order
	Fixtures map[string][]byte // call id → fixture
	Meta     Meta              // written as is, except FormatVersion, which is always FormatVersion
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

// callbackPanic carries a panic raised by a caller's function out through
// guard, which must not report it as a damaged file.
type callbackPanic struct{ v any }

// guard runs fn, which reads or writes the bbolt file, and turns a panic
// inside bbolt — its answer to a corrupt page — into an error wrapping
// ErrCorrupt that names the file and the operation. bbolt rolls the
// transaction back as the panic passes, so nothing is written.
func (s *Store) guard(op string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if cp, ok := r.(callbackPanic); ok {
				panic(cp.v)
			}
			err = fmt.Errorf("cassette %s: %s: %v: %w", s.path, op, r, ErrCorrupt)
		}
	}()
	return fn()
}

// view runs a read transaction under guard.
func (s *Store) view(op string, fn func(tx *bolt.Tx) error) error {
	return s.guard(op, func() error { return s.db.Load().View(fn) })
}

// callback runs a caller's function inside a transaction, marking its panic
// as the caller's own.
func callback(fn func() error) error {
	defer func() {
		if r := recover(); r != nil {
			panic(callbackPanic{r})
		}
	}()
	return fn()
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

// putMeta writes the metadata as given, format version included.
func putMeta(tx *bolt.Tx, m Meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyMeta, b)
}

func getMeta(tx *bolt.Tx) (Meta, error) {
	var m Meta
	err := json.Unmarshal(tx.Bucket(bucketMeta).Get(keyMeta), &m)
	return m, err
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

// Meta returns the cassette's metadata.
func (s *Store) Meta() (Meta, error) {
	var m Meta
	err := s.view("read", func(tx *bolt.Tx) error {
		var err error
		m, err = getMeta(tx)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("cassette %s: metadata: %w", s.path, err)
	}
	return m, nil
}

// SetIndexRules records the matching settings the index is built with. It
// is meant for an empty cassette; Replace changes it for a full one.
func (s *Store) SetIndexRules(rules string) error {
	return s.update(func(tx *bolt.Tx) error {
		m, err := getMeta(tx)
		if err != nil {
			return err
		}
		m.IndexRules = rules
		if tx.Bucket(bucketInteractions).Sequence() == 0 {
			m.FormatVersion = FormatVersion // nothing stored in an older form
		}
		return putMeta(tx, m)
	})
}

func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("cassette %s: %w", s.path, ErrReadOnly)
	}
	s.swapMu.RLock()
	defer s.swapMu.RUnlock()
	return s.guard("write", func() error {
		if err := s.db.Load().Update(fn); err != nil {
			return fmt.Errorf("cassette %s: %w", s.path, err)
		}
		return nil
	})
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

// A Pending is one interaction for AppendAll, before it has an id.
type Pending struct {
	Key, Shape string
	// Encode is given the new id and returns the bytes to store.
	Encode func(id uint64) ([]byte, error)
}

// An Appended is the outcome of one Pending: its id, or why it was not
// stored.
type Appended struct {
	ID  uint64
	Err error
}

// AppendAll stores interactions in order, with consecutive ids, in one
// transaction: one pair of disk syncs for the lot. One whose Encode fails
// is left out (its Appended holds the error, and it takes no id); the
// others are stored. An error from the transaction itself stores none of
// them.
//
// In a store opened with Options.Overwrite, the first AppendAll that stores
// an interaction first removes the old contents, in the same transaction.
func (s *Store) AppendAll(recs []Pending) ([]Appended, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if !s.reset { // a reset leaves no record in the old format
		if err := s.upgradeFile(); err != nil {
			return nil, err
		}
	}
	res := make([]Appended, len(recs))
	err := s.update(func(tx *bolt.Tx) error {
		if s.reset {
			if err := clearContents(tx, s.now().UTC()); err != nil {
				return err
			}
		}
		m, err := getMeta(tx)
		if err != nil {
			return err
		}
		b := tx.Bucket(bucketInteractions)
		ib, sb := tx.Bucket(bucketIndex), tx.Bucket(bucketShapes)
		seq := b.Sequence()
		for k, r := range recs {
			id := seq + 1
			var value []byte
			if err := callback(func() (err error) { value, err = r.Encode(id); return err }); err != nil {
				res[k] = Appended{Err: fmt.Errorf("cassette %s: append: %w", s.path, err)}
				continue
			}
			if err := b.Put(idKey(id), value); err != nil {
				return err
			}
			if err := ib.Put(indexKey(r.Key, id), nil); err != nil {
				return err
			}
			if err := sb.Put(indexKey(r.Shape, id), nil); err != nil {
				return err
			}
			seq = id
			res[k] = Appended{ID: id}
		}
		if seq == b.Sequence() {
			return errNoneStored // nothing to commit
		}
		if err := b.SetSequence(seq); err != nil {
			return err
		}
		m.FormatVersion, m.Updated = FormatVersion, s.now().UTC()
		return putMeta(tx, m)
	})
	if err != nil && !errors.Is(err, errNoneStored) {
		return nil, err
	}
	if err == nil {
		s.reset = false
	}
	return res, nil
}

// CopyBatch is about how many bytes CopyTo writes into its destination in
// one transaction: bbolt holds every page a transaction writes in memory
// until its commit, so this, not the cassette's size, bounds the memory a
// copy takes (about twice this, for the records and their pages).
const CopyBatch = 8 << 20

// CopyTo writes the whole cassette into dst: every record as convert
// returns it, both indexes and the fixtures as they are, and last the
// metadata (index rules included) stamped with FormatVersion. What dst
// held before is removed. It is how a cassette of an older format is
// rewritten without recomputing its index: the keys stay those it was
// built with.
//
// dst is written as a Fill: in transactions of about batch bytes each
// (CopyBatch when batch is not positive), so that memory holds one batch
// however large the cassette. Until CopyTo returns, dst holds a part of
// the contents and no metadata (it opens as no cassette), and a CopyTo
// that fails leaves it so: dst must be a draft, a file that is put in
// place only once whole, and discarded otherwise.
func (s *Store) CopyTo(dst *Store, convert func(id uint64, old []byte) ([]byte, error), batch int64) error {
	if batch <= 0 {
		batch = CopyBatch
	}
	return s.view("read", func(src *bolt.Tx) error {
		f, err := dst.Fill()
		if err != nil {
			return err
		}
		// The source's pages read by each batch are dropped from the
		// process (they stay in the page cache, and the bytes the read
		// transaction holds stay valid: they fault in again), so that
		// what the copy holds mapped stays bounded too. No write moves
		// the source's map while its read transaction is open.
		addr, size := s.db.Load().Info().Data, src.Size()
		drop := func() { _ = dropPages(addr, size) }
		for _, name := range [][]byte{bucketInteractions, bucketIndex, bucketShapes, bucketFixtures} {
			if err := f.copyBucket(src.Bucket(name), name, bytes.Equal(name, bucketInteractions), convert, batch, drop); err != nil {
				return err
			}
		}
		m, err := getMeta(src)
		if err != nil {
			return err
		}
		m.FormatVersion = FormatVersion
		return f.finish(func(tx *bolt.Tx) error { return putMeta(tx, m) })
	})
}

// emptyBuckets replaces the interactions, both indexes and the fixtures by
// empty buckets (whose sequence, the last id, starts again at 0).
func emptyBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketInteractions, bucketIndex, bucketShapes, bucketFixtures} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return nil
}

// clearContents empties the interactions, both indexes and the fixtures,
// and makes the metadata say the cassette was created at now. The index
// rules are kept: what is appended next is indexed under them.
func clearContents(tx *bolt.Tx, now time.Time) error {
	if err := emptyBuckets(tx); err != nil {
		return err
	}
	m, err := getMeta(tx)
	if err != nil {
		return err
	}
	m.Created, m.Updated = now, now
	return putMeta(tx, m)
}

// errNoneStored rolls back an AppendAll that stored nothing.
var errNoneStored = errors.New("no interaction to store")

// Get returns the interaction with the given id.
func (s *Store) Get(id uint64) ([]byte, error) {
	var v []byte
	if s.values != nil {
		err := s.Read(func(tx *Tx) error {
			got, err := tx.Get(id)
			v = bytes.Clone(got)
			return err
		})
		return v, err
	}
	err := s.view("read", func(tx *bolt.Tx) error {
		got := tx.Bucket(bucketInteractions).Get(idKey(id))
		if got == nil {
			return ErrNotFound
		}
		v = bytes.Clone(got)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cassette %s: interaction %d: %w", s.path, id, err)
	}
	s.res.read(len(v))
	return v, nil
}

// Lookup returns, in recorded order, the ids of the interactions indexed under
// the match key. Its cost does not grow with the size of the cassette.
func (s *Store) Lookup(key string) ([]uint64, error) {
	return s.seek(bucketIndex, key)
}

// Shape returns, in recorded order, the ids of the interactions with the
// given coarse request shape.
func (s *Store) Shape(shape string) ([]uint64, error) {
	return s.seek(bucketShapes, shape)
}

func (s *Store) seek(bucket []byte, key string) ([]uint64, error) {
	var ids []uint64
	err := s.view("read", func(tx *bolt.Tx) error {
		ids = seek(tx, bucket, key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cassette %s: %w", s.path, err)
	}
	s.res.lookup()
	return ids, nil
}

// seek returns the ids an index bucket holds under key, in recorded order.
func seek(tx *bolt.Tx, bucket []byte, key string) []uint64 {
	return seekIn(tx.Bucket(bucket), key)
}

// seekIn is seek in an open bucket.
func seekIn(b *bolt.Bucket, key string) []uint64 {
	var ids []uint64
	var buf [80]byte
	prefix := appendIndexPrefix(buf[:0], key)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 {
			ids = append(ids, binary.BigEndian.Uint64(k[len(prefix):]))
		}
	}
	return ids
}

// A Tx is one read transaction of the store (see Read).
type Tx struct {
	tx   *bolt.Tx
	path string
	res  *resident
	// values, in a read-only store that has them, locates the values Get
	// reads from file, into buf (reused by the next Read).
	values *valueTable
	file   *os.File
	buf    []byte
	// index and interactions are the transaction's buckets, opened once;
	// nil until first used.
	index, interactions *bolt.Bucket
}

// bucket returns the transaction's bucket named name, opening it once.
func (t *Tx) bucket(b **bolt.Bucket, name []byte) *bolt.Bucket {
	if *b == nil {
		*b = t.tx.Bucket(name)
	}
	return *b
}

// Read runs fn in one read transaction. The bytes a Tx returns are the
// file's mapped pages, or in a read-only store the values Get read into
// the transaction's buffer: valid only until fn returns, and never to be
// changed. While fn runs, a write of this process that must grow the file
// (and with it the memory map) waits for fn to return; no other write
// waits. A damaged page that a Tx method meets is its error, wrapping
// ErrCorrupt; any other panic in fn is fn's own, passed on.
//
// In a read-only store, which no process can write while it is open, a
// transaction is not begun for each Read: Read takes one that an earlier
// Read ended, with its buckets already open, and gives it back after fn.
// There are never more of them than Reads running at once, and Close ends
// them all.
func (s *Store) Read(fn func(tx *Tx) error) error {
	if !s.readOnly {
		return s.view("read", func(tx *bolt.Tx) error {
			return callback(func() error { return fn(&Tx{tx: tx, path: s.path, res: &s.res}) })
		})
	}
	var (
		t    *Tx
		keep bool
	)
	defer func() {
		if t != nil {
			// A transaction that met a damaged page, or whose fn failed or
			// panicked, is ended rather than kept.
			s.txs.put(t, keep)
		}
	}()
	err := s.guard("read", func() error {
		var err error
		if t, err = s.txs.get(s.db.Load()); err != nil {
			return err
		}
		t.path, t.res, t.values, t.file = s.path, &s.res, s.values, s.file
		return callback(func() error { return fn(t) })
	})
	keep = err == nil
	return err
}

// txPool holds the idle read transactions of a read-only store.
type txPool struct {
	mu     sync.Mutex
	idle   []*Tx
	closed bool
}

// get returns an idle transaction, or begins one.
func (p *txPool) get(db *bolt.DB) (*Tx, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 && !p.closed {
		t := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return t, nil
	}
	p.mu.Unlock()
	tx, err := db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &Tx{tx: tx}, nil
}

// put gives t back for reuse if keep is set and the pool is open, and
// otherwise ends it.
func (p *txPool) put(t *Tx, keep bool) {
	p.mu.Lock()
	if keep && !p.closed {
		t.reuse()
		p.idle = append(p.idle, t)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = t.tx.Rollback()
}

// close ends the idle transactions; a transaction in use is ended when it
// is given back.
func (p *txPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, t := range idle {
		_ = t.tx.Rollback()
	}
}

// read runs a read of the transaction's pages, and turns bbolt's panic on
// a damaged page (or a fault on the memory map, which guard makes a
// panic) into an error naming the file and what was read.
// what names the read, and is called only for that error.
func (t *Tx) read(what func() string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cassette %s: %s: %v: %w", t.path, what(), r, ErrCorrupt)
		}
	}()
	return fn()
}

// Lookup returns, in recorded order, the ids indexed under a match key.
func (t *Tx) Lookup(key string) (ids []uint64, err error) {
	err = t.read(func() string { return "index" }, func() error { ids = seekIn(t.bucket(&t.index, bucketIndex), key); return nil })
	t.res.lookup()
	return ids, err
}

// Get returns the stored record of an interaction: the file's own mapped
// bytes, or, in a read-only store, a copy read from the file (see
// valueTable), in a buffer of the transaction that a later Read reuses.
// Either is valid only until the Read's fn returns, and never to be
// changed.
func (t *Tx) Get(id uint64) (v []byte, err error) {
	if t.values != nil {
		return t.readValue(id)
	}
	err = t.read(func() string { return fmt.Sprint("interaction ", id) }, func() error {
		if v = t.bucket(&t.interactions, bucketInteractions).Get(idKey(id)); v == nil {
			return fmt.Errorf("cassette %s: interaction %d: %w", t.path, id, ErrNotFound)
		}
		return nil
	})
	t.res.read(len(v))
	return v, err
}

// Len is the number of interactions.
func (s *Store) Len() (int, error) {
	var n int
	err := s.view("read", func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketInteractions).Stats().KeyN
		return nil
	})
	return n, err
}

// ForEach calls fn for each interaction in recorded order, in one read
// transaction; value is only valid during the call. An error from fn stops
// the walk and is returned.
func (s *Store) ForEach(fn func(id uint64, value []byte) error) error {
	return s.view("read", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInteractions).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("cassette %s: corrupt interaction key %x", s.path, k)
			}
			s.res.read(len(v))
			return callback(func() error { return fn(binary.BigEndian.Uint64(k), v) })
		})
	})
}

// Last returns the id of the newest interaction, 0 when there is none.
// Ids count from 1 with no gaps, so it is also their number, found without
// walking the file (Len walks it).
func (s *Store) Last() (uint64, error) {
	var id uint64
	err := s.view("read", func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketInteractions).Cursor().Last(); len(k) == 8 {
			id = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return id, err
}

// Range calls fn for the interactions from id from onwards in recorded
// order, or, when back is set, from id from down to the first, in one read
// transaction; value is only valid during the call. The walk stops when fn
// returns false or an error (which Range returns). Its cost is that of the
// interactions visited, whatever the size of the cassette.
func (s *Store) Range(from uint64, back bool, fn func(id uint64, value []byte) (bool, error)) error {
	return s.view("read", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketInteractions).Cursor()
		k, v := c.Seek(idKey(from))
		if back && (k == nil || binary.BigEndian.Uint64(k) > from) {
			if k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = step(c, back) {
			if len(k) != 8 {
				return fmt.Errorf("cassette %s: corrupt interaction key %x", s.path, k)
			}
			s.res.read(len(v))
			var more bool
			err := callback(func() (err error) {
				more, err = fn(binary.BigEndian.Uint64(k), v)
				return err
			})
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// step moves a cursor one key forwards, or backwards when back is set.
func step(c *bolt.Cursor, back bool) ([]byte, []byte) {
	if back {
		return c.Prev()
	}
	return c.Next()
}

// Fixture returns the fixture stored for a tool call id.
func (s *Store) Fixture(callID string) ([]byte, error) {
	var v []byte
	err := s.view("read", func(tx *bolt.Tx) error {
		got := tx.Bucket(bucketFixtures).Get([]byte(callID))
		if got == nil {
			return ErrNotFound
		}
		v = bytes.Clone(got)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cassette %s: fixture %q: %w", s.path, callID, err)
	}
	s.res.read(len(v))
	return v, nil
}

// Fixtures calls fn for each fixture in call id order; v is only valid during
// the call.
func (s *Store) Fixtures(fn func(callID string, v []byte) error) error {
	return s.view("read", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketFixtures).ForEach(func(k, v []byte) error {
			return callback(func() error { return fn(string(k), v) })
		})
	})
}

// Replace rewrites the whole cassette — interactions, both indexes, fixtures
// and metadata — in one transaction: a reader or a crash sees the old
// contents or the new, never a mix.
func (s *Store) Replace(c Contents) error {
	for i, r := range c.Records {
		if r.ID != uint64(i+1) {
			return fmt.Errorf("cassette %s: replace: record %d has id %d, want %d", s.path, i, r.ID, i+1)
		}
	}
	return s.update(func(tx *bolt.Tx) error {
		if err := emptyBuckets(tx); err != nil {
			return err
		}
		// Every bucket is written in key order, so its pages are filled
		// whole before they split (bbolt's default leaves them half
		// empty, for inserts in the middle): fewer pages to write, and to
		// check at open.
		ib := tx.Bucket(bucketInteractions)
		ib.FillPercent = 1.0
		for _, r := range c.Records {
			if err := ib.Put(idKey(r.ID), r.Value); err != nil {
				return err
			}
		}
		// bbolt splits nodes only at commit, so a transaction's puts into
		// one bucket go into one growing node: in random key order (match
		// keys are hashes) each put shifts half of it, which made a
		// 100 000-interaction Replace take a minute. In key order they append.
		keys := make([][]byte, len(c.Records))
		for _, idx := range []struct {
			bucket []byte
			key    func(Record) string
		}{{bucketIndex, func(r Record) string { return r.Key }}, {bucketShapes, func(r Record) string { return r.Shape }}} {
			for i, r := range c.Records {
				keys[i] = indexKey(idx.key(r), r.ID)
			}
			slices.SortFunc(keys, bytes.Compare)
			b := tx.Bucket(idx.bucket)
			b.FillPercent = 1.0
			for _, k := range keys {
				if err := b.Put(k, nil); err != nil {
					return err
				}
			}
		}
		if err := ib.SetSequence(uint64(len(c.Records))); err != nil {
			return err
		}
		fb := tx.Bucket(bucketFixtures)
		for id, v := range c.Fixtures {
			if err := fb.Put([]byte(id), v); err != nil {
				return err
			}
		}
		c.Meta.FormatVersion = FormatVersion
		return putMeta(tx, c.Meta)
	})
}
