package main

import (
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// TestWrapperUpstreamFailures: under record and auto, a request that
// failed upstream (refused, broken mid-response) is listed on stderr after
// CMD exits, and the exit status is 3 unless CMD failed itself; an error
// status the upstream really sent, and that was recorded, is no failure.
func TestWrapperUpstreamFailures(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	refused := closedPort(t)
	provider500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":{"message":"the provider's own 500","type":"server_error"}}`))
	}))
	defer provider500.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"id":`))
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
	}))
	defer broken.Close()
	for _, mode := range []string{"record", "auto"} {
		for _, tc := range []struct {
			name, upstream string
			cmd            []string // default: the test binary
			code           int
			stderr         []string
			noStderr       []string
		}{
			{"refused", refused, nil, 3, []string{"exited with status 0, but 1 request(s) failed upstream:",
				"POST /v1/chat/completions", "connection refused"}, nil},
			{"refused and CMD failed", refused, []string{"sh", "-c", `"$0" && exit 4`}, 4, []string{"sh exited with status 4; 1 request(s) failed upstream:"}, nil},
			{"broken mid-response", broken.URL, nil, 3, []string{"1 request(s) failed upstream:", "broke mid-response"}, nil},
			{"the provider's own 500, recorded", provider500.URL, nil, 0, nil, []string{"failed upstream", "exited"}},
		} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				t.Setenv(childRole, "post="+hitBody)
				cas := filepath.Join(t.TempDir(), "new.cassette")
				cmd := []string{self(t)}
				if tc.cmd != nil {
					cmd = append(slices.Clone(tc.cmd), self(t))
				}
				args := []string{mode, "--cassette", cas, "--upstream", tc.upstream, "--"}
				code, stdout, stderr := cli(t, append(args, cmd...)...)
				if code != tc.code {
					t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, stdout, stderr)
				}
				rest := stderr
				for _, s := range tc.stderr {
					i := strings.Index(rest, s)
					if i < 0 {
						t.Errorf("stderr lacks %q (in order):\n%s", s, stderr)
						break
					}
					rest = rest[i+len(s):]
				}
				for _, s := range tc.noStderr {
					if strings.Contains(stderr, s) {
						t.Errorf("stderr holds %q:\n%s", s, stderr)
					}
				}
			})
		}
	}
}
