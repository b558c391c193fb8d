package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// maxDepth bounds the nesting of any JSON document this package reads
// (checkJSON's check, encoding/json's limit), so that hostile input cannot
// exhaust the stack of gjson's recursive walks.
const maxDepth = jsonvalue.ValidMaxDepth

// checkJSON returns nil if b is one valid JSON value, or a description of the
// first problem (the caller wraps it in ErrMalformed).
func checkJSON(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty body")
	}
	if jsonvalue.Valid(b) { // in one pass, whatever its depth
		return nil
	}
	if d, at := depth(b); d > maxDepth {
		return fmt.Errorf("byte %d: nesting deeper than %d", at, maxDepth)
	}
	var raw json.RawMessage
	err := json.Unmarshal(b, &raw)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("byte %d: %s", se.Offset, se.Error())
	case err != nil:
		return err
	}
	return errors.New("invalid JSON")
}

// depth returns the deepest nesting of arrays and objects in b, up to
// just past maxDepth, and the offset where it stopped (jsonvalue.Depth).
func depth(b []byte) (deepest, at int) { return jsonvalue.Depth(b, maxDepth) }

// parseDoc validates b and returns it parsed; positions in the result
// (Result.Index) are offsets into b.
func parseDoc(b []byte) (gjson.Result, error) {
	if err := checkJSON(b); err != nil {
		return gjson.Result{}, err
	}
	s := string(b)
	r := gjson.Parse(s)
	// Parse leaves Index at 0 even after leading whitespace; children's
	// offsets are relative to the root's, so set it.
	r.Index = len(s) - len(strings.TrimLeft(s, " \t\r\n"))
	return r, nil
}

// appendString appends s as a JSON string token. Invalid UTF-8 becomes
// U+FFFD; HTML characters are not escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// A run of bytes that need no escape goes out in one copy.
		if safeASCII[s[i]] {
			j := i + 1
			for j < len(s) && safeASCII[s[j]] {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u`...)
			b = strconv.AppendInt(b, int64(r), 16)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// safeASCII marks the bytes appendString copies as they are: printable
// ASCII but '"' and '\\'.
var safeASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// quote returns s as a JSON string token.
func quote(s string) []byte { return appendString(nil, s) }

// strOf returns r's string value, or "" if r is not a JSON string.
func strOf(r gjson.Result) string {
	if r.Type == gjson.String {
		return r.Str
	}
	return ""
}

// memberOf returns the first of keys that exists in r (for fields that the
// API accepts in camelCase and snake_case), and that key.
func memberOf(r gjson.Result, keys ...string) (gjson.Result, string) {
	for _, k := range keys {
		if v := r.Get(k); v.Exists() {
			return v, k
		}
	}
	return gjson.Result{}, ""
}

// firstMembers sets out[k] to the first member of the object r named
// keys[k], as r.Get(keys[k]) returns it for a key without gjson's path
// syntax (keys are compared unescaped), reading r once instead of once a
// key; a key r lacks leaves out[k] as it was.
func firstMembers(r gjson.Result, keys []string, out []gjson.Result) {
	if !r.IsObject() {
		return
	}
	r.ForEach(func(k, v gjson.Result) bool {
		for i, key := range keys {
			if k.Str == key && !out[i].Exists() {
				out[i] = v
				break
			}
		}
		return true
	})
}

// each calls fn for each element of r if r is an array.
func each(r gjson.Result, fn func(i int, v gjson.Result)) {
	if !r.IsArray() {
		return
	}
	i := 0
	r.ForEach(func(_, v gjson.Result) bool {
		fn(i, v)
		i++
		return true
	})
}

// args returns the text of a tool call's arguments: a JSON string's content,
// or the raw text of an object. Empty or absent arguments read as "{}".
func args(r gjson.Result) []byte {
	var b []byte
	switch r.Type {
	case gjson.String:
		b = []byte(r.Str)
	case gjson.JSON:
		b = []byte(r.Raw)
	}
	return orEmptyObject(b)
}

func orEmptyObject(b []byte) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// SyntheticID is the key under which RewriteCallIDs and Request.Answers know a
// tool call that has no id on the wire (usual for Gemini, and for Ollama as
// its documentation shows it): "#" + name + "#" + n, meaning the n-th call to
// the function name (n from 1) among the id-less calls of one body, counted
// in body order. See RewriteCallIDs for how results pair with calls.
func SyntheticID(name string, n int) string {
	return "#" + name + "#" + strconv.Itoa(n)
}

// parseSynthetic splits a SyntheticID.
func parseSynthetic(id string) (name string, n int, ok bool) {
	if len(id) < 3 || id[0] != '#' {
		return "", 0, false
	}
	i := len(id) - 1
	for i > 0 && id[i] >= '0' && id[i] <= '9' {
		i--
	}
	if id[i] != '#' || i == 0 || i == len(id)-1 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return id[1:i], n, true
}
