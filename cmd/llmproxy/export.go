package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/parallel"
)

// runExport writes a cassette as stable, pretty JSON.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", stdout)
	path := fs.String("cassette", "", "cassette `file` to export")
	out := fs.String("out", "", "write to `file` instead of standard output")
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	// A lone argument is the git textconv form: llmproxy export FILE.
	if *path == "" && fs.NArg() == 1 {
		*path = fs.Arg(0)
	} else if err := noArgs(fs); err != nil {
		return err
	}
	if err := requireFlag(fs, "cassette", *path); err != nil {
		return err
	}
	c, err := cassette.Open(*path, cassette.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer c.Close()
	var buf bytes.Buffer
	if err := c.Export(&buf); err != nil {
		return fmt.Errorf("export %s: %w", *path, err)
	}
	if *out == "" {
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	return writeFileAtomic(*out, buf.Bytes())
}

// writeFileAtomic writes data to a temporary file beside path and renames it
// into place, so path is never half written.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}

// runImport builds a cassette from an export.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("import", stdout)
	in := fs.String("in", "", "export `file` to read (- for standard input)")
	path := fs.String("cassette", "", "cassette `file` to create")
	force := fs.Bool("force", false, "replace the contents of an existing cassette")
	if err := parseCommand(fs, args, "in", "cassette"); err != nil {
		return err
	}
	// An export may have been edited by hand, or written by an llmproxy
	// that knew fewer secrets: nothing reaches the file unredacted.
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		return err
	}
	x, err := cassette.DefaultIndexer()
	if err != nil {
		return err
	}
	var r io.Reader = os.Stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return fmt.Errorf("--in %s: %w", *in, err)
		}
		defer f.Close()
		if done, err := importStream(f, *path, red, x); done || err != nil {
			return err
		}
		r = f
	}
	ct, err := cassette.ReadExport(r)
	if err != nil {
		return fmt.Errorf("--in %s: %w", *in, err)
	}
	redactAll(red, ct.Interactions)
	ct.Meta.IndexRules = x.Fingerprint()
	return replaceCassette(*path, ct, x, *force)
}

// importStream builds a new cassette at path from the export in f as a
// stream (cassette.ImportFile), when nothing is at path yet and f is a
// regular file. It reports false, with f rewound, when it did not: the
// export is then read whole, which names the fault of an export the stream
// does not take.
func importStream(f *os.File, path string, red *cassette.Redactor, x *cassette.Indexer) (bool, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	if _, err := os.Lstat(path); err == nil {
		return false, nil // an existing cassette is replaced in one transaction under its lock
	}
	done, err := cassette.ImportFile(path, f, st.Size(), red, x.Keys, x.Fingerprint(), cassette.Options{Version: version})
	if err != nil {
		return false, fmt.Errorf("--cassette %s: %w", path, err)
	}
	if !done {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return false, fmt.Errorf("--in %s: %w", f.Name(), err)
		}
	}
	return done, nil
}

// redactAll redacts every interaction, on every CPU at once.
func redactAll(red *cassette.Redactor, all []*cassette.Interaction) {
	parallel.Each(len(all), func(n int) error {
		red.Redact(all[n])
		return nil
	})
}

// replaceCassette writes ct as the whole contents of the cassette at path:
// a new cassette is built beside it and put in place whole
// (cassette.WriteFile); an existing one (only with force) is rewritten in
// one transaction under its lock.
func replaceCassette(path string, ct *cassette.Contents, x *cassette.Indexer, force bool) error {
	if _, err := os.Stat(path); err == nil {
		c, err := cassette.Open(path, cassette.Options{Version: version})
		if err != nil {
			return err
		}
		defer c.Close()
		if n, err := c.Len(); err != nil {
			return err
		} else if n > 0 && !force {
			return fmt.Errorf("--cassette %s already holds %d interactions; use --force to replace them", path, n)
		}
		return c.Replace(ct, x.Keys)
	}
	if err := cassette.WriteFile(path, ct, x.Keys, cassette.Options{Version: version}); err != nil {
		return fmt.Errorf("--cassette %s: %w", path, err)
	}
	return nil
}
