package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // GOOS/GOARCH; nil with an error
		err  string
	}{
		{"all", []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}, ""},
		{"linux/arm64, windows/amd64", []string{"linux/arm64", "windows/amd64"}, ""},
		{"linux/386", nil, `"linux/386" is not a release platform`},
		{"linux/amd64,linux/amd64", nil, `"linux/amd64" is named twice`},
		{"", nil, `"" is not a release platform`},
	} {
		ps, err := parsePlatforms(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parsePlatforms(%q): error %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("parsePlatforms(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	host, err := parsePlatforms("host")
	if _, known := findPlatform(runtime.GOOS + "/" + runtime.GOARCH); known != (err == nil) || (err == nil && host[0].String() != runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("parsePlatforms(host) = %v, %v on %s/%s", host, err, runtime.GOOS, runtime.GOARCH)
	}
}

// TestPlatformNames: the package names are what the launcher asks for,
// @llmproxy/ + process.platform + "-" + process.arch.
func TestPlatformNames(t *testing.T) {
	want := map[string]string{
		"linux/amd64": "@llmproxy/linux-x64", "linux/arm64": "@llmproxy/linux-arm64",
		"darwin/amd64": "@llmproxy/darwin-x64", "darwin/arm64": "@llmproxy/darwin-arm64",
		"windows/amd64": "@llmproxy/win32-x64", "windows/arm64": "@llmproxy/win32-arm64",
	}
	for _, p := range platforms {
		if p.npmName() != want[p.String()] {
			t.Errorf("%s: package %s, want %s", p, p.npmName(), want[p.String()])
		}
	}
	if len(platforms) != len(want) {
		t.Errorf("%d platforms, want %d", len(platforms), len(want))
	}
}

func TestNPMVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"v1.2.3-rc.1", "1.2.3-rc.1"},
		{"0.1.0-dev", "0.1.0-dev"},
		{"v0.0.0-20261203131500-a656563f0e2b+dirty", "0.0.0-20261203131500-a656563f0e2b+dirty"},
		{"v1.2", ""},
		{"v01.2.3", ""},
		{"(devel)", ""},
		{"v1.2.3 extra", ""},
	} {
		got, err := npmVersion(tc.in)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("npmVersion(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestBuildRefuses: a build that cannot be right stops before building.
func TestBuildRefuses(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "old.tgz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    options
		want string
	}{
		{"an output folder with files", options{Root: root, Out: full, Platforms: platforms}, "old.tgz"},
		{"no platform", options{Root: root, Out: t.TempDir()}, "no platform"},
	} {
		if _, err := build(context.Background(), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if err := run(context.Background(), []string{"-platforms", "plan9/amd64"}, nil, new(strings.Builder)); err == nil || !strings.Contains(err.Error(), "plan9/amd64") {
		t.Errorf("-platforms plan9/amd64: error %v", err)
	}
}

// TestTemplate: the llmproxy package.json names the launcher as its bin,
// ships it, and reads back in its own order with the version and the
// optional dependencies written.
func TestTemplate(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, keys, err := readTemplate(root)
	if err != nil {
		t.Fatal(err)
	}
	if keys[0] != "name" || keys[1] != "version" {
		t.Errorf("keys %v; want name and version first", keys)
	}
	var bin map[string]string
	var files []string
	if json.Unmarshal(tmpl["bin"], &bin) != nil || bin["llmproxy"] != "bin/llmproxy.js" || json.Unmarshal(tmpl["files"], &files) != nil || files[0] != "bin/llmproxy.js" {
		t.Errorf("bin %s, files %s; want the launcher bin/llmproxy.js in both", tmpl["bin"], tmpl["files"])
	}
	if fi, err := os.Stat(filepath.Join(root, templateDir, "bin", "llmproxy.js")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("the launcher: %v, %v; want an executable file", fi, err)
	}
	b, err := json.Marshal(orderedObject{[]string{"b", "a"}, map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`{"c":2}`)}})
	if err != nil || string(b) != `{"b":{"c":2},"a":1}` {
		t.Errorf("orderedObject: %s, %v", b, err)
	}
	keys, err = objectKeys([]byte(`{"z":1,"a":{"z":2},"z":3}`))
	if err != nil || strings.Join(keys, ",") != "z,a" {
		t.Errorf("objectKeys = %v, %v; want z,a", keys, err)
	}
}

// TestCheckBinaryRefuses: checkBinary tells a file that is no executable,
// one for another platform and a Go program other than llmproxy, using
// this test binary as the last two.
func TestCheckBinaryRefuses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host, err := hostPlatform()
	if err != nil {
		t.Skip(err)
	}
	other := platforms[0]
	if other == host {
		other = platforms[1]
	}
	text := filepath.Join(t.TempDir(), "llmproxy")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		p          platform
		want       string
	}{
		{"a script", text, host, "not an ELF, Mach-O or PE executable"},
		{"another platform", self, other, "not " + other.String()},
		{"another program", self, host, "not ./cmd/llmproxy"},
	} {
		if err := checkBinary(tc.path, tc.p, ""); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: %v; want an error naming the file and %q", tc.name, err, tc.want)
		}
	}
}

func TestPEP440(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1.2.3", "1.2.3"},
		{"1.2.3-rc.1", "1.2.3rc1"},
		{"1.2.3-beta.2", "1.2.3b2"},
		{"1.2.3-alpha1", "1.2.3a1"},
		{"0.1.0-dev", "0.1.0.dev0"},
		{"0.0.0-npxtest.1", "0.0.0.dev1+npxtest"},
		{"0.0.0-20261203131500-a656563f0e2b+dirty", "0.0.0.dev20261203131500+a656563f0e2b.dirty"},
		{"1.0.0+Build-7", "1.0.0+build.7"},
		{"1.0.0-0.3.x", "1.0.0.dev0+3.x"},
		{"1.2", ""},
	} {
		got, err := pep440(tc.in)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("pep440(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCrossCompile builds ./cmd/llmproxy as the release does for two
// platforms unlike the host, Windows (no process groups, .exe) and macOS
// on arm64, and checks the binaries. The release builds all six; a test
// builds two, since each platform compiles every package afresh (the six
// took 6 minutes of CPU on the 2-core build machine, 4m40s user and 1m19s
// system) and CI's time matters.
func TestCrossCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles llmproxy twice")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"windows/amd64", "darwin/arm64"} {
		p, _ := findPlatform(name)
		bin := filepath.Join(t.TempDir(), p.exe())
		o := options{Root: root, Version: "v0.0.0-cross.1"}
		if err := goBuild(context.Background(), o, p, bin); err != nil {
			t.Fatal(err)
		}
		if err := checkBinary(bin, p, o.Version); err != nil {
			t.Error(err)
		}
	}
}
