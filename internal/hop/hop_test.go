package hop_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/llmproxy/llmproxy/internal/hop"
)

func TestRemove(t *testing.T) {
	h := http.Header{}
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Type", "Content-Length", "X-Request-Id"} {
		h.Set(k, "v")
	}
	hop.Remove(h)
	want := http.Header{"Content-Type": {"v"}, "Content-Length": {"v"}, "X-Request-Id": {"v"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("after Remove: %v, want %v", h, want)
	}
}

func TestIsHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Transfer-Encoding": true, "Upgrade": true, "Proxy-Authorization": true, "Content-Encoding": false, "Authorization": false,
		"transfer-encoding": false, // not canonical
	} {
		if got := hop.IsHeader(name); got != want {
			t.Errorf("IsHeader(%q) = %v, want %v", name, got, want)
		}
	}
}
