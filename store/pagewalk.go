package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"os"
	"slices"
)

// walkPages is a bounded check of a bbolt file's page tree, run before
// bbolt reads the tree, and the whole of the check at open. bbolt trusts every page reference it
// follows: a branch page (or an inline bucket claiming to be one) that
// points at itself or at one of its ancestors makes its cursor descend for
// ever, a hang that grows memory; a freelist whose count is absurd makes a
// writer's bolt.Open allocate that many ids, a fatal out-of-memory error. A
// guard cannot turn either into ErrCorrupt: neither panics.
//
// walkPages reads the file with ReadAt, level by level, into buffers of at
// most maxRunBytes (or a page with its overflow pages, when a key or bucket
// value lies in them), never through bbolt's memory map and without mapping
// it: the memory it holds does not grow with the file, and none of the file
// is mapped in the process. A read that falls short (the file cut short
// behind the lock) is ErrCorrupt. It promises: it returns, having read each
// page it reaches once (a visited set of page ids bounds the walk to the
// pages the file holds) and, in its batched reads, fewer than maxGap pages
// between two it wants, so its cost is linear in the file's size; and when it returns nil, every page bbolt can
// reach from the meta page it will use is a branch or leaf page (the
// freelist a freelist page) that names itself, lies below the high-water
// mark and inside the file with its overflow pages, is reached exactly
// once — so the page graph is a tree, without cycles or shared pages — and
// has its elements (position, key and value sizes) inside its pages;
// every inline bucket is a leaf inside its value; buckets nest at most
// maxBucketDepth deep. It also makes the checks of bbolt's Tx.Check: the
// keys of each page are in strictly ascending order, inside the range its
// parent branch element gives them; no page is freed twice; and, when the
// file keeps a freelist, every page below the high-water mark is a meta
// page, the freelist, reached from the root or free. Otherwise it returns
// an error wrapping ErrCorrupt that names the page at fault and the
// reference that led there, such as "page 12: branch element 0 points at
// page 12, an ancestor".
//
// The overflow pages of a leaf are read only for a key or a bucket value
// that lies in them: large values are bounded by their page's count, not
// read. A file that bbolt itself refuses to open (no valid meta page,
// shorter than two pages) is left to bbolt, which reports it as not a bbolt
// file.
//
// The layout is bbolt v1.5.0's (internal/common/page.go, meta.go,
// bucket.go). bbolt maps its structs straight onto the file in the
// machine's byte order, so its files are not portable across endianness
// anyway; this reader uses the machine's byte order too
// (encoding/binary.NativeEndian), so it reads exactly what bbolt reads.
//
// With values set, the walk also locates every interaction's value in the
// file (see valueTable): the table it returns is nil when values is not
// set, when the file holds no interactions bucket, or when its ids are too
// sparse for a table indexed by id.
func walkPages(f *os.File, values bool) (*valueTable, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	w := &walker{f: f, size: st.Size(), collect: values}
	if err := w.walk(); err != nil {
		return nil, err
	}
	if !values {
		return nil, nil
	}
	t := newValueTable(w.values)
	if t != nil {
		t.pageBytes = w.valuePages
	}
	return t, nil
}

// walkStats is what a walk read: the bytes, the largest buffer it read
// into, and the reads.
type walkStats struct {
	bytes   int64
	largest int
	reads   int
}

// skipPageWalk turns walkPages off; only the benchmark that measures what
// the walk costs sets it.
var skipPageWalk bool

// lockFirst is lockFile; a test replaces it to run the walk as it runs
// where bbolt's lock cannot be taken first.
var lockFirst = lockFile

const (
	pageHeaderSize   = 16 // id uint64, flags uint16, count uint16, overflow uint32
	branchElemSize   = 16 // pos uint32, ksize uint32, pgid uint64
	leafElemSize     = 16 // flags uint32, pos uint32, ksize uint32, vsize uint32
	bucketHeaderSize = 16 // root pgid uint64, sequence uint64
	// The meta follows the page header: magic, version, page size and
	// flags (uint32 each), the root bucket (bucketHeaderSize), freelist
	// pgid, high-water pgid, txid and checksum (uint64 each).
	metaSize        = 64
	metaSummedBytes = 56 // the checksum is FNV-64a over the bytes before it

	metaMagic   = 0xED0CDAED
	metaVersion = 2

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01 // a leaf element whose value is a bucket

	noFreelist = ^uint64(0) // the meta's freelist pgid when it is not synced

	// minPageSize is the least page size that holds a page header and a
	// meta; maxBucketDepth bounds the nesting of buckets (a cassette
	// nests one deep; inline buckets are not pages, so the visited set
	// does not bound them by itself).
	minPageSize    = pageHeaderSize + metaSize
	maxBucketDepth = 64
)

var le = binary.NativeEndian

type meta struct {
	pageSize          uint64
	root              uint64 // the root bucket's root page
	freelist, hwm, tx uint64
}

// parseMeta reads the meta in a page that starts at b, and reports whether
// it is valid as bbolt's Meta.Validate judges: magic, version, checksum.
func parseMeta(b []byte) (meta, bool) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(m[:metaSummedBytes])
	ok := le.Uint32(m[0:]) == metaMagic && le.Uint32(m[4:]) == metaVersion && le.Uint64(m[56:]) == h.Sum64()
	return meta{
		pageSize: uint64(le.Uint32(m[8:])),
		root:     le.Uint64(m[16:]),
		freelist: le.Uint64(m[32:]),
		hwm:      le.Uint64(m[40:]),
		tx:       le.Uint64(m[48:]),
	}, ok
}

// Page states in the visited set.
const (
	unseen   = iota
	visited  // referenced once: queued or read
	overflow // an overflow page of a page read
	metaPage // page 0 or 1
	freePage // on the freelist
)

// Reads are batched: the pages of one level of the walk are read in
// ascending order, and pages at most maxGap apart go into one ReadAt of at
// most maxRunBytes. The pages read in between are at most maxGap-1 per page
// wanted, so the bytes read stay at most twice those wanted, linear in the
// file's size, while a file written in order (as Replace writes it) is read
// in a few large reads rather than one system call per page. maxGap is 2:
// a cassette of 2 KB answers has a leaf of two values, then their overflow
// page, and so on; reading that page along costs less than a system call
// per leaf. A value of more than a page leaves a gap of more pages, which
// is not read. Runs of 128 KB cost less than of 1 MB, which no longer fit
// the processor's cache (bench/findings.md, issue 24: this read replaced a
// mapped window, whose faults and unmapping cost three times as much).
const (
	maxGap      = 2
	maxRunBytes = 128 << 10
)

type walker struct {
	f        io.ReaderAt
	size     int64
	stats    walkStats
	pageSize uint64
	hwm      uint64
	state    []uint8  // by page id, below hwm
	parent   []uint64 // by page id: the page whose reference reached it
	run      []byte   // the pages of the current run
	span     []byte   // a page with its overflow pages, when the run lacks them
	key      []byte   // a key that lies beyond what was read of its page
	prev     []byte   // the key before, on the page being checked
	next     []queued // the next level
	spare    []queued // the level before, for the one after next to reuse
	sorted   []queued // a level's slice, for sort to reuse
	slot     []int32  // by page id: for sort, zero but while it places a level
	// keys holds the bounds of the level being read; nextKeys those of the
	// next level.
	keys, nextKeys []byte
	names          [][]byte // the names of the buckets queued (see link)
	// collect asks for the place of each interaction's value, gathered in
	// values.
	collect    bool
	values     []valuePlace
	valuePages int64 // bytes of the interactions bucket's pages
}

// keep copies a key into the next level's arena.
func (w *walker) keep(k []byte) bound {
	b := bound{off: len(w.nextKeys), n: len(k)}
	w.nextKeys = append(w.nextKeys, k...)
	return b
}

// bound returns a bound of the level being read, nil if it is not set.
func (w *walker) bound(b bound) []byte {
	if b.n == 0 {
		return nil
	}
	return w.keys[b.off : b.off+b.n]
}

// readAt reads len(b) bytes at off, and counts them.
func (w *walker) readAt(b []byte, off int64) error {
	w.stats.reads++
	w.stats.bytes += int64(len(b))
	w.stats.largest = max(w.stats.largest, len(b))
	if _, err := w.f.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) {
			return corrupt("the file ends before byte %d, which its pages reach (did the file change?)", off+int64(len(b)))
		}
		return err
	}
	return nil
}

// queued is a page referenced and not yet read.
type queued struct {
	id    uint64
	depth int // of bucket nesting: the root bucket's pages are at 0
	from  link
	// The keys of the page and of the pages below it are at least lo and
	// below hi, when they are set: the range the parent branch element
	// gives them, in walker.keys.
	lo, hi bound
	// values marks the pages of the interactions bucket.
	values bool
}

// link is a ref as a queued page keeps it: without a pointer, so that a
// level of tens of thousands of pages is sorted and moved without write
// barriers, and the collector does not scan it. A bucket's name is kept in
// walker.names, at name-1.
type link struct {
	page   uint64
	elem   int
	name   int
	kind   uint8
	inline bool
}

// link makes a ref a link, keeping a copy of its bucket's name (cut to 64
// bytes, all an error message shows): the buffer it is in will be reused.
func (w *walker) link(r ref) link {
	l := link{page: r.page, elem: r.elem, kind: r.kind, inline: r.inline}
	if r.key != nil {
		w.names = append(w.names, bytes.Clone(r.key[:min(len(r.key), 64)]))
		l.name = len(w.names)
	}
	return l
}

// ref is the ref a link was made of.
func (w *walker) ref(l link) ref {
	r := ref{page: l.page, elem: l.elem, kind: l.kind, inline: l.inline}
	if l.name > 0 {
		r.key = w.names[l.name-1]
	}
	return r
}

// bound is a key kept in an arena, by its place; n == 0 (no key is empty)
// means there is none.
type bound struct{ off, n int }

// ref describes what points at a page, for the error message.
type ref struct {
	page   uint64 // the page holding the reference; for the meta, its page
	kind   uint8
	elem   int
	key    []byte // a bucket's name
	inline bool   // the reference is inside an inline bucket on page
}

const (
	refBranch = iota
	refBucket
	refMetaRoot
	refMetaFreelist
)

func (r ref) String() string {
	switch r.kind {
	case refBranch:
		return fmt.Sprintf("page %d: branch element %d", r.page, r.elem)
	case refBucket:
		k := r.key
		if len(k) > 64 {
			k = k[:64]
		}
		in := ""
		if r.inline {
			in = "inline bucket "
		}
		return fmt.Sprintf("page %d: %selement %d (bucket %q)", r.page, in, r.elem, k)
	case refMetaRoot:
		return fmt.Sprintf("meta page %d: root bucket", r.page)
	default:
		return fmt.Sprintf("meta page %d: freelist", r.page)
	}
}

// noPage is the parent of the root bucket's root page.
const noPage = ^uint64(0)

func corrupt(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrCorrupt)...)
}

func (w *walker) walk() error {
	pageSize, ok := w.pageSizeLikeBbolt()
	if !ok {
		return nil // bbolt refuses the file: no valid meta page
	}
	if pageSize < minPageSize {
		return corrupt("meta: page size %d is less than %d bytes", pageSize, minPageSize)
	}
	if uint64(w.size) < 2*pageSize {
		return nil // bbolt refuses it: "file size too small"
	}
	w.pageSize = pageSize
	var metas [2]meta
	var valid [2]bool
	var headers [2][2]uint64 // id and flags
	for i := range metas {
		b := make([]byte, pageHeaderSize+metaSize)
		if err := w.readAt(b, int64(uint64(i)*pageSize)); err != nil {
			return err
		}
		metas[i], valid[i] = parseMeta(b)
		headers[i] = [2]uint64{le.Uint64(b), uint64(le.Uint16(b[8:]))}
	}
	// bbolt's DB.meta: the meta with the higher txid if it is valid,
	// otherwise the other one.
	a, b := 0, 1
	if metas[1].tx > metas[0].tx {
		a, b = 1, 0
	}
	var which int
	switch {
	case valid[a]:
		which = a
	case valid[b]:
		which = b
	default:
		return nil // bbolt refuses the file
	}
	// bbolt's check reads both meta pages as pages: a damaged one is
	// refused even when bbolt could use the other.
	for i, h := range headers {
		if h[0] != uint64(i) {
			return corrupt("meta page %d: its header says it is page %d", i, h[0])
		}
		if f := h[1]; f != branchPageFlag && f != leafPageFlag && f != metaPageFlag && f != freelistPageFlag {
			return corrupt("meta page %d: flags %#x are not a page's", i, f)
		}
	}
	m := metas[which]
	if filePages := uint64(w.size) / pageSize; m.hwm > filePages {
		if hi, need := bits.Mul64(m.hwm, pageSize); hi == 0 {
			return corrupt("the file has %d bytes, its pages need %d (truncated?)", w.size, need)
		}
		return corrupt("the file has %d bytes, its meta counts %d pages of %d bytes", w.size, m.hwm, pageSize)
	}
	w.hwm = m.hwm
	w.state = make([]uint8, m.hwm)
	w.parent = make([]uint64, m.hwm)
	for i := uint64(0); i < 2 && i < m.hwm; i++ {
		w.state[i] = metaPage
	}
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist, ref{page: uint64(which), kind: refMetaFreelist}); err != nil {
			return err
		}
	}
	if err := w.queue(queued{id: m.root}, ref{page: uint64(which), kind: refMetaRoot}, noPage); err != nil {
		return err
	}
	if err := w.levels(); err != nil {
		return err
	}
	if m.freelist == noFreelist {
		return nil // bbolt takes every page it does not reach to be free
	}
	return w.allAccounted()
}

// allAccounted checks that every page below the high-water mark was reached
// or is free, as bbolt's check does: a page neither is lost to the file.
func (w *walker) allAccounted() error {
	first, n := uint64(0), 0
	for id, st := range w.state {
		if st == unseen {
			if n == 0 {
				first = uint64(id)
			}
			n++
		}
	}
	if n > 0 {
		return corrupt("page %d is neither reached from the root nor free (%d such pages)", first, n)
	}
	return nil
}

// pageSizeLikeBbolt finds the page size as bbolt's DB.getPageSize does: from
// the meta on page 0 if it is valid, otherwise from the first valid meta
// found at 1 KB, 2 KB, … 16 MB; failing both, bbolt assumes the OS page
// size if it could read either place, and refuses the file if not.
func (w *walker) pageSizeLikeBbolt() (uint64, bool) {
	canRead := false
	var buf [0x1000]byte
	if n, err := w.f.ReadAt(buf[:], 0); err == nil && n == len(buf) {
		canRead = true
		if m, ok := parseMeta(buf[:]); ok {
			return m.pageSize, true
		}
	}
	for i := 0; i <= 14; i++ {
		buf = [0x1000]byte{}
		pos := int64(1024) << i
		if pos >= w.size-1024 {
			break
		}
		n, err := w.f.ReadAt(buf[:], pos)
		if (err == nil && n == len(buf)) || (err == io.EOF && int64(n) == w.size-pos) {
			canRead = true
			if m, ok := parseMeta(buf[:]); ok {
				return m.pageSize, true
			}
		}
	}
	if canRead {
		return uint64(os.Getpagesize()), true
	}
	return 0, false
}

// follow checks a reference to page id, made from page holder (noPage for
// the meta), before the page is read, and marks the page visited.
func (w *walker) follow(id, holder uint64, from ref) error {
	switch {
	case id < 2:
		return corrupt("%v points at page %d, a meta page", from, id)
	case id >= w.hwm:
		return corrupt("%v points at page %d, at or beyond the high-water mark %d", from, id, w.hwm)
	}
	switch w.state[id] {
	case unseen:
		w.state[id] = visited
		w.parent[id] = holder
		return nil
	case visited:
		// A cycle, if the page is on the chain of references that led
		// here; the chain is a tree's (each page has one parent, read
		// before it), so this ends.
		for p := holder; p != noPage; p = w.parent[p] {
			if p == id {
				if holder == id {
					return corrupt("%v points at page %d, an ancestor (itself)", from, id)
				}
				return corrupt("%v points at page %d, an ancestor", from, id)
			}
		}
		return corrupt("%v points at page %d, already reached", from, id)
	case freePage:
		return corrupt("%v points at page %d, a free page", from, id)
	}
	return corrupt("%v points at page %d, already reached", from, id)
}

// queue follows a reference (from) to a branch or leaf page, made from page
// holder, and queues the page for the next level, with bounds kept in its
// arena.
func (w *walker) queue(q queued, from ref, holder uint64) error {
	if q.depth > maxBucketDepth {
		return corrupt("%v: buckets nested more than %d deep", from, maxBucketDepth)
	}
	if err := w.follow(q.id, holder, from); err != nil {
		return err
	}
	q.from = w.link(from)
	if len(w.next) == cap(w.next) {
		// Doubled, not grown by append's quarter: a level can hold tens
		// of thousands of pages.
		w.next = append(make([]queued, 0, max(64, 2*cap(w.next))), w.next...)
	}
	w.next = append(w.next, q)
	return nil
}

// levels reads the queued pages level by level, each level in ascending
// page order, in runs of nearby pages.
func (w *walker) levels() error {
	for len(w.next) > 0 {
		level := w.next
		w.next = w.spare[:0]
		w.keys, w.nextKeys = w.nextKeys, w.keys[:0]
		level = w.sort(level)
		maxRun := max(1, maxRunBytes/w.pageSize)
		for i := 0; i < len(level); {
			j := i + 1
			for j < len(level) && level[j].id-level[j-1].id <= maxGap && level[j].id-level[i].id < maxRun {
				j++
			}
			first, last := level[i].id, level[j-1].id
			run, err := w.pages(first, last)
			if err != nil {
				return fmt.Errorf("pages %d to %d: %w", first, last, err)
			}
			for _, q := range level[i:j] {
				if err := w.page(q, run[(q.id-first)*w.pageSize:]); err != nil {
					return err
				}
			}
			i = j
		}
		w.spare = level
	}
	return nil
}

// sort returns the level in ascending page order. A level's pages are
// distinct (each is reached once), so when they are dense enough in their
// range of ids they are placed by id, in time linear in the level (a
// comparison sort of the 52 000 leaves of 100 000 interactions took 8 to
// 12 ms of the walk, placing them 3). Otherwise they are sorted. The
// level's slice is reused.
func (w *walker) sort(level []queued) []queued {
	byID := func(a, b queued) int { return cmp.Compare(a.id, b.id) }
	if slices.IsSortedFunc(level, byID) {
		return level
	}
	lo, hi := level[0].id, level[0].id
	for _, q := range level {
		lo, hi = min(lo, q.id), max(hi, q.id)
	}
	if hi-lo >= 8*uint64(len(level)) {
		slices.SortFunc(level, byID)
		return level
	}
	if w.slot == nil {
		w.slot = make([]int32, w.hwm) // a level has fewer pages than 1<<31: each takes 16 bytes of its parent
	}
	for i, q := range level {
		w.slot[q.id] = int32(i) + 1
	}
	sorted := w.sorted[:0]
	if cap(sorted) < len(level) {
		sorted = make([]queued, 0, len(level))
	}
	for id := lo; id <= hi; id++ {
		if k := w.slot[id]; k != 0 {
			sorted = append(sorted, level[k-1])
			w.slot[id] = 0
		}
	}
	w.sorted = level
	return sorted
}

// pages returns the pages first to last, read with ReadAt into a buffer
// the next call reuses.
func (w *walker) pages(first, last uint64) ([]byte, error) {
	off, n := int64(first*w.pageSize), (last-first+1)*w.pageSize
	if uint64(cap(w.run)) < n {
		w.run = make([]byte, n)
	}
	run := w.run[:n]
	return run, w.readAt(run, off)
}

// header is a page's header, with what has been read of the page.
type header struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
	span     uint64 // bytes of the page with its overflow pages
	b        []byte // the page as read: at least its first page
	inline   *ref   // for an inline bucket's page, the bucket
	base     int64  // where the page starts in the file
	values   bool   // a page of the interactions bucket
}

// name names the page in an error message.
func (h *header) name() string {
	if h.inline != nil {
		return fmt.Sprintf("%v: inline bucket", *h.inline)
	}
	return fmt.Sprintf("page %d", h.id)
}

// readHeader checks the header of page id, whose bytes start b, and marks
// its overflow pages.
func (w *walker) readHeader(id uint64, b []byte) (header, error) {
	h := header{id: id, flags: le.Uint16(b[8:]), count: le.Uint16(b[10:]), overflow: le.Uint32(b[12:]), base: int64(id * w.pageSize)}
	if self := le.Uint64(b); self != id {
		return h, corrupt("page %d: its header says it is page %d", id, self)
	}
	last := id + uint64(h.overflow) // no wrap: id < hwm, and hwm counts pages of the file
	if last >= w.hwm {
		return h, corrupt("page %d: its %d overflow pages run past the high-water mark %d", id, h.overflow, w.hwm)
	}
	for p := id + 1; p <= last; p++ {
		if w.state[p] != unseen {
			return h, corrupt("page %d: its overflow page %d is also reached on its own", id, p)
		}
		w.state[p] = overflow
	}
	h.span = (1 + uint64(h.overflow)) * w.pageSize
	h.b = b[:min(uint64(len(b)), h.span)]
	return h, nil
}

// need makes sure the first n bytes of the page are in h.b (n <= h.span),
// reading the whole page with its overflow pages if the run lacks them.
func (w *walker) need(h *header, n uint64) error {
	if n <= uint64(len(h.b)) {
		return nil
	}
	if uint64(cap(w.span)) < h.span {
		w.span = make([]byte, h.span)
	}
	b := w.span[:h.span]
	if err := w.readAt(b, int64(h.id*w.pageSize)); err != nil {
		return fmt.Errorf("page %d: %w", h.id, err)
	}
	h.b = b
	return nil
}

// keyAt returns the n bytes at offset off of the page (off+n <= h.span):
// from what was read of it, or read alone when they lie beyond, into a
// buffer the next call reuses. An inline bucket's page is all read.
func (w *walker) keyAt(h *header, off, n uint64) ([]byte, error) {
	if off+n <= uint64(len(h.b)) {
		return h.b[off : off+n], nil
	}
	if uint64(cap(w.key)) < n {
		w.key = make([]byte, n)
	}
	b := w.key[:n]
	if err := w.readAt(b, int64(h.id*w.pageSize+off)); err != nil {
		return nil, fmt.Errorf("page %d: %w", h.id, err)
	}
	return b, nil
}

// inOrder checks the key of element i of a page against the one before it
// (w.prev, when i > 0) and against the range lo..hi the parent gives the
// page, then keeps it as w.prev. kind names the element.
func (w *walker) inOrder(h *header, kind string, i int, key, lo, hi []byte) error {
	switch {
	case i > 0 && bytes.Compare(w.prev, key) >= 0:
		return corrupt("%s: %s element %d: key %s is not after the key before it, %s", h.name(), kind, i, showKey(key), showKey(w.prev))
	case i == 0 && lo != nil && bytes.Compare(key, lo) < 0:
		return corrupt("%s: %s element %d: key %s is before the range its parent gives the page, from %s", h.name(), kind, i, showKey(key), showKey(lo))
	case hi != nil && bytes.Compare(key, hi) >= 0:
		return corrupt("%s: %s element %d: key %s is not before the end of the range its parent gives the page, %s", h.name(), kind, i, showKey(key), showKey(hi))
	}
	w.prev = append(w.prev[:0], key...)
	return nil
}

// showKey is a key in an error message: hex, cut at 32 bytes.
func showKey(k []byte) string {
	if len(k) > 32 {
		return fmt.Sprintf("%x…", k[:32])
	}
	return fmt.Sprintf("%x", k)
}

// freelist checks the freelist page and the ids on it, and marks them free.
func (w *walker) freelist(id uint64, from ref) error {
	if err := w.follow(id, noPage, from); err != nil {
		return err
	}
	first := make([]byte, w.pageSize)
	if err := w.readAt(first, int64(id*w.pageSize)); err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	h, err := w.readHeader(id, first)
	if err != nil {
		return err
	}
	if h.flags != freelistPageFlag {
		return corrupt("%v points at page %d, whose flags %#x are not a freelist page's", from, id, h.flags)
	}
	// bbolt's Page.FreelistPageCount: a count of 0xFFFF means the real
	// count is the first element.
	start, count := uint64(pageHeaderSize), uint64(h.count)
	if h.count == 0xFFFF {
		count = le.Uint64(h.b[pageHeaderSize:]) // a page holds more than 24 bytes
		start += 8
	}
	if count > (h.span-start)/8 {
		return corrupt("page %d: freelist of %d ids runs past the page (%d bytes)", id, count, h.span)
	}
	if err := w.need(&h, start+8*count); err != nil {
		return err
	}
	for i := range count {
		free := le.Uint64(h.b[start+8*i:])
		if free < 2 || free >= w.hwm {
			return corrupt("page %d: freelist id %d is page %d, outside 2..%d", id, i, free, w.hwm-1)
		}
		switch w.state[free] {
		case unseen:
			w.state[free] = freePage
		case freePage:
			return corrupt("page %d: freelist id %d is page %d, freed twice", id, i, free)
		}
	}
	return nil
}

// page checks a branch or leaf page, whose bytes start b (at least its
// first page), and queues the pages it references.
func (w *walker) page(q queued, b []byte) error {
	h, err := w.readHeader(q.id, b)
	if err != nil {
		return err
	}
	h.values = q.values
	if q.values {
		w.valuePages += int64(h.span)
	}
	switch h.flags {
	case branchPageFlag:
		return w.branch(&h, q)
	case leafPageFlag:
		return w.leaf(&h, q.id, q.depth, w.bound(q.lo), w.bound(q.hi))
	}
	return corrupt("%v points at page %d, whose flags %#x are neither a branch's nor a leaf's", w.ref(q.from), q.id, h.flags)
}

// branch checks a branch page and queues its children, each with the range
// of keys from its element's key to the next element's (the last one's to
// the end of the page's own range).
func (w *walker) branch(h *header, q queued) error {
	if h.count == 0 {
		return corrupt("page %d: branch page with no elements", h.id)
	}
	n := pageHeaderSize + uint64(h.count)*branchElemSize
	if n > h.span {
		return corrupt("page %d: %d elements run past the page (%d bytes)", h.id, h.count, h.span)
	}
	if err := w.need(h, n); err != nil {
		return err
	}
	// The children's ranges share their ends: keys are kept once.
	lo, hi := w.bound(q.lo), w.bound(q.hi)
	var (
		child     queued
		childFrom ref
	)
	for i := range int(h.count) {
		off := pageHeaderSize + uint64(i)*branchElemSize
		pos, ksize := uint64(le.Uint32(h.b[off:])), uint64(le.Uint32(h.b[off+4:]))
		if ksize == 0 {
			return corrupt("page %d: branch element %d has an empty key", h.id, i)
		}
		if off+pos+ksize > h.span {
			return corrupt("page %d: branch element %d (pos %d, key %d bytes) runs past the page (%d bytes)", h.id, i, pos, ksize, h.span)
		}
		k, err := w.keyAt(h, off+pos, ksize)
		if err != nil {
			return err
		}
		if err := w.inOrder(h, "branch", i, k, lo, hi); err != nil {
			return err
		}
		key := w.keep(k)
		if i > 0 {
			child.hi = key
			if err := w.queue(child, childFrom, h.id); err != nil {
				return err
			}
		}
		child = queued{id: le.Uint64(h.b[off+8:]), depth: q.depth, lo: key, values: q.values}
		childFrom = ref{page: h.id, kind: refBranch, elem: i}
	}
	if hi != nil {
		child.hi = w.keep(hi)
	}
	return w.queue(child, childFrom, h.id)
}

// leaf checks a leaf page's elements, their keys' order and range (lo..hi,
// when not nil), and follows the buckets in it. h is a page of the file, or
// an inline bucket's page inside page holder.
func (w *walker) leaf(h *header, holder uint64, depth int, lo, hi []byte) error {
	n := pageHeaderSize + uint64(h.count)*leafElemSize
	if n > h.span {
		return corrupt("%s: %d elements run past the page (%d bytes)", h.name(), h.count, h.span)
	}
	// Every element's header must be read, and every bucket's value; the
	// rest of a leaf with overflow pages (large values) need not be.
	if err := w.need(h, n); err != nil {
		return err
	}
	for i := range uint64(h.count) {
		off := pageHeaderSize + i*leafElemSize
		if le.Uint32(h.b[off:])&bucketLeafFlag != 0 {
			n = max(n, off+uint64(le.Uint32(h.b[off+4:]))+uint64(le.Uint32(h.b[off+8:]))+uint64(le.Uint32(h.b[off+12:])))
		}
	}
	if err := w.need(h, min(n, h.span)); err != nil {
		return err
	}
	for i := range int(h.count) {
		off := pageHeaderSize + uint64(i)*leafElemSize
		flags := le.Uint32(h.b[off:])
		pos, ksize, vsize := uint64(le.Uint32(h.b[off+4:])), uint64(le.Uint32(h.b[off+8:])), uint64(le.Uint32(h.b[off+12:]))
		if ksize == 0 {
			return corrupt("%s: leaf element %d has an empty key", h.name(), i)
		}
		if off+pos+ksize+vsize > h.span {
			return corrupt("%s: leaf element %d (pos %d, key %d bytes, value %d bytes) runs past the page (%d bytes)", h.name(), i, pos, ksize, vsize, h.span)
		}
		k, err := w.keyAt(h, off+pos, ksize)
		if err != nil {
			return err
		}
		if err := w.inOrder(h, "leaf", i, k, lo, hi); err != nil {
			return err
		}
		if flags&bucketLeafFlag == 0 {
			if h.values && w.collect && depth == 1 && ksize == 8 {
				w.values = append(w.values, valuePlace{id: binary.BigEndian.Uint64(k), off: h.base + int64(off+pos+ksize), n: uint32(vsize)})
			}
			continue
		}
		key := h.b[off+pos : off+pos+ksize]
		value := h.b[off+pos+ksize : off+pos+ksize+vsize]
		from := ref{page: holder, kind: refBucket, elem: i, key: key, inline: h.inline != nil}
		values := depth == 0 && bytes.Equal(key, bucketInteractions)
		if len(value) < bucketHeaderSize {
			return corrupt("%v: bucket value of %d bytes is shorter than a bucket header", from, len(value))
		}
		if root := le.Uint64(value); root != 0 {
			if err := w.queue(queued{id: root, depth: depth + 1, values: values}, from, holder); err != nil {
				return err
			}
			continue
		}
		// An inline bucket: a leaf page inside the value, checked now,
		// while the value is at hand.
		if depth+1 > maxBucketDepth {
			return corrupt("%v: buckets nested more than %d deep", from, maxBucketDepth)
		}
		page := value[bucketHeaderSize:]
		if len(page) < pageHeaderSize {
			return corrupt("%v: inline bucket of %d bytes is shorter than a page header", from, len(page))
		}
		in := header{id: holder, flags: le.Uint16(page[8:]), count: le.Uint16(page[10:]), span: uint64(len(page)), b: page, inline: &from,
			base: h.base + int64(off+pos+ksize+bucketHeaderSize), values: values}
		if in.flags != leafPageFlag {
			return corrupt("%v: inline bucket page has flags %#x, not a leaf's", from, in.flags)
		}
		prev := bytes.Clone(w.prev)
		if err := w.leaf(&in, holder, depth+1, nil, nil); err != nil {
			return err
		}
		w.prev = append(w.prev[:0], prev...)
	}
	return nil
}
