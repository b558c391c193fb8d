package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

// cli runs the command line in-process, as main would, for 10 s at most: a
// command that should have failed but serves instead is stopped and shows
// up as exit code 0.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// checkOneLine fails unless stderr is one line, without a Go panic trace.
func checkOneLine(t *testing.T, what, stderr string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("%s: stderr is not one line: %q", what, stderr)
	}
	for _, s := range []string{"panic", "goroutine ", "internal error"} {
		if strings.Contains(stderr, s) {
			t.Errorf("%s: stderr holds %q: %s", what, s, stderr)
		}
	}
}

// sampleCassette writes a cassette with n interactions.
func sampleCassette(t *testing.T, path string, n int) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Indexed as a server whose default upstream is not the openai one
	// indexes: the tests that serve it run against a fake upstream given as
	// the default, and the index must be the one they read.
	r, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cassette.NewIndexer(match.Rules{}, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetIndexRules(m.Fingerprint()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		x := &cassette.Interaction{Upstream: "default", Provider: "openai", Kind: "openai-chat",
			RecordedAt: time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC),
			Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions",
				Headers: http.Header{"Content-Type": {"application/json"}},
				Body:    cassette.Body(fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question %d MARKER"}]}`, i))},
			Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}},
				Body: cassette.Body(fmt.Sprintf(`{"id":"chatcmpl-%d","choices":[]}`, i))},
		}
		key, shape, err := m.Keys(x)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := c.AppendAll([]cassette.Keyed{{Interaction: x, Key: key, Shape: shape}}); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
}

// badFiles writes cassettes that are not usable, by name.
func badFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	write("text", []byte(strings.Repeat("this is not a bbolt file\n", 400)))
	write("empty", nil)
	write("binary", bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 4096))

	good := filepath.Join(t.TempDir(), "good.cassette")
	sampleCassette(t, good, 3)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write("truncated", data[:os.Getpagesize()])
	write("halved", data[:len(data)/2])
	// Zero every page that holds an interaction: the live ones, and the
	// stale copies bbolt's copy-on-write leaves in free pages.
	damaged := bytes.Clone(data)
	page := os.Getpagesize()
	for at := bytes.Index(damaged, []byte("MARKER")); at >= 0; at = bytes.Index(damaged, []byte("MARKER")) {
		clear(damaged[at/page*page : at/page*page+page])
	}
	write("damaged", damaged)
	metaless := bytes.Clone(data)
	for _, p := range []int{0, page} {
		for i := p + 16; i < p+80; i++ {
			metaless[i] ^= 0xff
		}
	}
	write("bad meta pages", metaless)

	other := filepath.Join(dir, "other bbolt")
	db, err := bolt.Open(other, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err })
	db.Close()
	files["other bbolt"] = other

	newer := filepath.Join(dir, "newer")
	sampleCassette(t, newer, 1)
	db, err = bolt.Open(newer, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("meta"), []byte(`{"format_version":99,"llmproxy_version":"9.0.0"}`))
	})
	db.Close()
	files["newer"] = newer

	d := filepath.Join(dir, "a directory")
	os.Mkdir(d, 0o755)
	files["a directory"] = d
	return files
}

// TestBadCassetteFiles runs every command that opens a cassette on files
// that are not usable cassettes. Each exits 1 with one line on stderr that
// names the file and says what is wrong, and leaves the file as it was.
func TestBadCassetteFiles(t *testing.T) {
	dir := t.TempDir()
	files := badFiles(t, dir)
	export := filepath.Join(t.TempDir(), "good.json")
	good := filepath.Join(t.TempDir(), "src.cassette")
	sampleCassette(t, good, 2)
	if code, _, stderr := cli(t, "export", "--cassette", good, "--out", export); code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	says := map[string]string{
		"text": "not an llmproxy cassette", "empty": "not an llmproxy cassette", "binary": "not an llmproxy cassette",
		"truncated": "not an llmproxy cassette", "halved": "", "damaged": "damaged",
		"bad meta pages": "not an llmproxy cassette", "other bbolt": "not an llmproxy cassette",
		"newer": "format version 99", "a directory": "",
	}
	commands := []struct {
		name   string
		args   func(path string) []string
		writer bool
	}{
		{"record", func(p string) []string { return []string{"record", "--cassette", p, "--listen", "127.0.0.1:0"} }, true},
		{"auto", func(p string) []string { return []string{"auto", "--cassette", p, "--listen", "127.0.0.1:0"} }, true},
		{"replay", func(p string) []string { return []string{"replay", "--cassette", p, "--listen", "127.0.0.1:0"} }, false},
		{"export", func(p string) []string { return []string{"export", "--cassette", p} }, false},
		{"ls", func(p string) []string { return []string{"ls", "--cassette", p} }, false},
		{"scrub", func(p string) []string { return []string{"scrub", "--cassette", p} }, true},
		{"import --force", func(p string) []string { return []string{"import", "--in", export, "--cassette", p, "--force"} }, true},
	}
	tried := 0
	for _, cmd := range commands {
		for name, path := range files {
			if name == "empty" && cmd.writer {
				continue // a writer makes an empty file a new cassette
			}
			t.Run(cmd.name+"/"+name, func(t *testing.T) {
				before := snapshot(t, path)
				code, stdout, stderr := cli(t, cmd.args(path)...)
				tried++
				if code != 1 {
					t.Errorf("exit %d, want 1; stdout %q, stderr %q", code, stdout, stderr)
				}
				checkOneLine(t, cmd.name, stderr)
				if !strings.Contains(stderr, path) {
					t.Errorf("stderr %q does not name %s", stderr, path)
				}
				if w := says[name]; w != "" && !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
				if snapshot(t, path) != before {
					t.Errorf("the file changed")
				}
			})
		}
	}
	// A missing cassette: read commands name it and create nothing.
	missing := filepath.Join(dir, "missing.cassette")
	for _, cmd := range commands {
		if cmd.writer && cmd.name != "scrub" {
			continue
		}
		code, _, stderr := cli(t, cmd.args(missing)...)
		tried++
		if code != 1 || !strings.Contains(stderr, missing) {
			t.Errorf("%s of a missing cassette: exit %d, stderr %q", cmd.name, code, stderr)
		}
		checkOneLine(t, cmd.name, stderr)
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%s created the missing cassette", cmd.name)
		}
	}
	t.Logf("unusable cassette files: %d command runs on %d kinds of file; each exit 1, one line naming the file, the file unchanged", tried, len(files)+1)
}

// snapshot is a file's bytes, or a directory's listing.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	if st.IsDir() {
		entries, _ := os.ReadDir(path)
		return fmt.Sprint("dir", len(entries))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBadExports imports export files that do not parse or break a rule of
// the format. Each exits 1 naming the --in file and the line or field at
// fault; an existing target (even with --force) keeps its bytes, and a new
// target is not created, nor any temporary file beside it.
func TestBadExports(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.cassette")
	sampleCassette(t, src, 2)
	code, goodExport, stderr := cli(t, "export", "--cassette", src)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	edit := func(old, new string) string {
		if !strings.Contains(goodExport, old) {
			t.Fatalf("the export has no %q", old)
		}
		return strings.Replace(goodExport, old, new, 1)
	}
	line := func(s, sub string) string {
		return fmt.Sprintf("line %d", strings.Count(s[:strings.Index(s, sub)], "\n")+1)
	}
	broken := edit(`"method": "POST"`, `"method": POST`)
	cases := []struct {
		name, data, says string
	}{
		{"syntax error", broken, line(broken, `"method": POST`)},
		{"cut short", goodExport[:len(goodExport)/2], "unexpected end"},
		{"empty", "", "unexpected end"},
		{"binary", "\x00\x01\x02\xff\xfe", "line 1"},
		{"an array", "[]", "line 1"},
		{"wrong format", edit(`"format": "llmproxy-cassette"`, `"format": "vcr"`), `"format"`},
		{"newer format version", edit(`"format_version": 1`, `"format_version": 99`), "format version 99"},
		{"format version 0", edit(`"format_version": 1`, `"format_version": 0`), "meta.format_version"},
		{"id out of order", edit(`"id": 1,`, `"id": 7,`), "interactions[0].id"},
		{"id of the wrong type", edit(`"id": 1,`, `"id": "one",`), "interactions.id"},
		{"no method", edit(`"method": "POST"`, `"method": ""`), "interactions[0].request.method"},
		{"relative path", edit(`"path": "/v1/chat/completions"`, `"path": "v1/chat"`), "interactions[0].request.path"},
		{"no status", edit(`"status": 200`, `"status": 0`), "interactions[0].response.status"},
		{"unknown framing", edit(`"status": 200,`, `"status": 200, "framing": "xml",`), "interactions[0].response.framing"},
		{"unknown field", edit(`"status": 200,`, `"status": 200, "colour": "blue",`), "colour"},
		{"bad base64 body", edit(`"body": "{\"id\":\"chatcmpl-0\",\"choices\":[]}"`, `"body": {"base64": "!!!"}`), "interactions[0].response.body"},
		{"body of the wrong type", edit(`"body": "{\"id\":\"chatcmpl-0\",\"choices\":[]}"`, `"body": 42`), "interactions[0].response.body"},
		{"event stream message that is not one", edit(`"body": "{\"id\":\"chatcmpl-0\",\"choices\":[]}"`, `"framing": "eventstream", "events": [{"at_ms": 1, "data": "not a message"}]`),
			"interactions[0].response.events[0].data: bad event stream message"},
		{"trailing data", goodExport + "{}", "trailing data"},
		{"fixture not JSON", edit(`"fixtures": {}`, `"fixtures": {"call_x": }`), line(goodExport, `"fixtures"`)},
	}
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.cassette")
	sampleCassette(t, existing, 1)
	tried := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(in, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, existing)
			fresh := filepath.Join(dir, "fresh.cassette")
			for _, args := range [][]string{
				{"import", "--in", in, "--cassette", fresh},
				{"import", "--in", in, "--cassette", existing, "--force"},
			} {
				code, _, stderr := cli(t, args...)
				tried++
				if code != 1 {
					t.Errorf("%v: exit %d, want 1: %s", args, code, stderr)
				}
				checkOneLine(t, "import", stderr)
				for _, want := range []string{"--in " + in, tc.says} {
					if !strings.Contains(stderr, want) {
						t.Errorf("%v: stderr %q does not say %q", args[len(args)-2:], stderr, want)
					}
				}
			}
			if snapshot(t, existing) != before {
				t.Error("the existing cassette changed")
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("files beside the target: %v, want only existing.cassette", names)
			}
		})
	}
	t.Logf("bad export files: %d kinds, %d imports; each exit 1 naming the file and the line or field, no cassette created or changed", len(cases), tried)
}

// TestUsageMistakes: unknown flags and bad flag values exit 2 with a
// message naming the flag (or its environment variable), before any file
// is opened or any port bound.
func TestUsageMistakes(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "c.cassette")
	cases := []struct {
		args []string
		env  [2]string
		says string
	}{
		{args: []string{"record", "--cassette", c, "--bogus"}, says: "-bogus"},
		{args: []string{"replay", "--cassete", c}, says: "-cassete"},
		{args: []string{"auto", "--cassette", c, "-x"}, says: "-x"},
		{args: []string{"export", "--cassette", c, "--format", "yaml"}, says: "-format"},
		{args: []string{"import", "--in", c, "--cassette", c, "--merge"}, says: "-merge"},
		{args: []string{"ls", "--cassette", c, "--long"}, says: "-long"},
		{args: []string{"scrub", "--cassette", c, "--maps", "a=b"}, says: "-maps"},
		{args: []string{"presets", "--yaml"}, says: "-yaml"},
		{args: []string{"demo", "--fast"}, says: "-fast"},
		{args: []string{"recrod", "--cassette", c}, says: "recrod"},
		{args: []string{"record"}, says: "--cassette"},
		{args: []string{"replay", "--listen", "127.0.0.1:0"}, says: "--cassette"},
		{args: []string{"export"}, says: "--cassette"},
		{args: []string{"import", "--cassette", c}, says: "--in"},
		{args: []string{"record", "--cassette", c, "--cassette-dir", dir}, says: "--cassette-dir"},
		{args: []string{"record", "--cassette", c, "extra"}, says: "extra"},
		{args: []string{"record", "--cassette", c, "--max-body", "0"}, says: "--max-body"},
		{args: []string{"record", "--cassette", c, "--max-body", "lots"}, says: "-max-body"},
		{args: []string{"record", "--cassette", c, "--upstream-timeout", "soon"}, says: "-upstream-timeout"},
		{args: []string{"record", "--cassette", c, "--upstream", "ftp://example.com"}, says: "--upstream"},
		{args: []string{"record", "--cassette", c, "--upstream", "_x=http://127.0.0.1:1"}, says: "--upstream"},
		{args: []string{"record", "--cassette", c, "--redact-json", ""}, says: "redact json"},
		{args: []string{"record", "--cassette", c, "--redact-header", " "}, says: "redact header"},
		{args: []string{"record", "--cassette", c, "--log-format", "xml"}, says: "--log-format"},
		{args: []string{"record", "--cassette", c, "--lock-timeout", "-"}, says: "-lock-timeout"},
		{args: []string{"replay", "--cassette", c, "--pace", "fast"}, says: "pace"},
		{args: []string{"replay", "--cassette", c, "--on-exhausted", "loop"}, says: "on-exhausted"},
		{args: []string{"replay", "--cassette", c, "--listen", "nonsense"}, says: "--listen"},
		{args: []string{"scrub", "--cassette", c, "--map", "weather"}, says: "--map"},
		{args: []string{"scrub", "--cassette", c, "--map", "=weather"}, says: "--map"},
		{args: []string{"scrub", "--cassette", c, "--map", "get_weather=NoSuchPreset"}, says: "--map"},
		{args: []string{"record", "--cassette", c}, env: [2]string{"LLMPROXY_MAX_BODY", "big"}, says: "LLMPROXY_MAX_BODY"},
		{args: []string{"record", "--cassette", c}, env: [2]string{"LLMPROXY_UPSTREAM_TIMEOUT", "1 fortnight"}, says: "LLMPROXY_UPSTREAM_TIMEOUT"},
		{args: []string{"replay"}, env: [2]string{"LLMPROXY_ON_EXHAUSTED", "loop"}, says: "--cassette"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " ")+" "+tc.env[0], func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			code, _, stderr := cli(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2: %s", code, stderr)
			}
			if !strings.Contains(stderr, tc.says) {
				t.Errorf("stderr %q does not name %q", stderr, tc.says)
			}
			for _, s := range []string{"panic", "goroutine "} {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr holds %q", s)
				}
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("usage mistakes created files: %v", entries)
	}
	t.Logf("usage mistakes: %d command lines, each exit 2 naming the flag, no file created", len(cases))
}

// TestExposure: the default address is loopback; a non-loopback --listen
// without --admin-token is a usage error before anything is bound; with a
// token, /_llmproxy/ needs it.
func TestExposure(t *testing.T) {
	var c serveConfig
	if def := c.flags("record", io.Discard).Lookup("listen").DefValue; def != "127.0.0.1:7878" {
		t.Errorf("--listen defaults to %q, want 127.0.0.1:7878", def)
	}
	path := filepath.Join(t.TempDir(), "c.cassette")
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.10:7878", "example.com:0"} {
		for _, mode := range []string{"record", "replay", "auto"} {
			code, stdout, stderr := cli(t, mode, "--cassette", path, "--listen", addr)
			if code != 2 || !strings.Contains(stderr, "--admin-token") || !strings.Contains(stderr, addr) || stdout != "" {
				t.Errorf("%s --listen %s without a token: exit %d, stdout %q, stderr %q; want 2 naming --admin-token", mode, addr, code, stdout, stderr)
			}
		}
	}
	t.Setenv("LLMPROXY_LISTEN", "0.0.0.0:0")
	if code, _, stderr := cli(t, "record", "--cassette", path); code != 2 || !strings.Contains(stderr, "--admin-token") {
		t.Errorf("LLMPROXY_LISTEN=0.0.0.0:0 without a token: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a refused command created the cassette")
	}

	// With a token (on loopback here): the API needs it, the proxied paths do not.
	t.Setenv("LLMPROXY_LISTEN", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"record", "--cassette", path, "--listen", "127.0.0.1:0", "--admin-token", "s3cret-token"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimSpace(strings.TrimPrefix(line, "llmproxy listening on "))
	for _, tc := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {"Bearer s3cret-token", 200}} {
		req, _ := http.NewRequest(http.MethodGet, base+"/_llmproxy/health", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET /_llmproxy/health with %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("record with --admin-token exited %d after its context ended", code)
	}
}
