package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// wheelName is the Python distribution that carries the binary: a wheel
// of it installs the llmproxy command into the environment's scripts
// (bin/ or Scripts\), on PATH where the pytest plugin looks for it. It has
// no Python module of its own.
const wheelName = "llmproxy-bin"

// writeWheels writes a platform wheel per built platform into o.Out:
// llmproxy_bin-VERSION-py3-none-TAG.whl.
func writeWheels(o options, r *result) error {
	version, err := pep440(r.NPMVersion)
	if err != nil {
		return err
	}
	for _, p := range o.Platforms {
		bin, err := os.ReadFile(r.Binaries[p.String()])
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s-%s-py3-none-%s.whl", distName(), version, p.WheelTag)
		path := filepath.Join(o.Out, name)
		if err := os.WriteFile(path, wheel(version, p, bin), 0o644); err != nil {
			return err
		}
		r.Wheels[p.String()] = path
		fmt.Fprintf(o.Log, "wheel %s: %s\n", p, path)
	}
	return nil
}

// distName is wheelName as a wheel's file and folder names spell it.
func distName() string { return strings.ReplaceAll(wheelName, "-", "_") }

// wheel is the zip of a wheel (PEP 427) of version for p holding bin as
// its one script, with its metadata and RECORD.
func wheel(version string, p platform, bin []byte) []byte {
	info := distName() + "-" + version + ".dist-info/"
	var tags strings.Builder
	for _, tag := range strings.Split(p.WheelTag, ".") {
		fmt.Fprintf(&tags, "Tag: py3-none-%s\n", tag)
	}
	files := []struct {
		name string
		mode os.FileMode
		data []byte
	}{
		{distName() + "-" + version + ".data/scripts/" + p.exe(), 0o755, bin},
		{info + "METADATA", 0o644, []byte("Metadata-Version: 2.1\nName: " + wheelName + "\nVersion: " + version +
			"\nSummary: The llmproxy command (record, replay and mock LLM provider traffic for tests), prebuilt for " + p.String() +
			".\nHome-page: https://github.com/llmproxy/llmproxy\n")},
		{info + "WHEEL", 0o644, []byte("Wheel-Version: 1.0\nGenerator: llmproxy npm/build\nRoot-Is-Purelib: false\n" + tags.String())},
	}
	var buf, record bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, mode os.FileMode, data []byte) {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err == nil {
			_, err = w.Write(data)
		}
		if err != nil {
			panic(err) // writes to a bytes.Buffer do not fail
		}
	}
	for _, f := range files {
		add(f.name, f.mode, f.data)
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	add(info+"RECORD", 0o644, record.Bytes())
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// pep440Pre is a semantic prerelease that Python spells as its own:
// alpha.1 is a1, beta.2 b2, rc.3 rc3.
var pep440Pre = regexp.MustCompile(`^(alpha|a|beta|b|rc)[.-]?(\d+)$`)

// pep440 is the Python version (PEP 440) of the semantic version v: the
// same release; an alpha, beta or rc prerelease as Python's; any other
// prerelease as a development release .devN, N its first number, with
// the rest of its identifiers and the build metadata as the local label:
// 0.0.0-20261203131500-a656563f0e2b+dirty is
// 0.0.0.dev20261203131500+a656563f0e2b.dirty.
func pep440(v string) (string, error) {
	m := semverRe.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("version %q is not a semantic version", v)
	}
	out := m[1] + "." + m[2] + "." + m[3]
	pre, build := m[4], m[5]
	if pm := pep440Pre.FindStringSubmatch(pre); pm != nil {
		out += map[string]string{"alpha": "a", "a": "a", "beta": "b", "b": "b", "rc": "rc"}[pm[1]] + pm[2]
		pre = ""
	} else if pre != "" {
		dev, numbered, rest := "0", false, []string(nil)
		for _, id := range strings.FieldsFunc(pre, func(r rune) bool { return r == '.' || r == '-' }) {
			switch {
			case !numbered && strings.Trim(id, "0123456789") == "":
				numbered = true
				if dev = strings.TrimLeft(id, "0"); dev == "" {
					dev = "0"
				}
			case id != "dev":
				rest = append(rest, strings.ToLower(id))
			}
		}
		out += ".dev" + dev
		pre = strings.Join(rest, ".")
	}
	local := strings.Trim(pre+"."+strings.ToLower(strings.ReplaceAll(build, "-", ".")), ".")
	if local != "" {
		out += "+" + local
	}
	return out, nil
}
