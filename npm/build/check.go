package main

import (
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"fmt"
	"strings"
)

// checkBinary checks that the binary at path is what the build asked for
// without running it: an executable of p's format and CPU, whose build
// information says ./cmd/llmproxy built for p without cgo and, when
// stamped is not empty, with that version stamped.
func checkBinary(path string, p platform, stamped string) error {
	goos, goarch, err := executableKind(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if goos != p.GOOS || goarch != p.GOARCH {
		return fmt.Errorf("%s is an executable for %s/%s, not %s", path, goos, goarch, p)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: build information: %w", path, err)
	}
	if info.Path != "github.com/llmproxy/llmproxy/cmd/llmproxy" {
		return fmt.Errorf("%s: built from %s, not ./cmd/llmproxy", path, info.Path)
	}
	want := map[string]string{"GOOS": p.GOOS, "GOARCH": p.GOARCH, "CGO_ENABLED": "0", "-trimpath": "true"}
	for _, s := range info.Settings {
		if w, ok := want[s.Key]; ok {
			if s.Value != w {
				return fmt.Errorf("%s: build setting %s=%s, want %s", path, s.Key, s.Value, w)
			}
			delete(want, s.Key)
		}
		if s.Key == "-ldflags" && stamped != "" && !strings.Contains(s.Value, stampFlag+stamped) {
			return fmt.Errorf("%s: -ldflags %q do not stamp %s", path, s.Value, stamped)
		}
	}
	for k, w := range want {
		return fmt.Errorf("%s: build information lacks %s=%s", path, k, w)
	}
	return nil
}

// executableKind reads the GOOS and GOARCH an executable is for from its
// headers (ELF, Mach-O or PE), as file(1) does.
func executableKind(path string) (goos, goarch string, err error) {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		return "linux", orUnknown(arch, f.Machine), nil
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		return "darwin", orUnknown(arch, f.Cpu), nil
	}
	if f, err := pe.Open(path); err == nil {
		defer f.Close()
		arch := map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
		return "windows", orUnknown(arch, f.Machine), nil
	}
	return "", "", errors.New("not an ELF, Mach-O or PE executable")
}

// orUnknown is arch, or the machine's own name when arch is empty.
func orUnknown(arch string, machine any) string {
	if arch == "" {
		return fmt.Sprintf("unknown(%v)", machine)
	}
	return arch
}
