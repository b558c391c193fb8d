package proxy

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Why a path is refused before routing (see cleanPaths).
var (
	errPathSemicolon  = errors.New("has a ';' in a segment, which some servers take for the start of path parameters and drop; llmproxy forwards no path that servers may read as another")
	errPathEscapedDot = errors.New("spells a dot segment (. or ..) escaped, which some servers resolve after unescaping; llmproxy forwards no path that servers may read as another")
)

// cleanPaths cleans a request's path once, before any check or route sees
// it: empty segments ("//") are dropped and "." and ".." segments resolved
// (".." never climbs past the root), keeping a trailing slash. The guard,
// the routes, the match key and the upstream then all see one path: a
// base URL ending in "/" (which makes //v1/...) is the same route as
// without it, and a path that resolves into /_llmproxy/ is the API's,
// behind its own checks, never forwarded. A path that some server could
// read as another once it unescapes it — a dot segment spelled escaped
// (%2e, %252e, or between escaped slashes) or a ';' in a segment — is
// answered 400 and goes nowhere. A path spelled under /_llmproxy/ is the
// API's as it is (so /_llmproxy/../v1/models is the API's 404, never
// forwarded). A clean path (nearly every request) costs one scan and no
// allocation.
func (s *Server) cleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if !strings.HasPrefix(p, "/") || isReserved(p) || isClean(p) {
			next.ServeHTTP(w, r)
			return
		}
		clean, err := cleanPath(p)
		if err != nil {
			sandbox(w.Header())
			apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: the path "+p+" "+err.Error())
			return
		}
		if clean == p {
			next.ServeHTTP(w, r)
			return
		}
		r2, u := new(http.Request), *r.URL
		*r2 = *r
		u.RawPath = clean
		u.Path, _ = url.PathUnescape(clean) // its segments unescaped once already (checkSegment)
		r2.URL = &u
		next.ServeHTTP(w, r2)
	})
}

// isClean reports whether an escaped path needs none of cleanPath's work:
// no empty, "." or ".." segment, no ';' and no escape.
func isClean(p string) bool {
	if strings.Contains(p, "//") || strings.ContainsAny(p, ";%") {
		return false
	}
	for rest := p[1:]; ; {
		seg, after, more := strings.Cut(rest, "/")
		if seg == "." || seg == ".." {
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}

// cleanPath returns an escaped path (starting with "/") without empty, "."
// and ".." segments, or an error saying why it is refused.
func cleanPath(p string) (string, error) {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for _, seg := range segs {
		if err := checkSegment(seg); err != nil {
			return "", err
		}
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	clean := "/" + strings.Join(out, "/")
	if last := segs[len(segs)-1]; len(out) > 0 && (last == "" || last == "." || last == "..") {
		clean += "/"
	}
	return clean, nil
}

// checkSegment refuses an escaped path segment holding a ';', or which,
// unescaped once or more (as %252e is twice), holds a ';' or a dot
// segment.
func checkSegment(seg string) error {
	if strings.IndexByte(seg, ';') >= 0 {
		return errPathSemicolon
	}
	for u := seg; strings.IndexByte(u, '%') >= 0; {
		un, err := url.PathUnescape(u)
		if err != nil || un == u {
			return nil // the server parsed the path, so its escapes are valid; deeper, it is text
		}
		u = un
		if strings.IndexByte(u, ';') >= 0 {
			return errPathSemicolon
		}
		for part := range strings.SplitSeq(u, "/") {
			if part == "." || part == ".." {
				return errPathEscapedDot
			}
		}
	}
	return nil
}

// reservedPrefix is the path of the proxy's own API, never forwarded.
const reservedPrefix = "/_llmproxy"

// isReserved reports whether a decoded path is under the proxy's own prefix.
func isReserved(path string) bool {
	return path == reservedPrefix || strings.HasPrefix(path, reservedPrefix+"/")
}

// escapesReserved reports whether an escaped request path spells the
// reserved prefix only once unescaped (once or more, as %5f, %2F or
// %255f), and cleaned as cleanPaths cleans (so %2F_llmproxy, which
// unescapes to //_llmproxy, is one too): such a path is neither forwarded
// nor taken for the API.
func escapesReserved(escaped string) bool {
	p := escaped
	for range 4 {
		u, err := url.PathUnescape(p)
		if err != nil || u == p {
			break
		}
		p = u
		if isReserved(p) || isReserved(path.Clean(p)) {
			return true
		}
	}
	return false
}
