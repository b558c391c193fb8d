package proxy_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/internal/uitest"
	"github.com/llmproxy/llmproxy/proxy"
)

var screenshots = flag.String("screenshots", "", "save screenshots of the web view's pages into this `directory` (../docs for the README's)")

// TestViewInBrowser drives the web view of a replaying proxy in headless
// Chromium: the table filters as you type, an interaction reads as a
// conversation, hostile recorded content runs nothing, and the live log
// gains rows as requests are served.
func TestViewInBrowser(t *testing.T) {
	b := uitest.NewBrowser(t)
	path := cassettePath(t)
	uitest.Cassette(t, path)
	h := startProxy(t, proxy.ModeReplay, path, "")
	ui := h.URL() + "/_llmproxy/ui/"
	rows := `document.querySelectorAll("table.interactions tbody tr").length`

	t.Run("interactions", func(t *testing.T) {
		b.Open(ui, "table.interactions")
		if n := uitest.Eval[int](b, rows); n != 8 {
			t.Errorf("%d rows, want 8", n)
		}
		if !uitest.Eval[bool](b, `window.llmproxyView && window.llmproxyView.ready === true`) {
			t.Error("the view's script did not run")
		}
		b.Screenshot(*screenshots, "view-interactions.png")
		b.Do("type a filter", chromedp.SendKeys(chromedp.ID("filter"), "anthropic"))
		b.WaitFor("the table shows one row", rows+` === 1 && location.search === "?q=anthropic"`)
		if got := uitest.Eval[string](b, `document.querySelector("table.interactions tbody tr td a").textContent`); got != "5" {
			t.Errorf("filtered to %q, want interaction 5", got)
		}
		if got := uitest.Eval[string](b, `location.search`); got != "?q=anthropic" {
			t.Errorf("the address after filtering is %q, want ?q=anthropic", got)
		}
		// The key / focuses the filter; Escape clears it.
		b.Do("focus elsewhere", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`),
			chromedp.KeyEvent("/"))
		if !uitest.Eval[bool](b, `document.activeElement.id === "filter"`) {
			t.Error("/ did not focus the filter")
		}
		b.Do("clear the filter", chromedp.KeyEvent("\u001b"))
		b.WaitFor("the table shows every row again", rows+` === 8`)
		b.Check()
	})

	t.Run("conversation", func(t *testing.T) {
		b.Open(ui+"interactions/1", "article.msg")
		roles := uitest.Eval[[]string](b, `[...document.querySelectorAll("article.msg .role")].map(e => e.textContent)`)
		if strings.Join(roles, ",") != "user,assistant" {
			t.Errorf("message roles %v, want user (request) and assistant (response)", roles)
		}
		if got := uitest.Eval[string](b, `document.querySelector("article.msg.user .text").textContent`); got != "What's the weather in Paris?" {
			t.Errorf("the user turn reads %q", got)
		}
		if got := uitest.Eval[string](b, `document.querySelector(".call code").textContent + " " + document.querySelector(".badge.fixture").textContent`); got != "weather fixture · weather" {
			t.Errorf("the tool call reads %q, want weather with its fixture badge", got)
		}
		ticks := uitest.Eval[int](b, `document.querySelectorAll(".timeline .tick").length`)
		events := uitest.Eval[int](b, `document.querySelectorAll("table.events tbody tr").length`)
		if ticks == 0 || ticks != events {
			t.Errorf("the timeline draws %d events of %d", ticks, events)
		}
		// The second turn of the loop: the fixture's result goes back, the
		// answer comes.
		b.Open(ui+"interactions/2", "article.msg")
		classes := uitest.Eval[[]string](b, `[...document.querySelectorAll("article.msg")].map(e => e.className)`)
		if strings.Join(classes, ",") != "msg user,msg assistant,msg tool,msg assistant" {
			t.Errorf("interaction 2 reads as %v", classes)
		}
		if n := uitest.Eval[int](b, `document.querySelectorAll(".result .badge.fixture").length`); n != 1 {
			t.Errorf("%d fixture badges on tool results, want 1", n)
		}
		b.Screenshot(*screenshots, "view-interaction.png")
		b.Dark(true)
		b.Screenshot(*screenshots, "view-interaction-dark.png")
		if bg := uitest.Eval[string](b, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(20, 22, 28)" {
			t.Errorf("dark mode background %s", bg)
		}
		b.Dark(false)
		b.Open(ui+"interactions/5", "#timeline")
		b.Do("scroll to the timeline", chromedp.Evaluate[chromedp.Void](`document.getElementById("timeline").scrollIntoView()`))
		b.Screenshot(*screenshots, "view-timeline.png")
		b.Check()
	})

	t.Run("hostile content runs nothing", func(t *testing.T) {
		b.Open(ui+fmt.Sprintf("interactions/%d", uitest.HostileID), "article.msg.user")
		if got := uitest.Eval[string](b, `document.querySelector("article.msg.user .text").textContent`); got != uitest.HostileUser {
			t.Errorf("the prompt reads %q, want its characters %q", got, uitest.HostileUser)
		}
		if got := uitest.Eval[string](b, `document.querySelector("article.msg.assistant .text").textContent`); got != uitest.HostileAnswer {
			t.Errorf("the answer reads %q, want its characters", got)
		}
		if got := uitest.Eval[string](b, `typeof window.pwned`); got != "undefined" {
			t.Errorf("hostile content ran: window.pwned is %s", uitest.Eval[string](b, `String(window.pwned)`))
		}
		if n := uitest.Eval[int](b, `document.querySelectorAll("main img, main script, main iframe, main b, main i").length`); n != 0 {
			t.Errorf("the page holds %d elements made from recorded markup", n)
		}
		b.Check() // no dialog, no exception, no CSP report
	})

	t.Run("live log", func(t *testing.T) {
		b.Open(ui+"log", "table.log")
		b.WaitFor("the live stream opened", `document.getElementById("live-state").textContent.startsWith("Live")`)
		before := uitest.Eval[int](b, `document.querySelectorAll("tbody.entry").length`)

		post := func(target string, body []byte) {
			resp, err := http.Post(h.URL()+target, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		post("/openai/v1/chat/completions", fake.Captured("openai-chat-toolcalls.request.json"))
		b.WaitFor("the log gains the served request", fmt.Sprintf(`document.querySelectorAll("tbody.entry").length === %d`, before+1))
		if got := uitest.Eval[string](b, `document.querySelector("tbody.entry td:nth-child(3)").textContent`); got != "interaction 3" {
			t.Errorf("the newest row answers with %q, want interaction 3", got)
		}
		post("/v1/chat/completions", hostileRequest(t, "What is the weather in Paris?"))
		b.WaitFor("the log gains the miss", fmt.Sprintf(`document.querySelectorAll("tbody.entry").length === %d`, before+2))
		sides := uitest.Eval[[]string](b, `[...document.querySelector("tbody.entry.miss").querySelectorAll(".side pre")].map(e => e.textContent)`)
		if len(sides) != 2 || sides[0] != `"What is the weather in Paris?"` || !strings.Contains(sides[1], "<script>") {
			t.Errorf("the miss shows %q side by side, want the request's value and the recorded one", sides)
		}
		if got := uitest.Eval[int](b, `window.llmproxyView.liveEntries`); got != 2 {
			t.Errorf("the page took %d live entries, want 2", got)
		}
		if got := uitest.Eval[string](b, `typeof window.pwned`); got != "undefined" {
			t.Error("a live row ran recorded script")
		}
		b.Screenshot(*screenshots, "view-log.png")
		b.Check()
	})

	t.Run("presets", func(t *testing.T) {
		b.Open(ui+"presets", "section.preset")
		if n := uitest.Eval[int](b, `document.querySelectorAll("section.preset").length`); n != 12 {
			t.Errorf("%d presets, want 12", n)
		}
		b.Do("open a schema", chromedp.Click(chromedp.CSS("#weather details summary")))
		if got := uitest.Eval[string](b, `document.querySelector("#weather details[open] pre").textContent`); !strings.Contains(got, `"location"`) {
			t.Errorf("the weather arguments schema reads %.200q", got)
		}
		b.Screenshot(*screenshots, "view-presets.png")
		b.Open(ui+"scenario", "main")
		if got := uitest.Eval[string](b, `document.querySelector("main").textContent`); !strings.Contains(got, "This process serves no scenario") {
			t.Errorf("the scenario page of a cassette server says %q", got)
		}
		b.Check()
	})

	t.Run("without script", func(t *testing.T) {
		// The pages are complete as served: the table, the conversation and
		// the log are in the HTML, not built by script.
		_, body := page(t, ui+"interactions/1")
		for _, want := range []string{`<article class="msg user">`, "What&#39;s the weather in Paris?", `class="tick k0"`} {
			if !strings.Contains(body, want) {
				t.Errorf("the served HTML lacks %q", want)
			}
		}
	})
}

// TestViewLoginInBrowser signs in through the form of a proxy started with
// an admin token, and checks that the page script cannot read the cookie.
func TestViewLoginInBrowser(t *testing.T) {
	const token = "browser-token"
	b := uitest.NewBrowser(t)
	b.Allow("status of 401 (Unauthorized)") // the pages asked for before signing in
	path := cassettePath(t)
	uitest.Cassette(t, path)
	h := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.AdminToken = token })
	b.Open(h.URL()+"/_llmproxy/ui/interactions/3", "form.login")
	b.Screenshot(*screenshots, "view-login.png")
	b.Do("sign in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")))
	b.WaitFor("the page asked for", `location.pathname === "/_llmproxy/ui/interactions/3" && !!document.querySelector("article.msg")`)
	if got := uitest.Eval[string](b, `document.cookie`); got != "" {
		t.Errorf("the page script reads the cookie %q (want HttpOnly)", got)
	}
	b.Open(h.URL()+"/_llmproxy/ui/log", "table.log")
	b.WaitFor("the live stream opened with the cookie", `document.getElementById("live-state").textContent.startsWith("Live")`)
	b.Do("sign out", chromedp.Click(chromedp.CSS(".logout button")))
	b.WaitFor("the login form again", `!!document.querySelector("form.login") || location.pathname.endsWith("/login")`)
	b.Open(h.URL()+"/_llmproxy/ui/", "form.login")
	b.Check()
}
