package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// TestRecordOverwrite runs real `llmproxy record` processes on a cassette
// that already holds two interactions. Without --overwrite, record appends.
// With it, the old interactions are served by the API until the first new
// one is written, then replaced by it: a process killed before that write
// leaves the old cassette intact, one killed after it leaves only the new
// interaction, and a clean exit leaves only the new ones, numbered from 1.
func TestRecordOverwrite(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	up := fake.New(t, fake.OpenAIChat(crashLoop))
	body := crashChat("the new question", false)
	start := func(t *testing.T, path string, args ...string) *proc {
		return startProc(t, bin, true, append([]string{"record", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", up.URL()}, args...)...)
	}
	listed := func(t *testing.T, p *proc) string {
		resp, err := http.Get(p.base + "/_llmproxy/interactions")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return gjson.GetBytes(b, "interactions.#.id").Raw
	}
	stop := func(t *testing.T, p *proc) {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit %d after SIGTERM: %s", code, p.stderr)
		}
	}
	// contents lists the cassette's interactions as "id:old" or "id:new".
	contents := func(t *testing.T, path string) string {
		all := checkIntact(t, path, nil)
		var out []string
		for _, i := range all {
			what := "new"
			if strings.Contains(string(i.Request.Body), "MARKER") {
				what = "old"
			}
			out = append(out, fmt.Sprintf("%d:%s", i.ID, what))
		}
		return strings.Join(out, " ")
	}
	fresh := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "c.cassette")
		sampleCassette(t, path, 2)
		return path
	}

	t.Run("append by default", func(t *testing.T) {
		path := fresh(t)
		p := start(t, path)
		post(t, p.base, "/v1/chat/completions", body)
		waitRecorded(t, p.base, 1)
		stop(t, p)
		if got := contents(t, path); got != "1:old 2:old 3:new" {
			t.Errorf("cassette = %s, want the new interaction after the old ones", got)
		}
	})
	t.Run("killed before the first write", func(t *testing.T) {
		path := fresh(t)
		before := snapshot(t, path)
		p := start(t, path, "--overwrite")
		if got := listed(t, p); got != "[1,2]" {
			t.Errorf("GET /_llmproxy/interactions before the first write lists %s, want the old [1,2]", got)
		}
		p.kill(t)
		if snapshot(t, path) != before {
			t.Error("the cassette file changed")
		}
		if got := contents(t, path); got != "1:old 2:old" {
			t.Errorf("cassette = %s, want the old interactions", got)
		}
	})
	t.Run("killed after the first write", func(t *testing.T) {
		path := fresh(t)
		p := start(t, path, "--overwrite")
		post(t, p.base, "/v1/chat/completions", body)
		waitRecorded(t, p.base, 1)
		if got := listed(t, p); got != "[1]" {
			t.Errorf("GET /_llmproxy/interactions after the first write lists %s, want [1]", got)
		}
		p.kill(t)
		if got := contents(t, path); got != "1:new" {
			t.Errorf("cassette = %s, want only the new interaction", got)
		}
	})
	t.Run("clean exit", func(t *testing.T) {
		path := fresh(t)
		before := metaOf(t, path).Created
		p := start(t, path, "--overwrite")
		post(t, p.base, "/v1/chat/completions", body)
		post(t, p.base, "/v1/chat/completions", crashChat("another new question", true))
		waitRecorded(t, p.base, 2)
		stop(t, p)
		if got := contents(t, path); got != "1:new 2:new" {
			t.Errorf("cassette = %s, want the two new interactions", got)
		}
		if after := metaOf(t, path).Created; !after.After(before) {
			t.Errorf("created time %s, want later than the old cassette's %s", after, before)
		}
	})
	t.Run("only record has the flag", func(t *testing.T) {
		for _, mode := range []string{"replay", "auto"} {
			code, _, stderr := cli(t, mode, "--cassette", fresh(t), "--overwrite")
			if code != 2 || !strings.Contains(stderr, "overwrite") {
				t.Errorf("%s --overwrite: exit %d, want 2 naming the flag: %s", mode, code, stderr)
			}
		}
	})
}
