package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/llmproxy/llmproxy/cassette"
)

// errUsedFile means a --used file that says nothing prune can use.
var errUsedFile = errors.New("not a run report or a saved /_llmproxy/unused")

// maxUsedFile bounds the --used file read.
const maxUsedFile = 64 << 20

// runPrune is `llmproxy prune`: it drops the interactions a run did not use.
func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("prune", stdout)
	path := fs.String("cassette", "", "cassette `file` to prune")
	used := fs.String("used", "", "what a run did not use: the JSON `file` of its report (--report FILE.json, or a -- CMD run's report.json), or GET /_llmproxy/unused saved as JSON")
	if err := parseCommand(fs, args, "cassette", "used"); err != nil {
		return err
	}
	ids, err := unusedIDs(*used, *path)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		fmt.Fprintf(stdout, "%s lists no unused interaction of %s; nothing removed\n", *used, *path)
		return nil
	}
	x, err := cassette.DefaultIndexer()
	if err != nil {
		return err
	}
	removed, err := cassette.Prune(*path, ids, x.Keys, x.Fingerprint(), cassette.Options{Version: version})
	if err != nil {
		return err
	}
	for _, s := range removed {
		fmt.Fprintf(stdout, "removed interaction %d %s %s %d\n", s.ID, printable(s.Method), printable(cassette.ProxyPath(s.Upstream, s.Path)), s.Status)
	}
	fmt.Fprintf(stdout, "pruned %s: removed %d interaction(s); the rest are renumbered from 1\n", *path, len(removed))
	return nil
}

// usedDoc is what prune reads of a --used file: the fields of both shapes.
type usedDoc struct {
	// A run report (runReport) has a command and unused groups.
	Command *string `json:"command"`
	// GET /_llmproxy/unused has the cassette, the total and a page of
	// summaries, and an error when the listing broke off.
	Cassette string          `json:"cassette"`
	Total    *int            `json:"total"`
	Unused   json.RawMessage `json:"unused"`
	Error    json.RawMessage `json:"error"`
}

// unusedIDs reads the ids of the interactions of the cassette at path that
// the --used file says a run did not use.
func unusedIDs(file, path string) ([]uint64, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--used: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxUsedFile+1))
	if err != nil {
		return nil, fmt.Errorf("--used %s: %w", file, err)
	}
	if len(data) > maxUsedFile {
		return nil, fmt.Errorf("--used %s: larger than %d bytes: %w", file, maxUsedFile, errUsedFile)
	}
	var doc usedDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("--used %s: %v: %w", file, err, errUsedFile)
	}
	switch {
	case len(doc.Unused) == 0 || bytes.Equal(doc.Unused, []byte("null")):
		return nil, fmt.Errorf("--used %s: no \"unused\" list: %w (want a run report's JSON or GET /_llmproxy/unused saved as JSON)", file, errUsedFile)
	case doc.Command != nil:
		return reportUnused(file, path, *doc.Command, doc.Unused)
	case doc.Total != nil:
		return apiUnused(file, path, &doc)
	}
	return nil, fmt.Errorf("--used %s: an \"unused\" list with neither \"command\" (a run report) nor \"total\" (GET /_llmproxy/unused): %w", file, errUsedFile)
}

// reportUnused reads the unused interactions of path from a run report's
// unused groups.
func reportUnused(file, path, command string, raw json.RawMessage) ([]uint64, error) {
	if command != "replay" && command != "auto" {
		return nil, fmt.Errorf("--used %s: the report of a %q run lists no unused interactions (only replay and auto do): %w", file, command, errUsedFile)
	}
	var groups []unusedGroup
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf("--used %s: unused: %v: %w", file, err, errUsedFile)
	}
	var others []string
	for n, g := range groups {
		if g.Cassette == "" {
			continue
		}
		if !sameCassette(g.Cassette, path) {
			others = append(others, g.Cassette)
			continue
		}
		ids, err := groupIDs(g)
		if err != nil {
			return nil, fmt.Errorf("--used %s: unused[%d]: %w", file, n, err)
		}
		return ids, nil
	}
	if len(others) > 0 {
		return nil, fmt.Errorf("--used %s lists unused interactions of %q, not of %s: %w", file, others, path, errUsedFile)
	}
	return nil, nil
}

// itemID reads the id of a run report's unused item, "interaction N …".
var itemID = regexp.MustCompile(`^interaction ([0-9]+) `)

// groupIDs is every id of an unused group: its ids, or (a report written
// before they were kept) its items when they are all of them.
func groupIDs(g unusedGroup) ([]uint64, error) {
	if g.IDs != nil {
		if len(g.IDs) != g.Count {
			return nil, fmt.Errorf("%d ids for a count of %d: %w", len(g.IDs), g.Count, errUsedFile)
		}
		return g.IDs, nil
	}
	if len(g.Items) != g.Count {
		return nil, fmt.Errorf("lists %d of %d unused interactions and not their ids: %w", len(g.Items), g.Count, errUsedFile)
	}
	ids := make([]uint64, 0, len(g.Items))
	for k, it := range g.Items {
		m := itemID.FindStringSubmatch(it)
		if m == nil {
			return nil, fmt.Errorf("items[%d] %q is not \"interaction ID METHOD PATH\": %w", k, it, errUsedFile)
		}
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %v: %w", k, err, errUsedFile)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// apiUnused reads the unused interactions of path from GET
// /_llmproxy/unused saved as JSON, which must hold every one of them.
func apiUnused(file, path string, doc *usedDoc) ([]uint64, error) {
	if doc.Cassette != "" && !sameCassette(doc.Cassette, path) {
		return nil, fmt.Errorf("--used %s lists unused interactions of %s, not of %s: %w", file, doc.Cassette, path, errUsedFile)
	}
	if len(doc.Error) > 0 && !bytes.Equal(doc.Error, []byte("null")) {
		return nil, fmt.Errorf("--used %s: the listing ended with an error (%s): %w", file, doc.Error, errUsedFile)
	}
	var items []struct {
		ID *uint64 `json:"id"`
	}
	if err := json.Unmarshal(doc.Unused, &items); err != nil {
		return nil, fmt.Errorf("--used %s: unused: %v: %w", file, err, errUsedFile)
	}
	if len(items) != *doc.Total {
		return nil, fmt.Errorf("--used %s holds %d of %d unused interactions, one page: save them all at once (?limit=%d, up to 1000) or use the run report (--report): %w",
			file, len(items), *doc.Total, *doc.Total, errUsedFile)
	}
	ids := make([]uint64, 0, len(items))
	for k, it := range items {
		if it.ID == nil {
			return nil, fmt.Errorf("--used %s: unused[%d] has no \"id\": %w", file, k, errUsedFile)
		}
		ids = append(ids, *it.ID)
	}
	return ids, nil
}

// sameCassette reports whether a cassette named in a run's JSON is the file
// at path: the same name, the same absolute path, or the same file.
func sameCassette(named, path string) bool {
	if named == path {
		return true
	}
	a, errA := filepath.Abs(named)
	b, errB := filepath.Abs(path)
	if errA == nil && errB == nil && a == b {
		return true
	}
	sa, errA := os.Stat(named)
	sb, errB := os.Stat(path)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
