package cassette_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

const importSecret = "sk-proj-AbCdEf1234567890XyZabc"

// importExport is the export of n interactions of about 5 KB, some
// streamed, each holding a key-shaped secret, and a fixture: more than one
// batch of ImportFile.
func importExport(t *testing.T, n int) []byte {
	t.Helper()
	all := make([]*cassette.Interaction, n)
	for k := range all {
		i := sample(k)
		i.ID = uint64(k + 1)
		i.Request.Body = cassette.Body(fmt.Sprintf(`{"model":"m","n":%d,"pad":%q}`, k, strings.Repeat("x", 4000+k%100)))
		if k%50 == 7 {
			i.Response.Framing, i.Response.Events = "", nil
			i.Response.Body = cassette.Body([]byte{0xde, 0xad, 0xbe, 0xef, byte(k)}) // exported as base64
		} else if k%3 == 0 {
			i.Response.Framing, i.Response.Events = "", nil
			i.Response.Body = cassette.Body(fmt.Sprintf(`{"id":"chatcmpl-%d","key":"%s"}`, k, importSecret))
		} else {
			i.Response.Events[0].Data = cassette.Body("data: {\"key\":\"" + importSecret + "\"}\n\n")
		}
		all[k] = i
	}
	ct := &cassette.Contents{Interactions: all, Fixtures: map[string]json.RawMessage{"call_1": json.RawMessage(`{"t": 21}`)}}
	ct.Meta.Version = "test"
	var b bytes.Buffer
	if err := cassette.WriteExport(&b, ct); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImportFile: a cassette streamed from an export by ImportFile holds
// what ReadExport, Redact and WriteFile make of it — the same interactions,
// index keys, fixtures and metadata, and so the same export — with no
// secret in the file.
func TestImportFile(t *testing.T) {
	data := importExport(t, 1100)
	if len(data) < 5<<20 {
		t.Fatalf("the export is %d bytes, too small for two batches", len(data))
	}
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	streamed := filepath.Join(dir, "streamed.cassette")
	ok, err := cassette.ImportFile(streamed, bytes.NewReader(data), int64(len(data)), red, keys, "rules", cassette.Options{Version: "test"})
	if err != nil || !ok {
		t.Fatalf("ImportFile: %v, %v", ok, err)
	}
	ct, err := cassette.ReadExport(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ct.Interactions {
		red.Redact(i)
	}
	ct.Meta.IndexRules = "rules"
	whole := filepath.Join(dir, "whole.cassette")
	if err := cassette.WriteFile(whole, ct, keys, cassette.Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(streamed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(importSecret)) {
		t.Error("the streamed cassette holds the secret")
	}
	var exports [2]bytes.Buffer
	var loads [2]*cassette.Contents
	for n, path := range []string{streamed, whole} {
		c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if loads[n], err = c.Load(); err != nil {
			t.Fatal(err)
		}
		if err := c.Export(&exports[n]); err != nil {
			t.Fatal(err)
		}
		for _, i := range loads[n].Interactions {
			k, _, _ := keys(i)
			if ids, err := c.Lookup(k); err != nil || len(ids) != 1 || ids[0] != i.ID {
				t.Fatalf("%s: Lookup of interaction %d: %v, %v", path, i.ID, ids, err)
			}
		}
	}
	if !reflect.DeepEqual(loads[0], loads[1]) {
		t.Error("the streamed cassette's contents differ from WriteFile's")
	}
	if !bytes.Equal(exports[0].Bytes(), exports[1].Bytes()) {
		t.Error("the streamed cassette exports other bytes than WriteFile's")
	}
	if !strings.Contains(string(data), `"base64"`) {
		t.Error("the export has no base64 body, read by encoding/json")
	}
	if len(loads[0].Interactions) != 1100 || loads[0].Meta.IndexRules != "rules" || string(loads[0].Fixtures["call_1"]) != `{"t":21}` {
		t.Errorf("streamed: %d interactions, rules %q, fixture %s", len(loads[0].Interactions), loads[0].Meta.IndexRules, loads[0].Fixtures["call_1"])
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in the directory, want the two cassettes", len(entries))
	}
}

// TestImportFileDeclines: an export the stream does not take, wherever the
// fault (in the last batch too), leaves no file and no draft behind, and
// says so rather than failing, so that ReadExport can name the fault.
func TestImportFileDeclines(t *testing.T) {
	good := string(importExport(t, 1100))
	last := strings.LastIndex(good, `"id": 1100,`)
	edit := func(at int, old, new string) string {
		k := strings.Index(good[at:], old)
		if k < 0 {
			t.Fatalf("no %q after %d", old, at)
		}
		return good[:at+k] + new + good[at+k+len(old):]
	}
	red, _ := cassette.NewRedactor(nil, nil)
	for name, data := range map[string]string{
		"unknown field in the last":  edit(last, `"upstream"`, `"colour": "blue", "upstream"`),
		"id out of order":            edit(last, `"id": 1100`, `"id": 1101`),
		"bad base64 body":            base64Body(t, good, last),
		"cut short":                  good[:len(good)*3/4],
		"trailing data":              good + "{}",
		"wrong format":               edit(0, `"llmproxy-cassette"`, `"vcr"`),
		"newer version":              edit(0, `"format_version": 1`, `"format_version": 2`),
		"repeated field":             edit(0, `"format": "llmproxy-cassette",`, `"format": "llmproxy-cassette", "format": "llmproxy-cassette",`),
		"not an object":              "[]",
		"empty":                      "",
		"fixture with an empty name": edit(0, `"call_1"`, `""`),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.cassette")
			ok, err := cassette.ImportFile(path, strings.NewReader(data), int64(len(data)), red, keys, "rules", cassette.Options{})
			if ok || err != nil {
				t.Errorf("ImportFile: %v, %v; want false, nil", ok, err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%d files left in the directory", len(entries))
			}
		})
	}
}

// base64Body is the export with the request body of the interaction at
// at written as base64 that is not base64.
func base64Body(t *testing.T, good string, at int) string {
	start := at + strings.Index(good[at:], `"body": "{`)
	end := start + strings.IndexByte(good[start:], '\n')
	if start < at || end < start {
		t.Fatal("no request body")
	}
	line := `"body": {"base64": "!!!"}`
	if strings.HasSuffix(good[:end], ",") {
		line += ","
	}
	return good[:start] + line + good[end:]
}
