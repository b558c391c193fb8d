package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/proxy"
)

// TestMCPAgentRound is the agent round end to end: recorded (the MCP
// server writes the file), scrubbed (the model's call, the MCP call and
// its result become the fixture call_write_file), and replayed with no
// MCP server and no provider: the same transcript, byte for byte, and no
// file written.
func TestMCPAgentRound(t *testing.T) {
	for _, jsonAnswers := range []bool{false, true} {
		t.Run(map[bool]string{false: "SSE answers", true: "JSON answers"}[jsonAnswers], func(t *testing.T) {
			path, recorded, dir := recordMCPAgent(t, saveLoop, jsonAnswers)
			notes := filepath.Join(dir, "notes.txt")
			if b, err := os.ReadFile(notes); err != nil || string(b) != notesText {
				t.Fatalf("record: notes.txt = %q, %v; want it written by the MCP server", b, err)
			}
			for _, want := range []string{"model calls: save_file", `mcp result: {"bytesWritten":18}`, "model: " + saveLoop.Answer} {
				if !strings.Contains(recorded, want) {
					t.Fatalf("recorded transcript lacks %q:\n%s", want, recorded)
				}
			}
			if err := os.Remove(notes); err != nil {
				t.Fatal(err)
			}

			code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "files.save_file=write_file")
			if code != 0 {
				t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
			}
			for _, want := range []string{"1 tool call(s) substituted, 0 left unchanged", "write_file  1  call_write_file (and MCP interaction"} {
				if !strings.Contains(out, want) {
					t.Errorf("scrub report lacks %q:\n%s", want, out)
				}
			}

			for run := 1; run <= 2; run++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				rep := startAgentProxy(t, proxy.ModeReplay, path, "", "")
				replayed, err := mcpAgent(ctx, rep.URL, writePrompt)
				cancel()
				if err != nil {
					t.Fatalf("replay %d: %v\ntranscript:\n%s", run, err, replayed)
				}
				if replayed != recorded {
					t.Errorf("replay %d transcript differs:\n--- recorded\n%s--- replayed\n%s", run, recorded, replayed)
				}
				if unused := rep.unused(t); len(unused) != 0 {
					t.Errorf("replay %d left interactions unused: %v", run, unused)
				}
				rep.Close()
			}
			if fileExists(notes) {
				t.Error("replay wrote notes.txt: the MCP server's side effect ran")
			}
		})
	}
}
