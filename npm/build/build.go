package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// options are what one release build makes.
type options struct {
	// Root is the llmproxy checkout: ./cmd/llmproxy and npm/llmproxy are
	// under it.
	Root string
	// Out is the directory written to; it must be absent or empty, so
	// that no file of an earlier build is taken for one of this build.
	Out string
	// Version is stamped into the binaries when not empty (v1.2.3).
	Version string
	// Platforms are the targets, at least one.
	Platforms []platform
	// Pack packs each npm package into Out with npm pack.
	Pack bool
	// Wheels writes a Python platform wheel per platform into Out.
	Wheels bool
	// Log receives a line per step; nil means none.
	Log io.Writer
}

// result is what a build wrote.
type result struct {
	// Version is the binaries' version as `llmproxy version` prints it,
	// and NPMVersion the packages' version: the same without the "v".
	Version, NPMVersion string
	// Binaries are the binaries' paths by platform (GOOS/GOARCH).
	Binaries map[string]string
	// MainDir is the llmproxy package's folder, and PlatformDirs the
	// platform packages' folders by platform.
	MainDir      string
	PlatformDirs map[string]string
	// Tarballs are the npm pack files by package name (with -pack).
	Tarballs map[string]string
	// Wheels are the wheels' paths by platform (with -wheels).
	Wheels map[string]string
}

// ldflags are the linker flags of every build: no symbol table and no
// DWARF (a third smaller; panics still name functions and lines).
const ldflags = "-s -w"

// stampFlag is the -X flag that sets the version `llmproxy version` prints
// (cmd/llmproxy/version.go).
const stampFlag = "-X main.stampedVersion="

// build makes what o asks for, in this order: the binaries, their check,
// the npm packages, their tarballs, the wheels and SHA256SUMS.
func build(ctx context.Context, o options) (result, error) {
	r := result{Binaries: map[string]string{}, PlatformDirs: map[string]string{}, Tarballs: map[string]string{}, Wheels: map[string]string{}}
	if len(o.Platforms) == 0 {
		return r, errors.New("no platform to build")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := emptyDir(o.Out); err != nil {
		return r, err
	}
	npmDir := filepath.Join(o.Out, "npm")
	for _, p := range o.Platforms {
		r.PlatformDirs[p.String()] = filepath.Join(npmDir, p.dir())
		bin := filepath.Join(r.PlatformDirs[p.String()], "bin", p.exe())
		if err := goBuild(ctx, o, p, bin); err != nil {
			return r, err
		}
		fmt.Fprintf(o.Log, "built %s: %s\n", p, bin)
		r.Binaries[p.String()] = bin
	}
	var err error
	if r.Version, err = builtVersion(ctx, o, r.Binaries); err != nil {
		return r, err
	}
	if r.NPMVersion, err = npmVersion(r.Version); err != nil {
		return r, err
	}
	fmt.Fprintf(o.Log, "version %s (npm %s)\n", r.Version, r.NPMVersion)
	for _, p := range o.Platforms {
		if err := checkBinary(r.Binaries[p.String()], p, o.Version); err != nil {
			return r, err
		}
	}
	if r.MainDir, err = writePackages(o, r); err != nil {
		return r, err
	}
	if o.Pack {
		if err := pack(ctx, o, &r); err != nil {
			return r, err
		}
	}
	if o.Wheels {
		if err := writeWheels(o, &r); err != nil {
			return r, err
		}
	}
	if err := writeSums(o.Out); err != nil {
		return r, err
	}
	fmt.Fprintf(o.Log, "checksums: %s\n", filepath.Join(o.Out, sumsFile))
	return r, nil
}

// emptyDir makes dir, or checks that it is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("-out %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("-out %s is not empty (it holds %s): a release build starts from an empty directory", dir, entries[0].Name())
	}
	return nil
}

// goBuild cross-compiles ./cmd/llmproxy for p into bin.
func goBuild(ctx context.Context, o options, p platform, bin string) error {
	flags := ldflags
	if o.Version != "" {
		flags += " " + stampFlag + o.Version
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", flags, "-o", bin, "./cmd/llmproxy")
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.GOOS, "GOARCH="+p.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", p, err, out)
	}
	return nil
}

// builtVersion is what `llmproxy version` prints for the built binaries:
// the host's binary is run, or, when the host is not among the platforms,
// a binary built for it alike into a temporary directory. With a stamped
// version, it must be that one.
func builtVersion(ctx context.Context, o options, bins map[string]string) (string, error) {
	host, err := hostPlatform()
	if err != nil {
		return "", fmt.Errorf("cannot run llmproxy version: %w", err)
	}
	bin, ok := bins[host.String()]
	if !ok {
		tmp, err := os.MkdirTemp("", "llmproxy-version-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, host.exe())
		if err := goBuild(ctx, o, host, bin); err != nil {
			return "", err
		}
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", bin, err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "llmproxy ")
	if !ok || v == "" || strings.ContainsAny(v, " \n") {
		return "", fmt.Errorf("%s version printed %q, not \"llmproxy VERSION\"", bin, out)
	}
	if o.Version != "" && v != o.Version {
		return "", fmt.Errorf("%s version printed %s, not the stamped %s", bin, v, o.Version)
	}
	return v, nil
}

// semverRe is a semantic version 2.0.0 (the expression semver.org gives).
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// npmVersion is the npm packages' version for llmproxy's version v: v
// without its "v", which must leave a semantic version.
func npmVersion(v string) (string, error) {
	s := strings.TrimPrefix(v, "v")
	if !semverRe.MatchString(s) {
		return "", fmt.Errorf("version %q is not a semantic version (v1.2.3, v1.2.3-rc.1): npm needs one; stamp one with -version", v)
	}
	return s, nil
}

// runQuiet runs cmd and returns its stdout; a failure carries its stderr.
func runQuiet(cmd *exec.Cmd) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// writeJSON writes v to path as JSON indented by two spaces, with a final
// newline and without escaping <, > and &.
func writeJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
