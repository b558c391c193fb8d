package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// locateBody finds the first body or stream event of an export that
// Body.UnmarshalJSON refuses. encoding/json returns such an error without
// saying where it happened; this gives the line and the field, e.g. "line
// 40: interactions[2].response.events[5].data".
func locateBody(data []byte) (string, bool) {
	var f struct {
		Interactions []struct {
			Request struct {
				Body json.RawMessage `json:"body"`
			} `json:"request"`
			Response struct {
				Body   json.RawMessage `json:"body"`
				Events []struct {
					Data json.RawMessage `json:"data"`
				} `json:"events"`
			} `json:"response"`
		} `json:"interactions"`
	}
	if json.Unmarshal(data, &f) != nil {
		return "", false
	}
	refused := func(raw json.RawMessage) bool {
		var b Body
		return len(raw) > 0 && b.UnmarshalJSON(raw) != nil
	}
	at := func(n int, field string, raw json.RawMessage) (string, bool) {
		line := 0
		if off := bytes.Index(data, raw); off >= 0 {
			line, _ = position(data, int64(off))
		}
		return fmt.Sprintf("line %d: interactions[%d].%s", line, n, field), true
	}
	for n, i := range f.Interactions {
		if refused(i.Request.Body) {
			return at(n, "request.body", i.Request.Body)
		}
		if refused(i.Response.Body) {
			return at(n, "response.body", i.Response.Body)
		}
		for e, ev := range i.Response.Events {
			if refused(ev.Data) {
				return at(n, fmt.Sprintf("response.events[%d].data", e), ev.Data)
			}
		}
	}
	return "", false
}
