package main

import (
	"fmt"
	"runtime"
	"strings"
)

// platform is one target of the release build: a Go GOOS/GOARCH pair, the
// names npm gives them (process.platform and process.arch, which the
// launcher joins into the package name), and the wheel's platform tag.
type platform struct {
	GOOS, GOARCH string
	// OS and CPU are npm's names: the platform package's os and cpu.
	OS, CPU string
	// WheelTag is the Python platform tag of the wheel: the binary is
	// static (CGO_ENABLED=0), so any glibc or musl Linux, and macOS from
	// 12 (Go's own minimum).
	WheelTag string
}

// platforms are the six targets of a release, in the order they are built.
var platforms = []platform{
	{"linux", "amd64", "linux", "x64", "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64"},
	{"linux", "arm64", "linux", "arm64", "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64"},
	{"darwin", "amd64", "darwin", "x64", "macosx_12_0_x86_64"},
	{"darwin", "arm64", "darwin", "arm64", "macosx_12_0_arm64"},
	{"windows", "amd64", "win32", "x64", "win_amd64"},
	{"windows", "arm64", "win32", "arm64", "win_arm64"},
}

// String is GOOS/GOARCH.
func (p platform) String() string { return p.GOOS + "/" + p.GOARCH }

// npmName is the platform package's name: the launcher looks for
// @llmproxy/ + process.platform + "-" + process.arch.
func (p platform) npmName() string { return "@llmproxy/" + p.OS + "-" + p.CPU }

// dir is the platform package's folder under OUT/npm.
func (p platform) dir() string { return "llmproxy-" + p.OS + "-" + p.CPU }

// exe is the binary's file name.
func (p platform) exe() string {
	if p.GOOS == "windows" {
		return "llmproxy.exe"
	}
	return "llmproxy"
}

// host reports whether p is the platform this program runs on, whose
// binary it can run.
func (p platform) host() bool { return p.GOOS == runtime.GOOS && p.GOARCH == runtime.GOARCH }

// hostPlatform is the release platform this program runs on.
func hostPlatform() (platform, error) {
	for _, p := range platforms {
		if p.host() {
			return p, nil
		}
	}
	return platform{}, fmt.Errorf("this machine (%s/%s) is none of the release platforms %s", runtime.GOOS, runtime.GOARCH, platformList())
}

// parsePlatforms reads -platforms: "all", "host", or GOOS/GOARCH pairs
// separated by commas, each one of the release platforms, none twice.
func parsePlatforms(s string) ([]platform, error) {
	switch s {
	case "all":
		return platforms, nil
	case "host":
		p, err := hostPlatform()
		if err != nil {
			return nil, fmt.Errorf("-platforms host: %w", err)
		}
		return []platform{p}, nil
	}
	var ps []platform
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("-platforms: %q is named twice", name)
		}
		seen[name] = true
		p, ok := findPlatform(name)
		if !ok {
			return nil, fmt.Errorf("-platforms: %q is not a release platform: want all, host, or some of %s", name, platformList())
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// findPlatform is the release platform named GOOS/GOARCH.
func findPlatform(name string) (platform, bool) {
	for _, p := range platforms {
		if p.String() == name {
			return p, true
		}
	}
	return platform{}, false
}

// platformList names the release platforms, separated by commas.
func platformList() string {
	names := make([]string, len(platforms))
	for i, p := range platforms {
		names[i] = p.String()
	}
	return strings.Join(names, ",")
}
