// Package query reads a URL query's parameters the one way llmproxy reads
// them: the redactor to find the secret ones, the matcher to leave secret
// and ignored ones out of the match key and out of a miss's differences.
// One rule for both, so that what is redacted is what is never compared:
// parameters are separated by '&' or ';' (servers take either), names and
// values are unescaped as form fields are, and a rule's name (a secret or
// an ignored parameter) matches a name in any case.
package query

import (
	"net/url"
	"strings"
)

// Cut returns the first parameter of a raw query as written, the
// separator that ends it ('&' or ';', 0 at the end) and the rest after it.
func Cut(raw string) (param string, sep byte, rest string) {
	i := strings.IndexAny(raw, "&;")
	if i < 0 {
		return raw, 0, ""
	}
	return raw[:i], raw[i], raw[i+1:]
}

// Param splits one parameter, as written, into its name and value, each
// unescaped as a form field is ('+' is a space); a part that does not
// unescape is kept as written.
func Param(p string) (name, value string) {
	name, value, _ = strings.Cut(p, "=")
	return unescape(name), unescape(value)
}

func unescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// SameName reports whether an unescaped parameter name is the name a rule
// gives: without regard to case, so KEY and Api_Key are key and api_key.
func SameName(name, rule string) bool { return strings.EqualFold(name, rule) }

// Named reports whether an unescaped parameter name is one of the rules'
// names (see SameName).
func Named(name string, rules []string) bool {
	for _, r := range rules {
		if SameName(name, r) {
			return true
		}
	}
	return false
}
