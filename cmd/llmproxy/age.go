package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
)

// ageFlag is --max-age: a duration that also takes days, "90d" or
// "1d12h", beside Go's h, m and s units.
type ageFlag struct{ d time.Duration }

func (a *ageFlag) String() string {
	if a.d == 0 {
		return ""
	}
	return cassette.FormatAge(a.d)
}

func (a *ageFlag) Set(v string) error {
	d, err := parseAge(v)
	if err != nil {
		return err
	}
	a.d = d
	return nil
}

// parseAge reads a positive age: whole days ("90d"), Go's units ("36h",
// "90m", "45s"), or days then Go's units ("1d12h").
func parseAge(v string) (time.Duration, error) {
	var d time.Duration
	rest := v
	if days, after, ok := strings.Cut(v, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90d, 36h, 90m or 1d12h", v)
		}
		d, rest = time.Duration(n)*24*time.Hour, after
	}
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90d, 36h, 90m or 1d12h", v)
		}
		d += r
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be positive", v)
	}
	return d, nil
}

// oldRecordings is what --max-age found in the cassettes it checked.
type oldRecordings struct {
	count          int
	oldestCassette string
	oldest         cassette.Old
	// listed names the old interactions, "FILE: 1, 2", for --strict-age.
	listed []string
}

// maxListedOld bounds the interactions a --strict-age failure names.
const maxListedOld = 20

func (o *oldRecordings) add(file string, old cassette.Old) {
	if len(old.IDs) == 0 {
		return
	}
	o.count += len(old.IDs)
	if o.oldest.Oldest == 0 || old.OldestAt.Before(o.oldest.OldestAt) {
		o.oldest, o.oldestCassette = old, file
	}
	ids := make([]string, 0, min(len(old.IDs), maxListedOld))
	for _, id := range old.IDs[:min(len(old.IDs), maxListedOld)] {
		ids = append(ids, strconv.FormatUint(id, 10))
	}
	if len(old.IDs) > maxListedOld {
		ids = append(ids, fmt.Sprintf("and %d more", len(old.IDs)-maxListedOld))
	}
	o.listed = append(o.listed, fmt.Sprintf("%s: interaction(s) %s", file, strings.Join(ids, ", ")))
}

// checkAges warns on stderr, in one line, about the interactions of the
// open cassette cs (or, with it nil, of every cassette in dir) recorded
// more than maxAge before now; with strict it fails instead, naming them.
// from names the flag.
func checkAges(cs *cassette.Cassette, dir string, maxAge time.Duration, strict bool, from string, now time.Time, stderr io.Writer) error {
	before := now.Add(-maxAge)
	var o oldRecordings
	if cs != nil {
		old, err := cs.RecordedBefore(before)
		if err != nil {
			return err
		}
		o.add(cs.Path(), old)
	} else {
		files, err := filepath.Glob(filepath.Join(dir, "*.cassette"))
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := checkFileAges(f, before, &o); err != nil {
				return err
			}
		}
	}
	if o.count == 0 {
		return nil
	}
	oldest := fmt.Sprintf("the oldest is interaction %d of %s, recorded %s (%s ago)", o.oldest.Oldest, o.oldestCassette,
		o.oldest.OldestAt.UTC().Format(time.RFC3339), cassette.FormatAge(now.Sub(o.oldest.OldestAt)))
	if strict {
		return fmt.Errorf("%d interaction(s) recorded more than %s ago (%s, --strict-age): %s; %s; re-record them or raise %s",
			o.count, cassette.FormatAge(maxAge), from, strings.Join(o.listed, "; "), oldest, from)
	}
	fmt.Fprintf(stderr, "llmproxy: warning: %d interaction(s) recorded more than %s ago (%s); %s\n", o.count, cassette.FormatAge(maxAge), from, oldest)
	return nil
}

// checkFileAges adds the old interactions of the cassette file f to o.
func checkFileAges(f string, before time.Time, o *oldRecordings) error {
	if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	c, err := cassette.Open(f, cassette.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer c.Close()
	old, err := c.RecordedBefore(before)
	if err != nil {
		return err
	}
	o.add(f, old)
	return nil
}
