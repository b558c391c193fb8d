// Package match decides when two requests are the same: it reads the rules
// that say what to compare (a rules file, LoadRules), turns requests into
// match keys, and explains misses.
//
// Two requests match when their method, upstream name, path, query (in any
// order) and body are equal, where a JSON body is compared as a JSON value
// (internal/jsonvalue, the one equality llmproxy has): key order,
// whitespace, string escapes and number spelling (1, 1.0, 1e0) do not
// matter. A body holding a number beyond 10^±1000000 is refused
// (ErrNumberRange). Ignore rules remove gjson-style paths from the
// comparison; headers are compared only when named by a rule, and secret
// query parameters never are.
//
// # Rules
//
// Key is a pure function of the request and the Matcher's rules, so a key
// computed at record time finds the request at replay time with a lookup, not
// a scan. Diff never answers only "no": it lists each JSON path at which two
// requests differ, with both values, so a miss can say what changed.
package match
