package uitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browsers are the names a Chromium binary goes by.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"}

// Browser is a headless Chromium tab that records what a page must never
// do: open a dialog, throw, or break the Content-Security-Policy.
type Browser struct {
	Ctx context.Context
	t   testing.TB

	mu       sync.Mutex
	problems []string
	allowed  []string
}

// Allow stops Check from failing on problems whose text holds s (such as
// the 401 of a page asked for before signing in).
func (b *Browser) Allow(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, s)
}

// NewBrowser starts a headless Chromium for the test and closes it at its
// end. It skips the test, saying why, only when no Chromium binary exists
// and REQUIRE_BROWSER_TESTS is unset (CI installs Debian's chromium and sets
// it, so there the test always runs).
func NewBrowser(t testing.TB) *Browser {
	t.Helper()
	var bin string
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		msg := fmt.Sprintf("no Chromium binary (%s) on PATH: install Debian's chromium to run the browser tests", strings.Join(browsers, ", "))
		if os.Getenv("REQUIRE_BROWSER_TESTS") != "" {
			t.Fatal(msg + " (REQUIRE_BROWSER_TESTS is set)")
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // root in CI containers
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &Browser{Ctx: ctx, t: t}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			b.problem("a dialog opened: %s %q", ev.Type, ev.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		case *runtime.EventExceptionThrown:
			b.problem("a script threw: %s", exceptionText(ev.ExceptionDetails))
		case *log.EventEntryAdded:
			if e := ev.Entry; strings.Contains(e.Text, "Content Security Policy") || e.Level == log.EntryLevelError && !strings.Contains(e.Text, "favicon") {
				b.problem("the console logged %s: %s (%s)", e.Level, e.Text, e.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	return b
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "?"
	}
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

func (b *Browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := fmt.Sprintf(format, args...)
	for _, a := range b.allowed {
		if strings.Contains(p, a) {
			return
		}
	}
	b.problems = append(b.problems, p)
}

// Check fails the test with every problem the pages had so far.
func (b *Browser) Check() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("in the browser: %s", p)
	}
	b.problems = nil
}

// Do runs actions, failing the test on an error.
func (b *Browser) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// Open navigates to url and waits until the selector is visible.
func (b *Browser) Open(url, ready string) {
	b.t.Helper()
	b.Do("open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready)))
}

// Eval evaluates a JavaScript expression.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor waits (10 s at most) until a JavaScript expression is true. It
// asks again while a navigation replaces the page.
func (b *Browser) WaitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("waiting until %s (%s): not within 10 s (%v)", what, expr, err)
}

// Dark switches prefers-color-scheme to dark (or back to light).
func (b *Browser) Dark(dark bool) {
	b.t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	_, err := chromedp.Call(b.Ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	})
	if err != nil {
		b.t.Fatalf("emulate %s mode: %v", scheme, err)
	}
}

// Screenshot saves the viewport as dir/name (a PNG) when dir is set.
func (b *Browser) Screenshot(dir, name string) {
	b.t.Helper()
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
