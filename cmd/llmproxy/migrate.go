package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/llmproxy/llmproxy/cassette"
)

// runMigrate rewrites a cassette of an older store format in the current
// one, atomically, and says what it did.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stdout)
	path := fs.String("cassette", "", "cassette `file` to rewrite in the current format")
	if err := parseCommand(fs, args, "cassette"); err != nil {
		return err
	}
	before, err := os.Stat(*path)
	if err != nil {
		return fmt.Errorf("--cassette %s: %w", *path, err)
	}
	mig, err := cassette.Migrate(*path, cassette.Options{Version: version})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", *path, err)
	}
	if mig.From == mig.To {
		fmt.Fprintf(stdout, "%s is already in format version %d (%d interactions); left as it was\n", *path, mig.To, mig.Interactions)
		return nil
	}
	after, err := os.Stat(*path)
	if err != nil {
		return fmt.Errorf("--cassette %s: %w", *path, err)
	}
	fmt.Fprintf(stdout, "migrated %s from format version %d to %d: %d interactions, %d fixtures, %d bytes now %d\n",
		*path, mig.From, mig.To, mig.Interactions, mig.Fixtures, before.Size(), after.Size())
	return nil
}
