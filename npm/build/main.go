// Command build is llmproxy's release build. It cross-compiles
// ./cmd/llmproxy with CGO_ENABLED=0 for each platform, checks each binary's
// format, platform and version, writes the npm packages that carry the
// binaries to machines without Go (one package per platform, and the
// llmproxy package that has them all as optional dependencies, as esbuild
// does), with -pack packs them with npm pack, with -wheels writes a Python
// platform wheel per platform that puts the binary on PATH, and lists every
// file it wrote with its SHA-256 in OUT/SHA256SUMS. docs/release.md is the
// checklist around it.
//
//	go run ./npm/build -version v1.2.3 -out dist -pack -wheels   # a release: all six platforms
//	go run ./npm/build -platforms host -out /tmp/llmproxy-dist   # this machine's package only
//
// The version is the one `llmproxy version` prints: -version stamps it
// (-ldflags -X main.stampedVersion), else it is the build information's.
// It must be a semantic version, since npm requires one.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

// run parses the flags and builds.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "dist", "the directory to write to: absent or empty")
	version := fs.String("version", "", "the version to stamp, e.g. v1.2.3; empty: the build information's")
	plats := fs.String("platforms", "all", `"all", "host", or GOOS/GOARCH pairs separated by commas (linux/amd64,darwin/arm64)`)
	pack := fs.Bool("pack", false, "pack each npm package with npm pack into OUT")
	wheels := fs.Bool("wheels", false, "write a Python platform wheel per platform into OUT")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	ps, err := parsePlatforms(*plats)
	if err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	_, err = build(ctx, options{Root: root, Out: dir, Version: *version, Platforms: ps, Pack: *pack, Wheels: *wheels, Log: stdout})
	return err
}

// moduleRoot is the directory of llmproxy's go.mod, found from the working
// directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "npm", "llmproxy", "package.json")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no llmproxy checkout (go.mod beside npm/llmproxy) in the working directory or above it")
		}
		dir = parent
	}
}
