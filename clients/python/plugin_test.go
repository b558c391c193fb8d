package python_test

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianPython is the Python the pytest plugin is tested with: Debian's,
// whose python3-pytest and python3-pytest-xdist .ci/run installs.
const debianPython = "/usr/bin/python3"

// pytestPython returns debianPython once it has pytest, xdist and venv
// (else the test is skipped, or fails under REQUIRE_EXAMPLE_TESTS).
func pytestPython(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		exampletest.Skip(t, debianPython+" is not installed")
	}
	if out, err := exec.Command(debianPython, "-c", "import pytest, xdist, venv, ensurepip").CombinedOutput(); err != nil {
		exampletest.Skip(t, "python3-pytest, python3-pytest-xdist or python3-venv is missing: "+strings.TrimSpace(string(out)))
	}
	return debianPython
}

// copyTree copies the regular files under src to dst, leaving out
// __pycache__, .pytest_cache, build output and cassettes.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	skip := map[string]bool{"__pycache__": true, ".pytest_cache": true, "build": true, "cassettes": true}
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if skip[d.Name()] || strings.HasSuffix(d.Name(), ".egg-info") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
}

// pluginVenv installs clients/python into a new virtual environment that
// sees Debian's pytest, as `pip install ./clients/python` does but with no
// index and no build isolation (Debian's setuptools builds it), and returns
// the environment's python. The package is built from a copy, so that the
// build leaves nothing in the repository.
func pluginVenv(t *testing.T, py string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "python")
	copyTree(t, "../../clients/python", src)
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	cmd := exec.Command(vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--disable-pip-version-check", src)
	cmd.Env = append(os.Environ(), "PIP_NO_INPUT=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install ./clients/python: %v\n%s", err, out)
	}
	return vpy
}

// junitCase is a test case of pytest's --junitxml file.
type junitCase struct {
	Name    string `xml:"name,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// outcome is passed, failed, error or skipped.
func (c junitCase) outcome() string {
	switch {
	case c.Error != nil:
		return "error"
	case c.Failure != nil:
		return "failed"
	case c.Skipped != nil:
		return "skipped"
	}
	return "passed"
}

// pytestRun is one run of pytest: its exit status, its output and its
// test cases by name.
type pytestRun struct {
	code  int
	out   string
	cases map[string]junitCase
}

// runPytest runs `py -m pytest ARGS` in dir with env added to the
// environment, and reads its JUnit XML report.
func runPytest(t *testing.T, py, dir string, env []string, args ...string) pytestRun {
	t.Helper()
	report := filepath.Join(t.TempDir(), "junit.xml")
	cmd := exec.Command(py, append([]string{"-m", "pytest", "-p", "no:cacheprovider", "-rA", "--junitxml", report}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"PYTHONDONTWRITEBYTECODE=1", "PYTEST_ADDOPTS="}, env...)...)
	out, err := cmd.CombinedOutput()
	run := pytestRun{out: string(out), cases: map[string]junitCase{}}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		run.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("pytest %v: %v", args, err)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("pytest %v wrote no report (exit %d): %v\n%s", args, run.code, err, out)
	}
	var doc struct {
		Cases []junitCase `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("pytest %v: reading %s: %v", args, report, err)
	}
	for _, c := range doc.Cases {
		run.cases[c.Name] = c
	}
	return run
}

// expect checks that the run's tests ended as want (name → outcome) and
// that there were no others.
func (r pytestRun) expect(t *testing.T, what string, want map[string]string) {
	t.Helper()
	ok := len(r.cases) == len(want)
	for name, o := range want {
		if r.cases[name].outcome() != o || r.cases[name].Name == "" {
			ok = false
			t.Errorf("%s: %s is %s, want %s", what, name, r.cases[name].outcome(), o)
		}
	}
	if !ok {
		t.Fatalf("%s: exit %d, cases %v\n%s", what, r.code, r.cases, r.out)
	}
}

// fakeOpenAI starts examples/python/fake_openai.py (a Python http.server
// answering in OpenAI's bytes) with py, and returns its URL; it is stopped
// when the test ends.
func fakeOpenAI(t *testing.T, py, dir string) string {
	t.Helper()
	cmd := exec.Command(py, "fake_openai.py")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FAKE_OPENAI_KEY="+examplePythonKey)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("fake_openai.py: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fake openai listening on ")
	if err != nil || !ok {
		t.Fatalf("fake_openai.py said %q (%v), want its listening line", line, err)
	}
	return url
}

// examplePythonKey is the key examples/python records with: the fake
// upstream insists on it, and it must never reach a cassette.
const examplePythonKey = "sk-example-python-SECRET-2b71d4"

// TestPytestPlugin installs clients/python into a virtual environment with
// pip (no index, no build isolation) and runs examples/python's four tests
// with Debian's pytest and the plugin found through its entry point: it
// records two cassettes, one per test, through a fake OpenAI upstream,
// replays them per test with the upstream gone and no key, under pytest
// and under pytest -n 2 (each xdist worker its own proxy), and then changes
// one test's request: that test fails with the proxy's difference in its
// report, a test that swallows its miss fails too, and the others pass.
func TestPytestPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds llmproxy and a virtual environment")
	}
	py := pytestPython(t)
	vpy := pluginVenv(t, py)
	bin := exampletest.BuildLLMProxy(t)
	proj := filepath.Join(t.TempDir(), "example")
	copyTree(t, "../../examples/python", proj)
	for _, k := range []string{"LLMPROXY_CASSETTE", "LLMPROXY_CASSETTE_DIR", "LLMPROXY_LISTEN", "LLMPROXY_UPSTREAM", "OPENAI_BASE_URL"} {
		exampletest.Unsetenv(t, k)
	}
	exampletest.Unsetenv(t, "OPENAI_API_KEY")
	env := []string{"LLMPROXY_BIN=" + bin}
	all := map[string]string{"test_greeting": "passed", "test_weather_report": "passed",
		"test_weather_scripted": "passed", "test_parse_sse_pieces": "passed"}

	up := fakeOpenAI(t, py, proj)
	rec := runPytest(t, vpy, proj, append(env, "OPENAI_API_KEY="+examplePythonKey), "--llmproxy-mode", "record", "--llmproxy-upstream", up)
	rec.expect(t, "record", all)
	if strings.Contains(rec.out, "unused interaction") {
		t.Errorf("record: interactions reported unused:\n%s", rec.out)
	}
	if !strings.Contains(rec.out, "plugins: llmproxy-pytest") {
		t.Errorf("record: pytest does not list the plugin as loaded through its entry point:\n%s", rec.out)
	}
	cassettes := filepath.Join(proj, "cassettes", "tests", "test_assistant")
	for name, want := range map[string]int{"test_greeting": 1, "test_weather_report": 2} {
		cas := filepath.Join(cassettes, name+".cassette")
		if n := exampletest.Interactions(t, cas); n != want {
			t.Errorf("%s: %d interactions, want %d", cas, n, want)
		}
		raw, err := os.ReadFile(cas)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("SECRET")) {
			t.Errorf("%s holds the key", cas)
		}
	}
	if entries, _ := os.ReadDir(cassettes); len(entries) != 2 {
		t.Errorf("record wrote %d cassettes in %s, want 2 (one per recorded test)", len(entries), cassettes)
	}

	// The upstream is gone from here on: the key is unset and only the
	// cassettes answer.
	replay := runPytest(t, vpy, proj, env)
	replay.expect(t, "replay", all)
	if strings.Contains(replay.out, "unused interaction") {
		t.Errorf("replay: interactions reported unused:\n%s", replay.out)
	}
	parallel := runPytest(t, vpy, proj, env, "-n", "2")
	parallel.expect(t, "replay -n 2", all)
	if !strings.Contains(parallel.out, "gw1 [") {
		t.Errorf("replay -n 2: pytest ran without two xdist workers:\n%s", parallel.out)
	}

	// One test asks about another city; another swallows its miss.
	testFile := filepath.Join(proj, "tests", "test_assistant.py")
	src, err := os.ReadFile(testFile)
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(src, []byte(`"What is the weather in Paris?"`), []byte(`"What is the weather in Berlin?"`), 1)
	if bytes.Equal(changed, src) {
		t.Fatalf("%s no longer asks about Paris: the test cannot change its request", testFile)
	}
	if err := os.WriteFile(testFile, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	swallow := "import urllib.error\n\nimport pytest\n\nimport assistant\n\n\n" +
		"@pytest.mark.llmproxy(cassette=\"../test_assistant/test_greeting\")\n" +
		"def test_swallowed_miss():\n    try:\n        assistant.greet(\"Bob\")\n    except urllib.error.HTTPError:\n        pass\n\n\n" +
		"@pytest.mark.llmproxy(casette=\"x\")\ndef test_misspelt_marker():\n    pass\n\n\n" +
		"@pytest.mark.llmproxy(cassette=\"../../../../etc/x\")\ndef test_escaping_cassette():\n    pass\n\n\n" +
		"@pytest.mark.llmproxy(scenario={\"version\": 1, \"steps\": [{\"respond\": {\"txt\": \"hi\"}}]})\n" +
		"def test_bad_scenario():\n    pass\n"
	if err := os.WriteFile(filepath.Join(proj, "tests", "test_swallow.py"), []byte(swallow), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"-n", "2"}} {
		what := "changed request " + strings.Join(args, " ")
		run := runPytest(t, vpy, proj, env, args...)
		run.expect(t, what, map[string]string{"test_greeting": "passed", "test_weather_report": "failed",
			"test_weather_scripted": "passed", "test_parse_sse_pieces": "passed", "test_swallowed_miss": "failed",
			"test_misspelt_marker": "error", "test_escaping_cassette": "error", "test_bad_scenario": "error"})
		if run.code != 1 {
			t.Errorf("%s: exit %d, want 1", what, run.code)
		}
		for name, want := range map[string][]string{
			"test_weather_report": {"llmproxy miss 1 of", "Berlin", "Paris"},
			"test_swallowed_miss": {"llmproxy miss 1 of", "Bob", "Ada"},
		} {
			f := run.cases[name].Failure
			for _, w := range want {
				if f == nil || !strings.Contains(f.Text, w) {
					t.Errorf("%s: the report of %s does not hold %q:\n%+v", what, name, w, f)
				}
			}
		}
		for name, want := range map[string]string{
			"test_misspelt_marker":   "unknown argument casette",
			"test_escaping_cassette": "leaves the directory",
			"test_bad_scenario":      `unknown key "txt"`,
		} {
			if e := run.cases[name].Error; e == nil || !strings.Contains(e.Message, want) {
				t.Errorf("%s: the setup error of %s does not say %q: %+v", what, name, want, e)
			}
		}
		// The changed test left both its interactions unused, the other one.
		if !strings.Contains(run.out, "llmproxy: 3 unused interaction(s) or step(s) in 2 test(s)") {
			t.Errorf("%s: the terminal summary does not list the interactions the failing tests left unused:\n%s", what, run.out)
		}
	}
}

// TestPytestPluginRefusals runs pytest with the plugin and a binary that is
// not there, and one that does not start: each is a usage error (exit 4)
// naming the binary, before any test runs.
func TestPytestPluginRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a virtual environment")
	}
	py := pytestPython(t)
	vpy := pluginVenv(t, py)
	proj := filepath.Join(t.TempDir(), "example")
	copyTree(t, "../../examples/python", proj)
	notStarting := filepath.Join(t.TempDir(), "llmproxy")
	if err := os.WriteFile(notStarting, []byte("#!/bin/sh\necho 'llmproxy: broken' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ bin, want string }{
		{"/nonexistent/llmproxy", "LLMPROXY_BIN /nonexistent/llmproxy: not an executable file"},
		{notStarting, "did not start (exit 1)"},
	} {
		cmd := exec.Command(vpy, "-m", "pytest", "-p", "no:cacheprovider")
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "LLMPROXY_BIN="+tc.bin, "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 4 || !strings.Contains(string(out), tc.want) {
			t.Errorf("LLMPROXY_BIN=%s: %v, want exit 4 saying %q:\n%s", tc.bin, err, tc.want, out)
		}
	}
}

// TestPytestPluginUnits runs clients/python/tests (the control client and
// the cassette names against a stub of the API) with Debian's pytest.
func TestPytestPluginUnits(t *testing.T) {
	py := pytestPython(t)
	cmd := exec.Command(py, "-m", "pytest", "-p", "no:llmproxy", "-p", "no:cacheprovider", "-q", "tests")
	cmd.Dir = "../../clients/python"
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTEST_ADDOPTS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pytest clients/python/tests: %v\n%s", err, out)
	}
}
