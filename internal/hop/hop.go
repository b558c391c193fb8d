// Package hop names the HTTP hop-by-hop headers: those that describe one
// connection rather than the message it carries, so that a proxy never
// passes them on, a recording never keeps them and a replay never sends
// them.
package hop

import "net/http"

// IsHeader reports whether name, in canonical form (as the keys of an
// http.Header are), is a hop-by-hop header: Connection, Keep-Alive,
// Proxy-Connection, Proxy-Authenticate, Proxy-Authorization, Te, Trailer,
// Transfer-Encoding or Upgrade. Proxy-Authorization is the client's
// credential for the proxy it talks to (RFC 9110 §11.7.2), so it never
// leaves that proxy. Headers that a Connection header names are hop-by-hop
// too, but only for that message; Remove does not know them.
func IsHeader(name string) bool {
	switch name {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te",
		"Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// Remove deletes every header for which IsHeader holds from h.
func Remove(h http.Header) {
	for k := range h {
		if IsHeader(k) {
			delete(h, k)
		}
	}
}
