package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// fallbackVersion is the version of a build that carries none: a test
// binary, or a build outside version control.
const fallbackVersion = "0.1.0-dev"

// stampedVersion is the version a release build sets with
// -ldflags "-X main.stampedVersion=v1.2.3" (npm/build does); empty in
// other builds.
var stampedVersion string

// version is llmproxy's version, printed by `llmproxy version` and stamped
// into new cassettes' metadata: the stamped one, else the build
// information's.
var version = stampedOr(stampedVersion, debug.ReadBuildInfo)

// stampedOr is stamped, or when that is empty the version of the build
// information that info returns.
func stampedOr(stamped string, info func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	return buildVersion(info())
}

// buildVersion is the main module's version in the build information: the
// tag that `go install …@v1.2.3` built, or the pseudo-version (commit time
// and hash, "+dirty" for uncommitted changes) that go build stamps in a
// git checkout; fallbackVersion when there is none.
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return fallbackVersion
	}
	return info.Main.Version
}

// runVersion prints "llmproxy VERSION".
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stdout)
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, "llmproxy", version)
	return err
}
