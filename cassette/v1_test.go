package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/store"
	bolt "go.etcd.io/bbolt"
)

// copyV1 copies testdata/v1.cassette (written by the format-1 code) into a
// temporary directory.
func copyV1(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v1.cassette"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.cassette")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func goldenV1Export(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v1.export.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exportOf(t *testing.T, path string) []byte {
	t.Helper()
	c, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf bytes.Buffer
	if err := c.Export(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// formatOf is a cassette's format version and the form each of its records
// is stored in ("1" for JSON, "2" for a format-2 record).
func formatOf(t testing.TB, path string) (int, string) {
	t.Helper()
	st, err := store.Open(path, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := st.Meta()
	if err != nil {
		t.Fatal(err)
	}
	var forms strings.Builder
	err = st.ForEach(func(id uint64, v []byte) error {
		switch {
		case len(v) > 0 && v[0] == recordTag:
			forms.WriteByte('2')
		case len(v) > 0 && v[0] == '{':
			forms.WriteByte('1')
		default:
			return fmt.Errorf("interaction %d: record opens with %q", id, v[:min(1, len(v))])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m.FormatVersion, forms.String()
}

// bucketDump is every key and value of a bucket of the cassette at path.
func bucketDump(t *testing.T, path, bucket string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucket)).ForEach(func(k, v []byte) error {
			fmt.Fprintf(&b, "%q=%q\n", k, v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// testKeys indexes an interaction under its method and path, enough for
// these tests (the proxy's keys are tested in package proxy).
func testKeys(i *Interaction) (string, string, error) {
	return i.Request.Method + " " + i.Upstream + i.Request.Path + " " + string(i.Request.Body), i.Request.Method, nil
}

// A format-1 cassette opens as it is, reads and exports as its format-1
// llmproxy exported it, and serves every response.
func TestV1CassetteReads(t *testing.T) {
	path := copyV1(t)
	if v, forms := formatOf(t, path); v != 1 || forms != "111111" {
		t.Fatalf("fixture is format %d with records %s, want 1 and six JSON records", v, forms)
	}
	if got, want := exportOf(t, path), goldenV1Export(t); !bytes.Equal(got, want) {
		t.Errorf("export of the format-1 cassette differs from what format 1 exported:\n%s", got)
	}
	c, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range all {
		err := c.Read(func(r *Reader) error {
			rep, err := r.Reply(i.ID)
			if err != nil {
				return err
			}
			var served []byte
			for k := range rep.Events() {
				d, _ := rep.Event(k)
				served = append(served, d...)
			}
			served = append(served, rep.Body()...)
			if rep.Status != i.Response.Status || !bytes.Equal(served, i.Response.Bytes()) {
				t.Errorf("interaction %d: Reply serves %d %q, recorded %d %q", i.ID, rep.Status, served, i.Response.Status, i.Response.Bytes())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Migrate rewrites a format-1 cassette in format 2, every record included,
// and the migrated cassette exports the same bytes and keeps its index and
// metadata as they were. A second Migrate leaves the file alone.
func TestMigrate(t *testing.T) {
	path := copyV1(t)
	old := bucketDumps(t, path)
	mig, err := Migrate(path, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, path, old, mig)
	before, _ := os.ReadFile(path)
	again, err := Migrate(path, Options{Version: "test"})
	if err != nil || again.From != store.FormatVersion || again.To != store.FormatVersion || again.Interactions != 6 {
		t.Errorf("second Migrate = %+v, %v; want the file left as it was", again, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("second Migrate changed the file")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Migrate, want the cassette alone", len(entries))
	}
}

// Migrate of a file that is not there, or not a cassette, is an error that
// names it, and creates nothing.
func TestMigrateRefuses(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.cassette")
	if _, err := Migrate(missing, Options{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Migrate of a missing file: %v", err)
	}
	junk := filepath.Join(dir, "junk.cassette")
	os.WriteFile(junk, []byte(strings.Repeat("not bbolt ", 1000)), 0o644)
	if _, err := Migrate(junk, Options{}); !errors.Is(err, store.ErrNotCassette) {
		t.Errorf("Migrate of a file that is not a cassette: %v, want ErrNotCassette", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the junk file alone", len(entries))
	}
}

// The first append to a format-1 cassette upgrades every record to format
// 2 in its transaction; the old interactions read as before.
func TestAppendUpgradesV1(t *testing.T) {
	path := copyV1(t)
	c, err := Open(path, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	add := &Interaction{Upstream: "openai", Kind: "generic", Request: Request{Method: "GET", Path: "/new"}, Response: Response{Status: 200, Body: Body("new")}}
	res, err := c.AppendAll([]Keyed{{Interaction: add, Key: "k", Shape: "s"}})
	if err != nil || res[0].Err != nil || res[0].ID != 7 {
		t.Fatalf("AppendAll = %+v, %v", res, err)
	}
	after, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if v, forms := formatOf(t, path); v != store.FormatVersion || forms != "2222222" {
		t.Errorf("after an append the cassette is format %d with records %s, want every record in format %d", v, forms, store.FormatVersion)
	}
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after[:len(before)])
	if !bytes.Equal(a, b) {
		t.Errorf("the upgraded interactions read\n%s\nwere\n%s", b, a)
	}
}

// A cassette of a newer format is refused with an error that names the
// file and both versions.
func TestNewerFormatRefused(t *testing.T) {
	path := copyV1(t)
	// The metadata is JSON on a leaf page, which bbolt does not checksum.
	raw, _ := os.ReadFile(path)
	old := []byte(`"format_version":1`)
	if !bytes.Contains(raw, old) {
		t.Fatal("metadata not found in the fixture")
	}
	os.WriteFile(path, bytes.Replace(raw, old, []byte(`"format_version":3`), 1), 0o644)
	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, store.ErrFormatVersion) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "format version 3") || !strings.Contains(err.Error(), fmt.Sprint("up to ", store.FormatVersion)) {
		t.Errorf("opening a format-3 cassette: %v", err)
	}
	_, err = Migrate(path, Options{})
	if !errors.Is(err, store.ErrFormatVersion) {
		t.Errorf("migrating a format-3 cassette: %v", err)
	}
}

// Replace (scrub, import --force, a reindex on disk) writes every record
// in format 2, and stamps it.
func TestReplaceWritesFormat2(t *testing.T) {
	path := copyV1(t)
	c, err := Open(path, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := c.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ct, testKeys); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if v, forms := formatOf(t, path); v != store.FormatVersion || forms != "222222" {
		t.Errorf("after Replace the cassette is format %d with records %s, want every record in format %d", v, forms, store.FormatVersion)
	}
	if got, want := exportOf(t, path), goldenV1Export(t); !bytes.Equal(got, want) {
		t.Errorf("export after Replace differs from the format-1 export:\n%s", got)
	}
}

// Migrate written one record per transaction (the smallest batch) gives
// the same cassette as in one: every record in format 2, the export the
// format-1 export byte for byte, and the index, fixtures and metadata as
// they were.
func TestMigrateInBatches(t *testing.T) {
	path := copyV1(t)
	old := bucketDumps(t, path)
	mig, err := migrate(path, Options{Version: "test"}, upgrade, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, path, old, mig)
}

// checkMigrated fails t unless the copy of testdata/v1.cassette at path,
// whose buckets were old before mig, is in the current format with its
// six interactions, exports as the format-1 cassette does byte for byte,
// and holds the index, shapes, fixtures and metadata it held (the format
// version aside).
func checkMigrated(t *testing.T, path string, old map[string]string, mig Migration) {
	t.Helper()
	if want := (Migration{From: 1, To: store.FormatVersion, Interactions: 6, Fixtures: 1}); mig != want {
		t.Errorf("migration = %+v, want %+v", mig, want)
	}
	if v, forms := formatOf(t, path); v != store.FormatVersion || forms != "222222" {
		t.Errorf("migrated cassette is format %d with records %s, want %d and six format-2 records", v, forms, store.FormatVersion)
	}
	if got, want := exportOf(t, path), goldenV1Export(t); !bytes.Equal(got, want) {
		t.Errorf("export of the migrated cassette differs from the format-1 export:\n%s", got)
	}
	for bucket, a := range old {
		if bucket == "meta" {
			a = strings.Replace(a, `format_version\":1`, `format_version\":2`, 1) // as %q writes it
		}
		if b := bucketDump(t, path, bucket); a != b {
			t.Errorf("bucket %s after the migration:\n%s\nbefore:\n%s", bucket, b, a)
		}
	}
}

// A migrate that fails after some of its batches are written (the k-th
// record cannot be converted, with a record a batch) leaves the original
// file byte for byte as it was and no draft behind, and its error names
// the cassette and the interaction.
func TestMigrateFailsBetweenBatches(t *testing.T) {
	for k := uint64(1); k <= 6; k++ {
		path := copyV1(t)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		convert := func(id uint64, old []byte) ([]byte, error) {
			if id == k {
				return nil, fmt.Errorf("interaction %d: %w", id, boom)
			}
			return upgrade(id, old)
		}
		_, err = migrate(path, Options{Version: "test"}, convert, 1)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprint("interaction ", k)) {
			t.Errorf("failing at interaction %d: migrate = %v, want boom naming %s and the interaction", k, err, path)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
			t.Errorf("failing at interaction %d: the original file changed", k)
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Errorf("failing at interaction %d: directory holds %d entries, want the cassette alone", k, len(entries))
		}
	}
}

// bucketDumps is bucketDump of every bucket of a cassette but its records.
func bucketDumps(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, b := range []string{"meta", "index", "shapes", "fixtures"} {
		out[b] = bucketDump(t, path, b)
	}
	return out
}

// The append that upgrades a format-1 cassette writes a new file and goes
// on with it: the writer's lock is held on the new file (another writer is
// refused), no draft is left, and reads running meanwhile in other
// goroutines see the cassette whole throughout.
func TestAppendUpgradeKeepsLockAndReads(t *testing.T) {
	path := copyV1(t)
	c, err := Open(path, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		defer close(failed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			i, err := c.Get(3)
			if err != nil || i.ID != 3 {
				failed <- fmt.Errorf("Get(3) during the upgrade: %v", err)
				return
			}
			if n, err := c.Len(); err != nil || n < 6 {
				failed <- fmt.Errorf("Len during the upgrade: %d, %v", n, err)
				return
			}
		}
	}()
	add := &Interaction{Upstream: "openai", Kind: "generic", Request: Request{Method: "GET", Path: "/new"}, Response: Response{Status: 200, Body: Body("new")}}
	res, err := c.AppendAll([]Keyed{{Interaction: add, Key: "k", Shape: "s"}})
	close(stop)
	if err := <-failed; err != nil {
		t.Error(err)
	}
	if err != nil || res[0].ID != 7 {
		t.Fatalf("AppendAll = %+v, %v", res, err)
	}
	if _, err := store.Open(path, &store.Options{LockTimeout: 50e6}); !errors.Is(err, store.ErrLocked) {
		t.Errorf("a second writer while the upgraded cassette is open: %v, want ErrLocked", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries after the upgrade, want the cassette alone", len(entries))
	}
	if n, err := c.Len(); err != nil || n != 7 {
		t.Errorf("Len after the upgrade = %d, %v; want 7", n, err)
	}
}

// An append whose upgrade fails (a record cannot be converted) stores
// nothing, leaves the format-1 file byte for byte as it was and no draft
// behind, names the cassette, and the store still reads.
func TestAppendUpgradeFailureLeavesFile(t *testing.T) {
	path := copyV1(t)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	st, err := store.Open(path, &store.Options{Upgrade: func(id uint64, old []byte) ([]byte, error) {
		if id == 4 {
			return nil, boom
		}
		return upgrade(id, old)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.AppendAll([]store.Pending{{Key: "k", Shape: "s", Encode: func(uint64) ([]byte, error) { return []byte("x"), nil }}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("AppendAll with a failing upgrade = %v, want boom naming %s", err, path)
	}
	if n, err := st.Len(); err != nil || n != 6 {
		t.Errorf("Len after the failed upgrade = %d, %v; want 6", n, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("the failed upgrade changed the file")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries after the failed upgrade, want the cassette alone", len(entries))
	}
}
