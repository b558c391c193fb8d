package view

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SessionLifetime is how long a sign-in lasts: the session cookie's
// Max-Age, and its session's expiry on the server.
const SessionLifetime = 12 * time.Hour

// The bounds of a gate's state and the waits it imposes.
const (
	// maxSessions bounds the sessions kept; signing in past it ends the
	// session that would expire first.
	maxSessions = 64
	// freeAttempts is how many wrong tokens a client may send before its
	// attempts wait.
	freeAttempts = 5
	// firstWait is the wait after the first wrong token past freeAttempts;
	// each further one doubles it, up to maxWait.
	firstWait = time.Second
	maxWait   = 5 * time.Minute
	// forgetAfter is how long after its last wrong token a client starts
	// afresh.
	forgetAfter = 15 * time.Minute
	// maxClients bounds the client addresses whose wrong tokens are kept;
	// past it, those not waiting are forgotten (see gate.forget).
	maxClients = 4096
)

// Access is what a request's credentials are worth against the admin token
// (see Handler.Access).
type Access int

const (
	// Granted: the admin token as Authorization: Bearer, the cookie of a
	// live session, or no admin token is set.
	Granted Access = iota
	// Refused: no credential, or a wrong one.
	Refused
	// Throttled: the request's client sent too many wrong tokens lately;
	// its credentials were not looked at. Retry after the wait given.
	Throttled
)

// gate guards the admin token. It checks a request's token, keeps the
// sessions the login form opens (random ids, each with an expiry, ended at
// sign-out), and makes a client that keeps sending a wrong token wait:
// after freeAttempts wrong ones, for firstWait, doubled at each further one
// up to maxWait, during which its attempts are refused unread. A client is
// its address (an IPv6 one's /64). Its state is bounded by maxSessions and
// maxClients.
type gate struct {
	token string
	now   func() time.Time

	mu       sync.Mutex
	sessions map[string]time.Time // session id → expiry
	clients  map[string]strikes   // client → its recent wrong tokens
}

// strikes are a client's recent wrong tokens.
type strikes struct {
	n     int       // wrong tokens since it last got one right, or was forgotten
	last  time.Time // the latest
	until time.Time // its attempts wait until then
}

func newGate(token string) *gate {
	return &gate{token: token, now: time.Now, sessions: map[string]time.Time{}, clients: map[string]strikes{}}
}

// access says what r's credentials are worth: a live session's cookie, or
// the token as Authorization: Bearer. Any other Authorization header is a
// wrong token and counts against r's client.
func (g *gate) access(r *http.Request) (Access, time.Duration) {
	if g.token == "" {
		return Granted, 0
	}
	if c, err := r.Cookie(CookieName); err == nil && g.live(c.Value) {
		return Granted, 0
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return Refused, 0
	}
	token, bearer := strings.CutPrefix(auth, "Bearer ")
	return g.attempt(clientOf(r), bearer && g.is(token))
}

// attempt settles one attempt of a client whose token was right or not:
// Throttled while the client waits (right or not), else Granted or
// Refused, counting a wrong one.
func (g *gate) attempt(client string, right bool) (Access, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	s := g.clients[client]
	if wait := s.until.Sub(now); wait > 0 {
		return Throttled, wait
	}
	if right {
		delete(g.clients, client)
		return Granted, 0
	}
	if now.Sub(s.last) > forgetAfter {
		s = strikes{}
	}
	s.n++
	s.last = now
	if past := s.n - freeAttempts; past > 0 {
		wait := maxWait
		if past <= 16 && firstWait<<(past-1) < maxWait {
			wait = firstWait << (past - 1)
		}
		s.until = now.Add(wait)
	}
	if _, ok := g.clients[client]; !ok && len(g.clients) >= maxClients {
		g.forget(now)
	}
	g.clients[client] = s
	return Refused, 0
}

// forget makes room among the clients: it drops every client not waiting
// now, and, when all are waiting, an eighth of them, so that the sweep is
// paid once per many new clients.
func (g *gate) forget(now time.Time) {
	for c, s := range g.clients {
		if !s.until.After(now) {
			delete(g.clients, c)
		}
	}
	for c := range g.clients {
		if len(g.clients) < maxClients-maxClients/8 {
			break
		}
		delete(g.clients, c)
	}
}

// is reports whether a token is the admin token, in constant time.
func (g *gate) is(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(g.token)) == 1
}

// open starts a session and returns its id and expiry; past maxSessions
// the session that would expire first ends.
func (g *gate) open() (id string, expires time.Time) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id = hex.EncodeToString(b[:])
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if len(g.sessions) >= maxSessions {
		first := ""
		for s, exp := range g.sessions {
			if !exp.After(now) {
				delete(g.sessions, s)
			} else if first == "" || exp.Before(g.sessions[first]) {
				first = s
			}
		}
		if len(g.sessions) >= maxSessions {
			delete(g.sessions, first)
		}
	}
	expires = now.Add(SessionLifetime)
	g.sessions[id] = expires
	return id, expires
}

// live reports whether id names a session that has not expired nor ended.
func (g *gate) live(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.sessions[id]
	if ok && !exp.After(g.now()) {
		delete(g.sessions, id)
		return false
	}
	return ok
}

// end ends a session.
func (g *gate) end(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, id)
}

// clientOf names a request's client by its address: an IPv4 address, or an
// IPv6 address's /64, which one host may hold whole.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if a = a.Unmap(); a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// RetryAfter is a wait as the value of a Retry-After header: whole
// seconds, rounded up.
func RetryAfter(wait time.Duration) string {
	return strconv.Itoa(int((wait + time.Second - 1) / time.Second))
}
