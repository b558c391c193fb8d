package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An idle keep-alive connection is closed after --idle-timeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	c := &serveConfig{idleTimeout: 200 * time.Millisecond}
	hs := c.httpServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection was not closed within 5 s: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("an idle connection was closed after %s, want about the idle timeout", d)
	}
}

// --read-timeout and --idle-timeout must be positive.
func TestTimeoutFlagsMustBePositive(t *testing.T) {
	for _, flag := range []string{"--read-timeout=0s", "--idle-timeout=-1s"} {
		code, _, stderr := runCLI(t, "record", "--cassette", t.TempDir()+"/x.cassette", "--listen", "127.0.0.1:0", flag)
		name := strings.Split(flag, "=")[0]
		if code != 2 || !strings.Contains(stderr, name) {
			t.Errorf("%s: exit %d, stderr %q; want a usage error naming the flag", flag, code, stderr)
		}
	}
}
