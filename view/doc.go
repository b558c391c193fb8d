// Package view serves the browser view of cassettes, the live log, presets
// and scenarios under /_llmproxy/ui/: each page at its own URL, complete in
// the HTML it is served with, script only adding filtering and live updates.
//
// The view reads everything through a Source it declares: package proxy
// adapts its cassettes and journal to it, CassetteSource serves one cassette
// file alone (llmproxy view), and a scenario server can describe its steps as
// a Graph.
//
// # Rules
//
// Recorded content is data, never markup: it reaches a page only through
// html/template's contextual escaping, so a recorded answer holding HTML or
// script shows as characters and runs nothing. Every answer carries a
// Content-Security-Policy that allows script and style only from the view's
// own embedded files (no inline script, no other origin), with nosniff and
// no framing. The files are embedded: no build step, no CDN, no network.
//
// With an admin token, nothing but the login form and the static files is
// served without the token, given once in the form and then kept in an
// HttpOnly, SameSite=Strict cookie (or sent as Authorization: Bearer).
// Without one, only requests whose Host is a loopback name or the
// listener's own address are answered, so that no other site reaches the
// view through DNS rebinding.
//
// A page never loads a whole cassette: the interactions table walks one
// page from a cursor, and a filter scans a bounded number of interactions
// (and bytes of their bodies) per request. The scenario page grows with the
// steps, never with steps × targets, and draws and lists a bounded number.
package view
