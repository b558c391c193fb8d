package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// loc is a place in a scenario: a JSON Pointer into the file's document
// (to find its line) and the words that name it in an error.
type loc struct {
	ptr  string // "/steps/1/respond/tool-calls/0"
	head string // `step "ask"`, `fixture "paris"`, or "" at the top
	tail string // "respond.tool-calls[0]"
}

func (l loc) key(k string) loc {
	l.ptr += "/" + escapePointer(k)
	if l.tail == "" {
		l.tail = k
	} else {
		l.tail += "." + k
	}
	return l
}

func (l loc) index(i int) loc {
	l.ptr += "/" + strconv.Itoa(i)
	l.tail += "[" + strconv.Itoa(i) + "]"
	return l
}

// pointer descends by a JSON Pointer relative to l, such as a schema
// violation's "/hits/0/url".
func (l loc) pointer(p string) loc {
	if p == "" {
		return l
	}
	for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if n, err := strconv.Atoi(seg); err == nil && n >= 0 && strconv.Itoa(n) == seg {
			l = l.index(n)
		} else {
			l = l.key(seg)
		}
	}
	return l
}

func (l loc) where() string {
	switch {
	case l.head == "":
		return l.tail
	case l.tail == "":
		return l.head
	}
	return l.head + ": " + l.tail
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func stepLoc(i int, id string) loc {
	return loc{ptr: "/steps/" + strconv.Itoa(i), head: fmt.Sprintf("step %q", id)}
}

func fixtureLoc(name string) loc {
	return loc{ptr: "/fixtures/" + escapePointer(name), head: fmt.Sprintf("fixture %q", name)}
}

// problems collects the errors found in a scenario.
type problems struct{ list ErrorList }

func (p *problems) add(l loc, format string, args ...any) {
	p.list = append(p.list, &Error{Where: l.where(), Message: fmt.Sprintf(format, args...), ptr: l.ptr})
}

func (p *problems) last() *Error { return p.list[len(p.list)-1] }
