package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
