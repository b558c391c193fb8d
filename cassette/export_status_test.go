package cassette_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/store"
)

// TestReadExportRefusesInformationalStatus: a recorded response is a final
// one. An export whose interaction has a 1xx status (a 101 would replay as
// a hung protocol switch, a 100 or 103 as a 1xx followed by a 200) is
// refused, naming the interaction and the status.
func TestReadExportRefusesInformationalStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{{100, false}, {101, false}, {103, false}, {199, false}, {200, true}, {204, true}, {599, true}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			ok := &cassette.Interaction{ID: 1, Upstream: "default", Kind: "generic",
				Request: cassette.Request{Method: "GET", Path: "/v1/models"}, Response: cassette.Response{Status: 200}}
			x := &cassette.Interaction{ID: 2, Upstream: "default", Kind: "generic",
				Request: cassette.Request{Method: "GET", Path: "/ws"}, Response: cassette.Response{Status: tc.status}}
			var buf bytes.Buffer
			ct := &cassette.Contents{Meta: store.Meta{FormatVersion: store.FormatVersion}, Interactions: []*cassette.Interaction{ok, x}}
			if err := cassette.WriteExport(&buf, ct); err != nil {
				t.Fatal(err)
			}
			_, err := cassette.ReadExport(&buf)
			if tc.ok {
				if err != nil {
					t.Errorf("status %d refused: %v", tc.status, err)
				}
				return
			}
			want := fmt.Sprintf("interactions[1].response.status: %d is an informational (1xx) status", tc.status)
			if !errors.Is(err, cassette.ErrBadExport) || err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("status %d: error %v, want ErrBadExport saying %q", tc.status, err, want)
			}
		})
	}
}
