package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// templateDir is the llmproxy npm package's source under the checkout:
// package.json (whose version and optionalDependencies the build writes),
// the launcher and README.md.
const templateDir = "npm/llmproxy"

// platformPackage is a platform package's package.json.
type platformPackage struct {
	Name            string          `json:"name"`
	Version         string          `json:"version"`
	Description     string          `json:"description"`
	Homepage        json.RawMessage `json:"homepage,omitempty"`
	Repository      json.RawMessage `json:"repository,omitempty"`
	OS              []string        `json:"os"`
	CPU             []string        `json:"cpu"`
	PreferUnplugged bool            `json:"preferUnplugged"`
}

// writePackages writes each platform package's package.json and README.md
// beside its binary, and the llmproxy package: the template's files, its
// package.json with the version and an optional dependency on each built
// platform's package. It returns the llmproxy package's folder.
func writePackages(o options, r result) (string, error) {
	tmpl, keys, err := readTemplate(o.Root)
	if err != nil {
		return "", err
	}
	deps := map[string]string{}
	for _, p := range o.Platforms {
		dir := r.PlatformDirs[p.String()]
		pkg := platformPackage{
			Name:        p.npmName(),
			Version:     r.NPMVersion,
			Description: fmt.Sprintf("The llmproxy binary for %s on %s: installed by the llmproxy package where it runs.", p.OS, p.CPU),
			Homepage:    tmpl["homepage"],
			Repository:  tmpl["repository"],
			OS:          []string{p.OS},
			CPU:         []string{p.CPU},
			// Yarn's Plug'n'Play keeps a package with a binary on disk.
			PreferUnplugged: true,
		}
		if err := writeJSON(filepath.Join(dir, "package.json"), pkg); err != nil {
			return "", err
		}
		readme := fmt.Sprintf("# %s\n\nThe `llmproxy` binary for %s (`bin/%s`), version %s. Install the `llmproxy` package instead:\nit depends on this one where it runs.\n", p.npmName(), p, p.exe(), r.NPMVersion)
		if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
			return "", err
		}
		deps[p.npmName()] = r.NPMVersion
	}
	dir := filepath.Join(o.Out, "npm", "llmproxy")
	if err := copyTemplate(o.Root, tmpl, dir); err != nil {
		return "", err
	}
	if tmpl["version"], err = json.Marshal(r.NPMVersion); err != nil {
		return "", err
	}
	if tmpl["optionalDependencies"] == nil {
		keys = append(keys, "optionalDependencies")
	}
	if tmpl["optionalDependencies"], err = json.Marshal(deps); err != nil {
		return "", err
	}
	return dir, writeJSON(filepath.Join(dir, "package.json"), orderedObject{keys, tmpl})
}

// orderedObject is a JSON object that keeps its keys in the order of
// keys, so that the llmproxy package.json reads as its template does.
type orderedObject struct {
	keys   []string
	values map[string]json.RawMessage
}

// MarshalJSON writes the object's keys in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			b = append(b, ',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, key...), ':'), o.values[k]...)
	}
	return append(b, '}'), nil
}

// readTemplate reads the llmproxy package's package.json, which must name
// the llmproxy package, its bin and the files it ships, into its values by
// key and its keys in order.
func readTemplate(root string) (map[string]json.RawMessage, []string, error) {
	path := filepath.Join(root, templateDir, "package.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var tmpl map[string]json.RawMessage
	if err := json.Unmarshal(b, &tmpl); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	keys, err := objectKeys(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var name string
	if err := json.Unmarshal(tmpl["name"], &name); err != nil || name != "llmproxy" {
		return nil, nil, fmt.Errorf("%s: name is %s, want \"llmproxy\"", path, tmpl["name"])
	}
	for _, key := range []string{"version", "bin", "files"} {
		if tmpl[key] == nil {
			return nil, nil, fmt.Errorf("%s: no %q", path, key)
		}
	}
	return tmpl, keys, nil
}

// objectKeys are the distinct keys of the JSON object b in the order they
// first appear (b is known to be an object: it unmarshalled into a map).
func objectKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if k := tok.(string); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// copyTemplate copies the files the template's "files" lists into dir;
// its bin scripts are made executable.
func copyTemplate(root string, tmpl map[string]json.RawMessage, dir string) error {
	var files []string
	if err := json.Unmarshal(tmpl["files"], &files); err != nil {
		return fmt.Errorf("%s/package.json: files: %w", templateDir, err)
	}
	var bins map[string]string
	if err := json.Unmarshal(tmpl["bin"], &bins); err != nil {
		return fmt.Errorf("%s/package.json: bin: %w", templateDir, err)
	}
	executable := map[string]bool{}
	for _, b := range bins {
		executable[filepath.Clean(b)] = true
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if executable[filepath.Clean(f)] {
			mode = 0o755
		}
		if err := copyFile(filepath.Join(root, templateDir, f), filepath.Join(dir, f), mode); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst with mode, making dst's folder.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}

// packed is one entry of npm pack --json's answer.
type packed struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Filename string `json:"filename"`
}

// pack packs the llmproxy package and each platform package into o.Out
// with one npm pack, and checks that npm kept their names and version.
func pack(ctx context.Context, o options, r *result) error {
	args := []string{"pack", "--json", "--pack-destination", o.Out, r.MainDir}
	for _, p := range o.Platforms {
		args = append(args, r.PlatformDirs[p.String()])
	}
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = o.Out
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
	out, err := runQuiet(cmd)
	if err != nil {
		return err
	}
	var list []packed
	if err := json.Unmarshal(out, &list); err != nil {
		return fmt.Errorf("npm pack --json: %w\n%s", err, out)
	}
	if len(list) != len(o.Platforms)+1 {
		return fmt.Errorf("npm pack --json listed %d packages, want %d", len(list), len(o.Platforms)+1)
	}
	for _, p := range list {
		if p.Version != r.NPMVersion {
			return fmt.Errorf("npm pack made %s of version %s, not %s", p.Name, p.Version, r.NPMVersion)
		}
		r.Tarballs[p.Name] = filepath.Join(o.Out, p.Filename)
		fmt.Fprintf(o.Log, "packed %s: %s\n", p.Name, r.Tarballs[p.Name])
	}
	return nil
}
