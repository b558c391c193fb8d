package view

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// Prefix is where the view is served.
const Prefix = "/_llmproxy/ui/"

// contentSecurityPolicy allows script, style and images only from the
// view's own files (SVG is drawn inline, as markup the view writes), and
// nothing else: no inline script or style, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Options configure a Handler.
type Options struct {
	// Source is what the view shows; required.
	Source Source
	// AdminToken, when set, is asked for once by a login form and then
	// required on every page (the cookie, or Authorization: Bearer).
	// Without it, only requests to a loopback name or to the listener's
	// own address are answered.
	AdminToken string
	// Mode names what the process does ("replay", "record", "auto",
	// "mock", "view"), shown in every page's header.
	Mode string
	// Logger receives the errors of pages that failed; nil discards.
	Logger *slog.Logger
	// MaxLiveStreams bounds the live log streams open at once (the log is
	// read and each new entry rendered once for all of them, and a stream
	// holds at most a bounded backlog); zero means DefaultMaxLiveStreams.
	// One past it is answered 503.
	MaxLiveStreams int
}

// DefaultMaxLiveStreams is Options.MaxLiveStreams's default.
const DefaultMaxLiveStreams = 64

// Handler serves the view. Close ends the live log streams it holds open.
type Handler struct {
	opts  Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	log   *slog.Logger
	gate  *gate // the admin token, its sessions and its waits

	mu     sync.Mutex
	closed chan struct{} // closed by Close
	live   chan struct{} // a token per live log stream open
	hub    *hub          // hands new log entries to the live streams
}

// New checks opts and builds a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Source == nil {
		return nil, errors.New("view: Options.Source is required")
	}
	if opts.MaxLiveStreams <= 0 {
		opts.MaxLiveStreams = DefaultMaxLiveStreams
	}
	h := &Handler{opts: opts, log: opts.Logger, gate: newGate(opts.AdminToken), closed: make(chan struct{}), live: make(chan struct{}, opts.MaxLiveStreams)}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.hub = &hub{src: opts.Source, render: h.writeEntry, closed: h.closed, log: h.log}
	var err error
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(staticFiles, "static")
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"{$}", h.interactions)
	mux.HandleFunc("GET "+Prefix+"interactions/{id}", h.interaction)
	mux.HandleFunc("GET "+Prefix+"log", h.logPage)
	mux.HandleFunc("GET "+Prefix+"log/events", h.logEvents)
	mux.HandleFunc("GET "+Prefix+"presets", h.presetsPage)
	mux.HandleFunc("GET "+Prefix+"scenario", h.scenarioPage)
	mux.HandleFunc("GET "+Prefix+"login", h.loginPage)
	mux.HandleFunc("POST "+Prefix+"login", h.login)
	mux.HandleFunc("POST "+Prefix+"logout", h.logout)
	mux.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", staticHandler(static)))
	mux.HandleFunc(Prefix, h.notFound)
	mux.Handle("GET "+Prefix[:len(Prefix)-1], http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	h.mux = mux
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the login form, which then cannot be told from a
	// form posted by another site.
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !h.admit(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// Close ends the live log streams, so that a server's graceful shutdown
// need not wait for open pages (register it with
// http.Server.RegisterOnShutdown). Pages are still served after it.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.closed:
	default:
		close(h.closed)
	}
}

// InteractionURL is the address of an interaction's page on a view served
// at base (scheme and host, e.g. "http://127.0.0.1:7878"); name is the
// cassette's name, "" when the server has one cassette.
func InteractionURL(base, name string, id uint64) string {
	u := base + Prefix + "interactions/" + strconv.FormatUint(id, 10)
	if name != "" {
		u += "?" + url.Values{"cassette": {name}}.Encode()
	}
	return u
}

// staticHandler serves the embedded files, cached for an hour (they change
// only with the binary).
func staticHandler(files fs.FS) http.Handler {
	fsh := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fsh.ServeHTTP(w, r)
	})
}

// render writes a page, or a plain 500 if the template fails (nothing of a
// half-rendered page is sent).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	p.Mode = h.opts.Mode
	p.Auth = h.opts.AdminToken != ""
	var buf bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		h.log.Error("view: rendering a page", "page", name, "path", r.URL.Path, "err", err)
		http.Error(w, "llmproxy: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers with the error page for err: 404 for ErrNotFound, 400 for
// ErrBadName, else 500.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrBadName):
		status = http.StatusBadRequest
	default:
		h.log.Error("view: a page failed", "path", r.URL.Path, "err", err)
	}
	h.problem(w, r, status, err.Error())
}

// problem answers with the error page.
func (h *Handler) problem(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error", &page{Title: http.StatusText(status), Data: errorPage{Status: status, Message: msg}})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.problem(w, r, http.StatusNotFound, fmt.Sprintf("llmproxy: the view has no page %s", r.URL.Path))
}

// page is what every template is given.
type page struct {
	Title string
	// Nav is the menu entry the page belongs to.
	Nav  string
	Mode string
	Auth bool
	Data any
}

type errorPage struct {
	Status  int
	Message string
}
