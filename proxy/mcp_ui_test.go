package proxy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/mcptest"
	"github.com/llmproxy/llmproxy/internal/uitest"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/proxy"
)

// replayNotesForView replays a recorded session of the notes server (SSE
// or JSON answers) through a proxy, so that its log holds the session, and
// returns the proxy and the id of the interaction of each JSON-RPC method.
func replayNotesForView(t *testing.T, jsonAnswers bool) (*harness, map[string]uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := recordNotes(t, jsonAnswers)
	ids := map[string]uint64{}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = c.ForEach(func(i *cassette.Interaction) error {
		ids[mcp.Method(i.Request.Body)] = i.ID
		return nil
	})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep := startProxy(t, proxy.ModeReplay, path, "")
	if _, err := mcptest.Play(ctx, mcpClient(rep), "a.txt", "hello"); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return rep, ids
}

// TestMCPInView: the web view shows a recorded MCP session as tool traffic:
// the list names the tools/call's tool as SERVER/TOOL, its page shows the
// call with its arguments and the server's result, tools/list the tools'
// names, and the live log the call as SERVER/TOOL.
func TestMCPInView(t *testing.T) {
	for _, tc := range []struct {
		name        string
		jsonAnswers bool
	}{{"SSE answers", false}, {"JSON answers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h, ids := replayNotesForView(t, tc.jsonAnswers)
			ui := h.URL() + "/_llmproxy/ui/"
			at := func(method string) string { return fmt.Sprintf("interactions/%d", ids[method]) }
			href := func(method string) string { return `href="/_llmproxy/ui/` + at(method) + `"` }
			for _, p := range []struct {
				path string
				want []string
			}{
				{"", []string{"<td>notes/write_note</td>"}},
				{"?q=tools/list", []string{"1 match for", href("tools/list")}},
				{"?q=notes/write_note", []string{"1 match for", href("tools/call")}},
				{at("initialize"), []string{`<span class="role">MCP client</span> <code class="path">initialize</code>`, "clientInfo", "MCP server notes", "serverInfo"}},
				{at("notifications/initialized"), []string{`<code class="path">notifications/initialized</code>`, "A notification: the server accepted it and answers nothing."}},
				{at("tools/list"), []string{`<code class="path">tools/list</code>`, "tools: echo, save_file, write_note"}},
				{at("tools/call"), []string{
					`<article class="msg assistant">`, `<code class="path">tools/call</code>`, `calls <code>notes/write_note</code>`,
					"&#34;path&#34;: &#34;a.txt&#34;", "&#34;text&#34;: &#34;hello&#34;",
					`<article class="msg tool">`, "MCP server notes", `result of <code>notes/write_note</code>`, "&#34;bytes&#34;: 5"}},
				{"log", []string{`→ <code>notes/write_note</code>`, href("tools/call") + ">interaction"}},
			} {
				status, body := page(t, ui+p.path)
				if status != 200 {
					t.Fatalf("%s: status %d\n%.2000s", p.path, status, body)
				}
				for _, w := range p.want {
					if !strings.Contains(body, w) {
						t.Errorf("%s lacks %q:\n%s", p.path, w, body)
						break
					}
				}
				if strings.Contains(body, "No conversation to show") || strings.Contains(body, "No answer to show") {
					t.Errorf("%s says it has no conversation to show for an MCP request", p.path)
				}
			}
		})
	}
}

// TestMCPInViewInBrowser reads the page of a recorded MCP tools/call in
// headless Chromium: the call names SERVER/TOOL with its arguments, and
// the result follows it.
func TestMCPInViewInBrowser(t *testing.T) {
	b := uitest.NewBrowser(t)
	h, ids := replayNotesForView(t, false)
	b.Open(fmt.Sprintf("%s/_llmproxy/ui/interactions/%d", h.URL(), ids["tools/call"]), "section.result")
	if got := uitest.Eval[string](b, `document.querySelector("article.msg.assistant section.call h4").textContent`); !strings.Contains(got, "calls notes/write_note") {
		t.Errorf("the call reads %q", got)
	}
	args := uitest.Eval[string](b, `document.querySelector("section.call pre.json").textContent`)
	if !strings.Contains(args, `"path": "a.txt"`) || !strings.Contains(args, `"text": "hello"`) {
		t.Errorf("the call's arguments read %q", args)
	}
	if got := uitest.Eval[string](b, `document.querySelector("article.msg.tool header .role").textContent`); got != "MCP server notes" {
		t.Errorf("the answer is from %q", got)
	}
	res := uitest.Eval[string](b, `document.querySelector("article.msg.tool section.result pre.json").textContent`)
	if !strings.Contains(res, `"bytes": 5`) || !strings.Contains(res, `"path": "a.txt"`) {
		t.Errorf("the result reads %q", res)
	}
	b.Screenshot(*screenshots, "view-mcp.png")
	b.Check()
}
