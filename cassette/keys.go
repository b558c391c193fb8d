package cassette

import (
	"bytes"
	"cmp"
	"slices"
	"unsafe"
)

// keyPrefixes are the literal starts of the shapes. The scan looks for
// each prefix's anchor, the part of it rarest in prose ("s" and "e" are
// everywhere), which starts skip bytes into it.
var keyPrefixes = [...]struct {
	prefix, anchor string
	skip           int
}{{"sk-", "k-", 1}, {"AIza", "AIza", 0}, {"AKIA", "AKIA", 0}, {"ASIA", "ASIA", 0}, {"eyJ", "yJ", 1},
	{stsTokenPrefix, stsTokenPrefix, 0}, {stsTokenPrefixOld, stsTokenPrefixOld, 0}}

// stsTokenPrefix and stsTokenPrefixOld start AWS STS session tokens (the
// X-Amz-Security-Token of temporary credentials): the base64 of the
// token's first bytes, the same in every token STS issues.
const (
	stsTokenPrefix    = "IQoJb3JpZ2lu"
	stsTokenPrefixOld = "FwoGZXIvYXdz"
)

// minSTSToken is the shortest run taken for a session token (real ones
// are several hundred bytes).
const minSTSToken = 100

// secretNames are the spellings, less their first letter (which may be
// either case), of the names under which an AWS secret access key is
// written: JSON and SDK fields, the shared credentials file, the
// environment.
var secretNames = [...]string{"ecretAccessKey", "ecret_access_key", "ECRET_ACCESS_KEY"}

// secretNameSkip is the length of the part every secret name starts with
// ("ecret" in either case), which findNamedSecrets skips to find a name.
const secretNameSkip = 5

// secretKeyLen is the length of an AWS secret access key.
const secretKeyLen = 40

func isBase64Byte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// minSKBody is the shortest run after "sk-" taken for a key.
const minSKBody = 20

// minKeyLen is the length of the shortest key-shaped string: "AKIA" or
// "ASIA" and 16 more bytes (an "sk-" key has at least 23, a JWT 22, a
// Google key 39). A shorter input holds none, which spares the scan of
// most header values and paths.
const minKeyLen = 20

func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// keyRun returns the end of the run of key bytes starting at i.
func keyRun(b []byte, i int) int {
	for i < len(b) && isKeyByte(b[i]) {
		i++
	}
	return i
}

// atBoundary reports whether a key may start at i: the byte before is not a
// key byte (nor, with dot, a '.'), or is the letter of a JSON escape.
func atBoundary(b []byte, i int, dot bool) bool {
	if i == 0 {
		return true
	}
	c := b[i-1]
	if dot && c == '.' {
		return false
	}
	if !isKeyByte(c) {
		return true
	}
	switch c {
	case 'n', 't', 'r', 'b', 'f':
		return i >= 2 && b[i-2] == '\\'
	}
	return false
}

// matchKey tries the shape of prefix at i, a boundary. It returns the end of
// the key and ok, or, when there is none, where to resume looking: a later
// occurrence of the prefix before that point cannot be at a boundary.
func matchKey(b []byte, i int, prefix string) (end int, ok bool) {
	body := i + len(prefix)
	switch prefix {
	case "sk-":
		end = keyRun(b, body)
		return end, end-body >= minSKBody && mixed(b[body:end])
	case "AIza":
		end = keyRun(b, body)
		return end, end-body == 35
	case "AKIA", "ASIA":
		j := body
		for j < len(b) && (b[j] >= 'A' && b[j] <= 'Z' || b[j] >= '0' && b[j] <= '9') {
			j++
		}
		end = keyRun(b, body)
		return end, j-body == 16 && j == end
	case stsTokenPrefix, stsTokenPrefixOld:
		end = body
		for end < len(b) && isBase64Byte(b[end]) {
			end++
		}
		return end, end-i >= minSTSToken
	case "eyJ":
		first := keyRun(b, body)
		if first-i < 10 || first >= len(b) || b[first] != '.' || !bytes.HasPrefix(b[first+1:], []byte("eyJ")) {
			return first, false
		}
		second := keyRun(b, first+1)
		if second-first-1 < 10 || second >= len(b) || b[second] != '.' {
			return first, false
		}
		return keyRun(b, second+1), true
	}
	return body, false
}

// mixed reports whether s holds upper case, lower case and digits.
func mixed(s []byte) bool {
	var upper, lower, digit int
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			upper = 1
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= '0' && c <= '9':
			digit = 1
		}
	}
	return upper+lower+digit == 3
}

// keySpan is a key's place [start, end) in a byte string.
type keySpan struct{ start, end int }

// findKeys returns the spans of the key-shaped strings in b, unordered and
// not overlapping within one shape.
func findKeys(b []byte) []keySpan {
	if len(b) < minKeyLen || !hasAnchorStart(b) {
		return nil
	}
	return scanKeys(b)
}

// scanKeys is findKeys without its checks of length and anchor bytes.
func scanKeys(b []byte) []keySpan {
	var spans []keySpan
	for _, kp := range keyPrefixes {
		prefix, anchor := kp.prefix, []byte(kp.anchor)
		for pos := 0; pos < len(b); {
			n := bytes.Index(b[pos:], anchor)
			if n < 0 {
				break
			}
			at := pos + n - kp.skip
			if at < 0 || !bytes.HasPrefix(b[at:], []byte(prefix)) || !atBoundary(b, at, prefix == "eyJ") {
				pos += n + 1
				continue
			}
			end, ok := matchKey(b, at, prefix)
			if ok {
				spans = append(spans, keySpan{at, end})
			}
			pos = max(end, at+1)
		}
	}
	return append(spans, findNamedSecrets(b)...)
}

// anchorStarts marks the first bytes of the anchors findKeys and
// findNamedSecrets look for: every key they find has one of its anchors in
// the input, so an input with none of these bytes holds no key.
var anchorStarts = func() (t [256]bool) {
	for _, kp := range keyPrefixes {
		t[kp.anchor[0]] = true
	}
	for _, name := range secretNames {
		t[name[secretNameSkip]] = true
	}
	return t
}()

// hasAnchorStart reports whether b holds a byte that starts an anchor. Most
// paths and short header values hold none ("/v1/chat/completions"), and
// are spared a search for each anchor; in prose one comes early.
func hasAnchorStart(b []byte) bool {
	for _, c := range b {
		if anchorStarts[c] {
			return true
		}
	}
	return false
}

// findNamedSecrets returns the spans of AWS secret access keys written
// under one of secretNames: the name, an optional closing quote (escaped
// or not), spaces, ':' or '=', spaces, an optional opening quote, and
// exactly secretKeyLen base64 bytes.
//
// Each name is found by its part after "ecret" or "ECRET" (the anchor, which
// starts with a letter rarer in text than 'e'), then checked whole: the
// same occurrences, in the same order, as a search for the whole name.
func findNamedSecrets(b []byte) []keySpan {
	var spans []keySpan
	for _, name := range secretNames {
		anchor := []byte(name[secretNameSkip:])
		for pos := 0; pos+len(name) <= len(b); {
			n := bytes.Index(b[pos+secretNameSkip:], anchor)
			if n < 0 {
				break
			}
			if at := pos + n; !bytes.HasPrefix(b[at:], []byte(name)) {
				pos = at + 1
				continue
			}
			pos += n + len(name)
			start := skipAssign(b, pos)
			end := start
			for end < len(b) && isBase64Byte(b[end]) && end-start <= secretKeyLen {
				end++
			}
			if start > pos && end-start == secretKeyLen {
				spans = append(spans, keySpan{start, end})
			}
		}
	}
	return spans
}

// skipAssign returns where a value starts after a name ending at i: past
// quotes, backslashes and spaces, one ':' or '=', then spaces and quotes.
// It returns i when there is no ':' or '='.
func skipAssign(b []byte, i int) int {
	j := i
	for j < len(b) && j-i < 8 && (b[j] == '"' || b[j] == '\\' || b[j] == ' ' || b[j] == '\'') {
		j++
	}
	if j >= len(b) || (b[j] != ':' && b[j] != '=') {
		return i
	}
	j++
	for k := j; j < len(b) && j-k < 8 && (b[j] == '"' || b[j] == '\\' || b[j] == ' ' || b[j] == '\''); {
		j++
	}
	return j
}

// RedactKeys returns b with every key-shaped string replaced by Redacted;
// when b holds none it returns b itself, without copying. Key-shaped
// strings are credentials recognised by their form wherever they appear: in a request's path, query values, headers and body, and in
// a response's headers, body and stream events. The replacement keeps a
// JSON string a JSON string and an SSE event one event (a key never holds a
// quote, a backslash or a line end).
//
// The shapes, each starting at a word boundary (the byte before is not a
// letter, digit, '_' or '-', or is the letter of a JSON escape such as \n):
//
//   - sk-…: OpenAI (sk-proj-…, sk-svcacct-…, legacy sk-…) and Anthropic
//     (sk-ant-…) keys: "sk-" and at least 20 letters, digits, '_' or '-'
//     holding upper case, lower case and digits, as random keys do, so
//     that "sk-learn" or a slug stays.
//   - AIza…: Google API keys, "AIza" and exactly 35 letters, digits, '_'
//     or '-'.
//   - AKIA… and ASIA…: AWS access key ids, the prefix and exactly 16
//     upper-case letters or digits.
//   - eyJ….eyJ….…: JSON Web Tokens, three base64url segments separated by
//     dots, the first two starting with "eyJ" (a JSON object), the third
//     (the signature) possibly empty.
//   - IQoJb3JpZ2lu… and FwoGZXIvYXdz…: AWS STS session tokens, the prefix
//     and base64 bytes (letters, digits, '+', '/', '=') to at least 100
//     in all.
//   - AWS secret access keys where they are named: exactly 40 base64
//     bytes after SecretAccessKey, secretAccessKey, aws_secret_access_key
//     or AWS_SECRET_ACCESS_KEY, a ':' or '=' and optional quotes and
//     spaces (a secret key has no prefix of its own; SigV4 never sends
//     it, so only a body or log that quotes a credentials file holds one).
//
// Ids such as chatcmpl-…, call_…, msg_… or toolu_… have none of these
// prefixes, and base64 data (an image) holds no '-' and runs on without a
// boundary, so neither is touched. The scan costs time linear in the input
// (each byte is looked at a bounded number of times; there are no regular
// expressions) and allocates only when it finds a key.
func RedactKeys(b []byte) []byte {
	spans := findKeys(b)
	if len(spans) == 0 {
		return b
	}
	slices.SortFunc(spans, func(a, b keySpan) int { return cmp.Compare(a.start, b.start) })
	out := make([]byte, 0, len(b))
	last := 0
	for _, s := range spans {
		if s.start < last { // overlaps the previous key (a key inside a JWT)
			if s.end > last {
				last = s.end
			}
			continue
		}
		out = append(out, b[last:s.start]...)
		out = append(out, Redacted...)
		last = s.end
	}
	return append(out, b[last:]...)
}

// RedactKeysString is RedactKeys for a string. A string without a key is
// scanned in place, not copied.
func RedactKeysString(s string) string {
	if len(findKeys(unsafe.Slice(unsafe.StringData(s), len(s)))) == 0 { // findKeys only reads
		return s
	}
	return string(RedactKeys([]byte(s)))
}
