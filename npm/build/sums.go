package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sumsFile is the checksum list the build writes into OUT, in the format
// of sha256sum: `cd OUT && sha256sum -c SHA256SUMS` checks it.
const sumsFile = "SHA256SUMS"

// writeSums lists every file under dir, in lexical order of its slash
// path, with its SHA-256.
func writeSums(dir string) error {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return fmt.Errorf("checksums of %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, sumsFile), []byte(b.String()), 0o644)
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
