package main

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sdkModules are the provider SDKs that tests drive and the binary must not
// link: each would add megabytes and minutes of cold build for nothing the
// proxy does.
var sdkModules = []string{
	"github.com/openai/openai-go",
	"github.com/anthropics/anthropic-sdk-go",
	"google.golang.org/genai",
	"github.com/sashabaranov/go-openai",
}

// TestBinaryLinksNoSDK lists the packages the llmproxy binary is built from
// and fails on any provider SDK among them.
func TestBinaryLinksNoSDK(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to list the binary's packages with")
		}
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, sdk := range sdkModules {
			if pkg == sdk || strings.HasPrefix(pkg, sdk+"/") {
				t.Errorf("the binary links %s", pkg)
			}
		}
	}
}

// moduleDeps lists the packages of this module that the package at dir
// (relative to the module's root) is built from, itself left out.
func moduleDeps(t *testing.T, dir string) []string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to list the packages with")
		}
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./"+dir)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./%s: %v", dir, err)
	}
	const module = "github.com/llmproxy/llmproxy/"
	var deps []string
	for _, pkg := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(pkg, module); ok && rest != dir {
			deps = append(deps, rest)
		}
	}
	return deps
}

// TestPackageDirection: data flows one way (docs/design.md). The ground
// packages name none above them, and nothing below the HTTP server needs
// it for keys.
func TestPackageDirection(t *testing.T) {
	tests := []struct {
		dir     string
		allowed []string // the module's packages it may be built from; nil: any but never
		never   []string
	}{
		{dir: "internal/jsonvalue", allowed: []string{}},
		{dir: "wire", allowed: []string{"internal/jsonvalue"}},
		{dir: "faults", allowed: []string{}},
		{dir: "presets", allowed: []string{"wire", "internal/jsonvalue"}},
		{dir: "match", never: []string{"cassette", "store", "proxy"}},
		{dir: "cassette", never: []string{"fixture", "scenario", "view", "proxy"}},
		{dir: "fixture", never: []string{"scenario", "view", "proxy"}},
		{dir: "scenario", never: []string{"view", "proxy"}},
		{dir: "view", never: []string{"proxy"}},
		{dir: "review", allowed: []string{"cassette", "mcp", "wire", "internal/jsonvalue", "match", "store", "internal/hop", "internal/query", "internal/parallel"}},
		{dir: "refresh", allowed: []string{"cassette", "mcp", "wire", "internal/jsonvalue", "match", "store", "internal/hop", "internal/query", "internal/parallel"}},
		{dir: "tally", never: []string{"scenario", "fixture", "view", "proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			for _, dep := range moduleDeps(t, tt.dir) {
				if tt.allowed != nil && !slices.Contains(tt.allowed, dep) || slices.Contains(tt.never, dep) {
					t.Errorf("%s is built from %s", tt.dir, dep)
				}
			}
		})
	}
}

// TestOfflineCommandsNeedNoServer: the commands that only read or write
// cassette files take their index keys from package cassette, not from the
// HTTP server.
func TestOfflineCommandsNeedNoServer(t *testing.T) {
	for _, file := range []string{"export.go", "scrub.go", "ls.go", "migrate.go", "scenario.go", "diff.go", "tokens.go", "prune.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "github.com/llmproxy/llmproxy/proxy" {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}
