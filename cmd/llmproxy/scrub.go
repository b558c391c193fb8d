package main

import (
	"context"
	"errors"
	"io"
)

// runScrub is not built yet: preset substitution is issue 5.
func runScrub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("scrub: preset substitution is not built yet in this version")
}
