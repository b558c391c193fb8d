package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llmproxy/llmproxy/store"
)

// The tests below read and patch bbolt's on-disk layout themselves (bbolt
// v1.5.0, in the machine's byte order): a page header is id uint64, flags uint16, count
// uint16, overflow uint32; a branch element is pos uint32, ksize uint32,
// pgid uint64; a leaf element is flags uint32, pos uint32, ksize uint32,
// vsize uint32, pos counting from the element; the meta follows the page
// header on pages 0 and 1.
var le = binary.NativeEndian

const (
	branchFlag   = 0x01
	leafFlag     = 0x02
	freelistFlag = 0x10
)

// craftedCassette writes a cassette of 300 interactions with 2 KB values
// (every 25th three pages long, so that leaves have overflow pages) under
// match keys a quarter of a page long (so that the index is a tree of
// branch pages three levels deep or more), in ten transactions (so that
// the freelist holds pages), and returns its bytes.
func craftedCassette(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crafted.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	var batch []store.Pending
	for i := range 300 {
		v := bytes.Repeat([]byte{'v'}, 2048)
		if i%25 == 0 {
			v = bytes.Repeat([]byte{'w'}, 3*page)
		}
		key := fmt.Sprintf("%06d-%s", i, strings.Repeat("k", page/4))
		batch = append(batch, store.Pending{Key: key, Shape: "POST openai /v1/chat/completions", Encode: func(uint64) ([]byte, error) { return v, nil }})
		if len(batch) == 30 {
			if _, err := s.AppendAll(batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileLayout is what the tests need to know of a healthy file, read
// independently of the store's walk.
type fileLayout struct {
	pageSize  int
	meta      int    // the meta page bbolt uses
	hwm       uint64 // high-water mark
	root      uint64 // the root bucket's page, a leaf of buckets
	freelist  uint64
	buckets   map[string]uint64 // top-level bucket → its root page, 0 if inline
	elem      map[string]int    // top-level bucket → its element on the root page
	inlineAt  map[string]int    // inline top-level bucket → offset of its page in the file
	pages     map[uint64]pageInfo
	freeCount int
}

type pageInfo struct {
	flags    uint16
	count    uint16
	overflow uint32
	children []uint64 // a branch page's
	bucket   string
}

func metaOffset(pageSize, m int) int { return m*pageSize + 16 }

// layoutOf parses a healthy file: the meta with the higher txid, the
// freelist, the root page and every page of the top-level buckets.
func layoutOf(t *testing.T, b []byte) fileLayout {
	t.Helper()
	ps := int(le.Uint32(b[16+8:]))
	l := fileLayout{pageSize: ps, buckets: map[string]uint64{}, elem: map[string]int{}, inlineAt: map[string]int{}, pages: map[uint64]pageInfo{}}
	if le.Uint64(b[metaOffset(ps, 1)+48:]) > le.Uint64(b[metaOffset(ps, 0)+48:]) {
		l.meta = 1
	}
	mo := metaOffset(ps, l.meta)
	l.root, l.freelist, l.hwm = le.Uint64(b[mo+16:]), le.Uint64(b[mo+32:]), le.Uint64(b[mo+40:])
	l.freeCount = int(le.Uint16(b[int(l.freelist)*ps+10:]))
	rp := int(l.root) * ps
	if le.Uint16(b[rp+8:]) != leafFlag {
		t.Fatalf("root page %d is not a leaf", l.root)
	}
	var walk func(id uint64, bucket string)
	walk = func(id uint64, bucket string) {
		off := int(id) * ps
		pi := pageInfo{flags: le.Uint16(b[off+8:]), count: le.Uint16(b[off+10:]), overflow: le.Uint32(b[off+12:]), bucket: bucket}
		if pi.flags == branchFlag {
			for i := range int(pi.count) {
				pi.children = append(pi.children, le.Uint64(b[off+16+16*i+8:]))
			}
		}
		l.pages[id] = pi
		for _, c := range pi.children {
			walk(c, bucket)
		}
	}
	for i := range int(le.Uint16(b[rp+10:])) {
		eo := rp + 16 + 16*i
		pos, ksize := int(le.Uint32(b[eo+4:])), int(le.Uint32(b[eo+8:]))
		name := string(b[eo+pos : eo+pos+ksize])
		vo := eo + pos + ksize
		l.elem[name] = i
		l.buckets[name] = le.Uint64(b[vo:])
		if l.buckets[name] == 0 {
			l.inlineAt[name] = vo + 16
		} else {
			walk(l.buckets[name], name)
		}
	}
	return l
}

// branchWithBranchChild finds a branch page of a bucket whose first child
// is a branch page too.
func (l fileLayout) branchWithBranchChild(t *testing.T, bucket string) (parent, child uint64) {
	t.Helper()
	for id, p := range l.pages {
		if p.bucket == bucket && p.flags == branchFlag && l.pages[p.children[0]].flags == branchFlag {
			return id, p.children[0]
		}
	}
	t.Fatalf("bucket %s has no branch page under a branch page", bucket)
	return 0, 0
}

// leafOf returns a leaf page of a bucket.
func (l fileLayout) leafOf(t *testing.T, bucket string) uint64 {
	t.Helper()
	for id, p := range l.pages {
		if p.bucket == bucket && p.flags == leafFlag {
			return id
		}
	}
	t.Fatalf("bucket %s has no leaf page", bucket)
	return 0
}

func setBranchChild(b []byte, ps int, page uint64, elem int, to uint64) {
	le.PutUint64(b[int(page)*ps+16+16*elem+8:], to)
}

// setMeta patches a uint64 field of the meta in use and fixes its
// checksum (FNV-64a over the 56 bytes before it), as a crafted file would.
func setMeta(b []byte, l fileLayout, field int, v uint64) {
	mo := metaOffset(l.pageSize, l.meta)
	le.PutUint64(b[mo+field:], v)
	h := fnv.New64a()
	h.Write(b[mo : mo+56])
	le.PutUint64(b[mo+56:], h.Sum64())
}

const (
	metaRoot     = 16
	metaFreelist = 32
)

// openWithin opens path, failing the test if Open has not returned after
// 30 s: a hang detector, not a performance assertion.
func openWithin(t *testing.T, path string, ro bool) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		s, err := store.Open(path, &store.Options{ReadOnly: ro, LockTimeout: time.Second})
		if err == nil {
			err = s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("Open(%s, read-only %v) still running after 30 s", path, ro)
		return nil
	}
}

// TestPageWalkRefusesCraftedFiles patches healthy cassettes into files
// whose page references would make bbolt loop, recurse or allocate without
// bound, or read past a page, and opens each as a reader and as a writer:
// Open must return promptly an error wrapping ErrCorrupt that names the
// file and the page at fault, and leave the file as it was.
func TestPageWalkRefusesCraftedFiles(t *testing.T) {
	good := craftedCassette(t)
	l := layoutOf(t, good)
	ps := l.pageSize
	ir := l.buckets["interactions"]
	if p := l.pages[ir]; p.flags != branchFlag || p.count < 2 {
		t.Fatalf("the interactions bucket's root page %d is not a branch page of 2 or more elements: %+v", ir, p)
	}
	// A child of the interactions root with overflow pages, followed by
	// another child.
	ovElem, ovPage := -1, uint64(0)
	for j, c := range l.pages[ir].children[:l.pages[ir].count-1] {
		if l.pages[c].overflow > 0 {
			ovElem, ovPage = j, c
			break
		}
	}
	if ovElem < 0 {
		t.Fatal("no child of the interactions root has overflow pages")
	}
	parent, child := l.branchWithBranchChild(t, "index")
	leaf := l.leafOf(t, "index")
	first := l.pages[ir].children[0]
	if l.freeCount < 2 || l.freeCount == 0xFFFF {
		t.Fatalf("want a short freelist of two ids or more; it has count %d", l.freeCount)
	}
	fo := int(l.freelist) * ps
	freeID := func(b []byte, i int) uint64 { return le.Uint64(b[fo+16+8*i:]) }
	// A leaf of the index with two keys or more, and the second leaf of
	// the interactions root with the key its branch element gives it.
	if l.pages[leaf].count < 2 {
		t.Fatalf("index leaf %d has %d keys, want 2 or more", leaf, l.pages[leaf].count)
	}
	second := l.pages[ir].children[1]
	if l.pages[second].flags != leafFlag {
		t.Fatalf("page %d, the second child of the interactions root, is not a leaf", second)
	}
	leafKey := func(b []byte, page uint64, elem int) []byte {
		eo := int(page)*ps + 16 + 16*elem
		pos, ksize := int(le.Uint32(b[eo+4:])), int(le.Uint32(b[eo+8:]))
		return b[eo+pos : eo+pos+ksize]
	}
	branchKey := func(b []byte, page uint64, elem int) []byte {
		eo := int(page)*ps + 16 + 16*elem
		pos, ksize := int(le.Uint32(b[eo:])), int(le.Uint32(b[eo+4:]))
		return b[eo+pos : eo+pos+ksize]
	}
	if _, ok := l.inlineAt["fixtures"]; !ok {
		t.Fatal("the fixtures bucket is not inline")
	}

	cases := []struct {
		name  string
		patch func(b []byte)
		want  string
	}{
		{"branch element points at its own page", func(b []byte) {
			setBranchChild(b, ps, ir, 0, ir)
		}, fmt.Sprintf("page %d: branch element 0 points at page %d, an ancestor", ir, ir)},
		{"branch element points at its parent", func(b []byte) {
			setBranchChild(b, ps, child, 0, parent)
		}, fmt.Sprintf("page %d: branch element 0 points at page %d, an ancestor", child, parent)},
		{"bucket root points at the root bucket's page", func(b []byte) {
			eo := int(l.root)*ps + 16 + 16*l.elem["interactions"]
			pos, ksize := int(le.Uint32(b[eo+4:])), int(le.Uint32(b[eo+8:]))
			le.PutUint64(b[eo+pos+ksize:], l.root)
		}, fmt.Sprintf("page %d: element %d (bucket \"interactions\") points at page %d, an ancestor", l.root, l.elem["interactions"], l.root)},
		{"branch element points beyond the high-water mark", func(b []byte) {
			setBranchChild(b, ps, ir, 0, l.hwm+5)
		}, fmt.Sprintf("page %d: branch element 0 points at page %d, at or beyond the high-water mark %d", ir, l.hwm+5, l.hwm)},
		{"branch element points beyond the end of the file", func(b []byte) {
			setBranchChild(b, ps, ir, 1, 1<<40)
		}, fmt.Sprintf("page %d: branch element 1 points at page %d, at or beyond the high-water mark %d", ir, uint64(1)<<40, l.hwm)},
		{"branch element points at a meta page", func(b []byte) {
			setBranchChild(b, ps, ir, 0, 1)
		}, fmt.Sprintf("page %d: branch element 0 points at page 1, a meta page", ir)},
		{"leaf element key runs past its page", func(b []byte) {
			le.PutUint32(b[int(leaf)*ps+16+8:], 1<<20)
		}, fmt.Sprintf("page %d: leaf element 0 (pos", leaf)},
		{"branch element pos runs past its page", func(b []byte) {
			le.PutUint32(b[int(ir)*ps+16:], 0xFFFFFF00)
		}, fmt.Sprintf("page %d: branch element 0 (pos %d", ir, 0xFFFFFF00)},
		{"page referenced twice", func(b []byte) {
			setBranchChild(b, ps, ir, 1, first)
		}, fmt.Sprintf("page %d: branch element 1 points at page %d, already reached", ir, first)},
		{"branch element points at another page's overflow page", func(b []byte) {
			setBranchChild(b, ps, ir, ovElem+1, ovPage+1)
		}, fmt.Sprintf("page %d: its overflow page %d is also reached on its own", ovPage, ovPage+1)},
		{"branch page with no elements", func(b []byte) {
			le.PutUint16(b[int(ir)*ps+10:], 0)
		}, fmt.Sprintf("page %d: branch page with no elements", ir)},
		{"child page that is neither branch nor leaf", func(b []byte) {
			le.PutUint16(b[int(first)*ps+8:], freelistFlag)
		}, fmt.Sprintf("page %d: branch element 0 points at page %d, whose flags 0x10 are neither a branch's nor a leaf's", ir, first)},
		{"inline bucket claims to be a branch page", func(b []byte) {
			le.PutUint16(b[l.inlineAt["fixtures"]+8:], branchFlag)
		}, fmt.Sprintf("page %d: element %d (bucket \"fixtures\"): inline bucket page has flags 0x1, not a leaf's", l.root, l.elem["fixtures"])},
		// bbolt reads the freelist inside bolt.Open for a writer: a count
		// of 2^40 ids has it allocate 8 TB, a fatal out-of-memory error.
		{"freelist count runs past its page", func(b []byte) {
			fo := int(l.freelist) * ps
			le.PutUint16(b[fo+10:], 0xFFFF)
			le.PutUint64(b[fo+16:], 1<<40)
		}, fmt.Sprintf("page %d: freelist of %d ids runs past the page", l.freelist, uint64(1)<<40)},
		{"freelist lists a page beyond the high-water mark", func(b []byte) {
			le.PutUint64(b[int(l.freelist)*ps+16:], l.hwm+3)
		}, fmt.Sprintf("page %d: freelist id 0 is page %d, outside 2..%d", l.freelist, l.hwm+3, l.hwm-1)},
		// Without a freelist, a writer's bolt.Open rebuilds it by walking
		// the tree on a goroutine of its own (which a cycle makes panic,
		// leaving that goroutine blocked); a reader's cursor loops.
		{"no freelist and a cycle", func(b []byte) {
			setMeta(b, l, metaFreelist, ^uint64(0))
			setBranchChild(b, ps, ir, 0, ir)
		}, fmt.Sprintf("page %d: branch element 0 points at page %d, an ancestor", ir, ir)},
		// What bbolt's own check finds, and the walk now does in its place.
		{"leaf keys out of order", func(b []byte) {
			clear(leafKey(b, leaf, 1)[:1])
		}, fmt.Sprintf("page %d: leaf element 1: key 00", leaf)},
		{"leaf key before the range its parent gives it", func(b []byte) {
			clear(leafKey(b, second, 0))
		}, fmt.Sprintf("page %d: leaf element 0: key 0000000000000000 is before the range its parent gives the page, from %x", second, branchKey(good, ir, 1))},
		{"branch keys out of order", func(b []byte) {
			copy(branchKey(b, ir, 1), branchKey(b, ir, 0))
		}, fmt.Sprintf("page %d: branch element 1: key %x is not after the key before it", ir, branchKey(good, ir, 0))},
		{"page neither reached nor free", func(b []byte) {
			le.PutUint16(b[fo+10:], uint16(l.freeCount-1))
		}, fmt.Sprintf("page %d is neither reached from the root nor free (1 such pages)", freeID(good, l.freeCount-1))},
		{"page freed twice", func(b []byte) {
			le.PutUint64(b[fo+16+8*(l.freeCount-1):], freeID(b, 0))
		}, fmt.Sprintf("page %d: freelist id %d is page %d, freed twice", l.freelist, l.freeCount-1, freeID(good, 0))},
		{"meta page that is not a page", func(b []byte) {
			clear(b[(1-l.meta)*ps : (1-l.meta)*ps+16])
		}, fmt.Sprintf("meta page %d: ", 1-l.meta)},
		{"meta root points at a meta page", func(b []byte) {
			setMeta(b, l, metaRoot, 0)
		}, fmt.Sprintf("meta page %d: root bucket points at page 0, a meta page", l.meta)},
		{"meta root points at the freelist", func(b []byte) {
			setMeta(b, l, metaRoot, l.freelist)
		}, fmt.Sprintf("meta page %d: root bucket points at page %d, already reached", l.meta, l.freelist)},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(good)
			tc.patch(bad)
			if bytes.Equal(bad, good) {
				t.Fatal("the patch changed nothing")
			}
			for _, ro := range []bool{true, false} {
				path := filepath.Join(dir, fmt.Sprintf("crafted-%d-%v.cassette", i, ro))
				if err := os.WriteFile(path, bad, 0o644); err != nil {
					t.Fatal(err)
				}
				err := openWithin(t, path, ro)
				switch {
				case err == nil:
					t.Errorf("read-only %v: Open succeeded", ro)
				case !errors.Is(err, store.ErrCorrupt):
					t.Errorf("read-only %v: error %v does not wrap ErrCorrupt", ro, err)
				case !strings.Contains(err.Error(), path):
					t.Errorf("read-only %v: error %q does not name the file", ro, err)
				case !strings.Contains(err.Error(), tc.want):
					t.Errorf("read-only %v: error %q does not say %q", ro, err, tc.want)
				}
				if ro && err != nil {
					t.Logf("%v", err)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
					t.Errorf("read-only %v: the refused file changed", ro)
				}
			}
		})
	}
}

// TestPageWalkAfterOpen runs the walk where it runs on systems where the
// store cannot take bbolt's lock first: after bolt.Open, before anything
// reads the tree. A cycle is refused all the same, and a sound file opens.
// (A writer's bolt.Open loads the freelist before this walk, so the
// freelist cases are not tried here.)
func TestPageWalkAfterOpen(t *testing.T) {
	defer store.WalkAfterOpenForTest()()
	good := craftedCassette(t)
	l := layoutOf(t, good)
	ir := l.buckets["interactions"]
	bad := bytes.Clone(good)
	setBranchChild(bad, l.pageSize, ir, 0, ir)
	want := fmt.Sprintf("page %d: branch element 0 points at page %d, an ancestor", ir, ir)
	dir := t.TempDir()
	for _, ro := range []bool{true, false} {
		path := filepath.Join(dir, fmt.Sprintf("cycle-%v.cassette", ro))
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := openWithin(t, path, ro); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("read-only %v: error %v, want ErrCorrupt naming %s and saying %q", ro, err, path, want)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
			t.Errorf("read-only %v: the refused file changed", ro)
		}
		path = filepath.Join(dir, fmt.Sprintf("good-%v.cassette", ro))
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := openWithin(t, path, ro); err != nil {
			t.Errorf("read-only %v: a sound file: %v", ro, err)
		}
	}
}

// TestPageWalkAcceptsHealthyFiles opens cassettes of every shape the store
// writes, and checks that the walk alone and Open, as a reader and as a
// writer, accept them, and that every interaction is there.
func TestPageWalkAcceptsHealthyFiles(t *testing.T) {
	page := os.Getpagesize()
	pending := func(n, size int) []store.Pending {
		p := make([]store.Pending, n)
		for i := range p {
			v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
			p[i] = store.Pending{Key: fmt.Sprint("key", i), Shape: "shape", Encode: func(uint64) ([]byte, error) { return v, nil }}
		}
		return p
	}
	records := func(n, size int) []store.Record {
		r := make([]store.Record, n)
		for i := range r {
			r[i] = store.Record{ID: uint64(i + 1), Key: fmt.Sprint("k", i), Shape: "s", Value: bytes.Repeat([]byte{'r'}, size)}
		}
		return r
	}
	fixtures := map[string][]byte{}
	for i := range 40 {
		fixtures[fmt.Sprint("call_", i)] = bytes.Repeat([]byte{'f'}, 500)
	}
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, s *store.Store)
		want  int
	}{
		{"empty", func(*testing.T, *store.Store) {}, 0},
		{"one interaction", func(t *testing.T, s *store.Store) {
			if _, err := s.AppendAll(pending(1, 10)); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"300 interactions of 2 KB", func(t *testing.T, s *store.Store) {
			if _, err := s.AppendAll(pending(300, 2048)); err != nil {
				t.Fatal(err)
			}
		}, 300},
		{"values larger than a page", func(t *testing.T, s *store.Store) {
			if _, err := s.AppendAll(pending(20, 5*page)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AppendAll(pending(1, 1<<20)); err != nil {
				t.Fatal(err)
			}
		}, 21},
		{"50 appends, one transaction each", func(t *testing.T, s *store.Store) {
			for _, p := range pending(50, 700) {
				if _, err := appendOne(s, p.Key, p.Shape, p.Encode); err != nil {
					t.Fatal(err)
				}
			}
		}, 50},
		{"replaced by fewer records and fixtures", func(t *testing.T, s *store.Store) {
			if _, err := s.AppendAll(pending(300, 2048)); err != nil {
				t.Fatal(err)
			}
			if err := s.Replace(store.Contents{Records: records(40, 3000), Fixtures: fixtures}); err != nil {
				t.Fatal(err)
			}
		}, 40},
		{"replaced by nothing", func(t *testing.T, s *store.Store) {
			if _, err := s.AppendAll(pending(300, 2048)); err != nil {
				t.Fatal(err)
			}
			if err := s.Replace(store.Contents{}); err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"replaced by 5000 small records", func(t *testing.T, s *store.Store) {
			if err := s.Replace(store.Contents{Records: records(5000, 100), Fixtures: fixtures}); err != nil {
				t.Fatal(err)
			}
		}, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "healthy.cassette")
			s, err := store.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.build(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := store.WalkPages(path); err != nil {
				t.Fatalf("the walk refuses a healthy file: %v", err)
			}
			for _, ro := range []bool{true, false} {
				s, err := store.Open(path, &store.Options{ReadOnly: ro})
				if err != nil {
					t.Fatalf("Open(read-only %v): %v", ro, err)
				}
				n := 0
				err = s.ForEach(func(uint64, []byte) error { n++; return nil })
				s.Close()
				if err != nil || n != tc.want {
					t.Errorf("read-only %v: %d interactions, %v; want %d", ro, n, err, tc.want)
				}
			}
		})
	}
}

// TestPageWalkBucketNesting: buckets nested deeper than the walk's bound
// (64) are refused as damaged; within it, the file gets as far as the
// store's own checks (another program's bbolt file is not a cassette).
func TestPageWalkBucketNesting(t *testing.T) {
	for _, tc := range []struct {
		depth int
		want  error
	}{{60, store.ErrNotCassette}, {70, store.ErrCorrupt}} {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("nested-%d.db", tc.depth))
		db, err := bolt.Open(path, 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("b0"))
			for i := 1; i < tc.depth && err == nil; i++ {
				b, err = b.CreateBucket(fmt.Appendf(nil, "b%d", i))
			}
			return err
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{true, false} {
			err := openWithin(t, path, ro)
			if !errors.Is(err, tc.want) {
				t.Errorf("%d deep, read-only %v: error %v, want %v", tc.depth, ro, err, tc.want)
			}
			if tc.want == store.ErrCorrupt && (err == nil || !strings.Contains(err.Error(), "buckets nested more than 64 deep")) {
				t.Errorf("%d deep, read-only %v: error %v does not name the bound", tc.depth, ro, err)
			}
		}
	}
}

// TestPageWalkWaitsForTheLock: the walk runs under the file's lock, taken
// before bbolt takes it, with the same timeout. A reader waits for a
// writer and gives up with ErrLocked; a writer that waits while another
// closes gets the file.
func TestPageWalkWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.cassette")
	w, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(w, "k", "s", value("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(path, &store.Options{ReadOnly: true, LockTimeout: 200 * time.Millisecond}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("reader beside a writer: %v, want ErrLocked", err)
	}
	closed := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		w.Close()
		close(closed)
	}()
	w2, err := store.Open(path, &store.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("writer waiting for a writer that closes: %v", err)
	}
	<-closed
	defer w2.Close()
	if n, err := w2.Len(); err != nil || n != 1 {
		t.Errorf("Len = %d, %v; want 1", n, err)
	}
}
