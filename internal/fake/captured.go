package fake

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/llmproxy/llmproxy/internal/hop"
)

//go:embed captured
var capturedFS embed.FS

// Captured returns a copy of the captured file name, a path relative to the
// captured directory such as "openai-chat-stream-toolcalls.sse" or
// "aimock/gemini-stream-functioncall.sse".
//
// It panics when there is no such file: names are constants in the caller's
// code, so an unknown one is a programming error, not a condition to handle.
func Captured(name string) []byte {
	b, err := capturedFS.ReadFile("captured/" + name)
	if err != nil {
		panic(fmt.Sprintf("fake: no captured file %q", name))
	}
	return b
}

// CapturedFiles lists the names [Captured] accepts, sorted.
func CapturedFiles() []string {
	var names []string
	err := fs.WalkDir(capturedFS, "captured", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, "captured/"))
		}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("fake: walk captured files: %v", err))
	}
	sort.Strings(names)
	return names
}

// CapturedHeaders returns the headers of a captured *.headers.txt or *.http
// file exactly as captured, so including Content-Length, Content-Encoding and
// Transfer-Encoding lines that describe the original transfer rather than the
// decoded body stored next to them. Upstreams drop those before serving.
//
// It panics when the file does not exist or is not a headers or HTTP file.
func CapturedHeaders(name string) http.Header {
	_, h, _ := CapturedHTTP(name)
	return h
}

// CapturedHTTP splits a captured *.http file into its status code, headers and
// body. For a *.headers.txt file the body is nil.
//
// It panics when the file does not exist, is not a headers or HTTP file, or
// does not parse: all of those are programming errors.
func CapturedHTTP(name string) (status int, h http.Header, body []byte) {
	if !strings.HasSuffix(name, ".http") && !strings.HasSuffix(name, ".headers.txt") {
		panic(fmt.Sprintf("fake: captured file %q is not a .http or .headers.txt file", name))
	}
	status, h, body, err := parseHTTP(Captured(name))
	if err != nil {
		panic(fmt.Sprintf("fake: captured file %q: %v", name, err))
	}
	return status, h, body
}

// parseHTTP reads a status line, header lines up to an empty line, and keeps
// whatever follows as the body, byte for byte.
func parseHTTP(raw []byte) (int, http.Header, []byte, error) {
	line, rest, _ := cutLine(raw)
	proto, code, ok := strings.Cut(string(line), " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/") {
		return 0, nil, nil, fmt.Errorf("status line %q: want HTTP/x.y CODE", line)
	}
	code, _, _ = strings.Cut(code, " ")
	status, err := strconv.Atoi(code)
	if err != nil || status < 100 || status > 999 {
		return 0, nil, nil, fmt.Errorf("status line %q: bad status code", line)
	}
	h := http.Header{}
	for len(rest) > 0 {
		line, rest, _ = cutLine(rest)
		if len(line) == 0 {
			break // the body follows
		}
		k, v, ok := strings.Cut(string(line), ":")
		if !ok || strings.TrimSpace(k) == "" {
			return 0, nil, nil, fmt.Errorf("header line %q: want Name: value", line)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	var body []byte
	if len(rest) > 0 {
		body = rest
	}
	return status, h, body, nil
}

// cutLine splits b after the first LF (or CRLF) and reports whether there was
// one.
func cutLine(b []byte) (line, rest []byte, found bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), b[i+1:], true
}

// pairedHeaders finds the captured headers that belong to a captured body
// file: "x.response.json" and "x.sse" pair with "x.response.headers.txt", and
// "openai-error-429-….json" with "openai-error-429.response.headers.txt".
func pairedHeaders(name string) (status int, h http.Header, ok bool) {
	base := name
	for _, ext := range []string{".response.json", ".json", ".sse", ".ndjson"} {
		if strings.HasSuffix(base, ext) {
			base = strings.TrimSuffix(base, ext)
			break
		}
	}
	candidates := []string{base + ".response.headers.txt", base + ".headers.txt"}
	if code, prefix := errorStatus(base); code != 0 {
		candidates = append(candidates, prefix+".response.headers.txt")
	}
	for _, c := range candidates {
		if _, err := fs.Stat(capturedFS, "captured/"+c); err == nil {
			status, h, _ := CapturedHTTP(c)
			return status, h, true
		}
	}
	return 0, nil, false
}

// errorStatus reads the status out of a name like "anthropic-error-529-…",
// returning it with the name up to and including the code.
func errorStatus(name string) (int, string) {
	i := strings.Index(name, "-error-")
	if i < 0 || len(name) < i+len("-error-")+3 {
		return 0, ""
	}
	end := i + len("-error-") + 3
	code, err := strconv.Atoi(name[end-3 : end])
	if err != nil || code < 100 {
		return 0, ""
	}
	return code, name[:end]
}

// servable returns a copy of h without the headers that describe one
// particular transfer of a body (the hop-by-hop headers, Content-Length and
// Content-Encoding): they are never copied from a capture or a script into a
// response, the server computes its own.
func servable(h http.Header) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	hop.Remove(out)
	out.Del("Content-Length")
	out.Del("Content-Encoding")
	return out
}
