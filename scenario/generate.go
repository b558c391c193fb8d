package scenario

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file derives an answer's text from the request: templates, echo and
// summaries (Answer.TextFrom).

// textGen is a compiled TextFrom.
type textGen struct {
	parts   []templatePart // a template; nil otherwise
	echo    bool
	summary *Summary
	re      *regexp.Regexp // the latest-user matches condition, for captures
}

// templatePart is literal text or a field of a template.
type templatePart struct {
	text    string
	field   string // "", "latest_user", "model", "system" or "capture"
	capture int    // the group, for a capture field
}

// templateFields are the fields a template may name besides captures.
var templateFields = []string{"latest_user", "model", "system"}

// compileTextFrom checks a step's text generator against its conditions.
func compileTextFrom(p *problems, l loc, st *Step) *textGen {
	a := &st.Respond
	g := a.TextFrom
	if g == nil {
		return nil
	}
	if a.Text != "" {
		p.add(l, "an answer has a text or a text generator, not both")
	}
	n := 0
	for _, set := range []bool{g.Template != "", g.Echo, g.Summary != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		p.add(l, "a text generator has exactly one of template, echo or summary")
		return nil
	}
	c := &textGen{echo: g.Echo, summary: g.Summary}
	if lu := st.When.LatestUser; lu != nil && lu.Op == OpMatches {
		c.re, _ = regexp.Compile(lu.Value) // a bad one is reported with the condition
	}
	if g.Summary != nil {
		sl := l.key("summary")
		if g.Summary.MaxChars < 0 || g.Summary.Sentences < 0 {
			p.add(sl, "max-chars and sentences are >= 1")
		} else if g.Summary.MaxChars == 0 && g.Summary.Sentences == 0 {
			p.add(sl, "a summary needs max-chars, sentences or both")
		}
		if g.Summary.MaxChars == 1 {
			p.add(sl.key("max-chars"), "must be >= 2: a cut text ends with …")
		}
	}
	if g.Template != "" {
		c.parts = parseTemplate(p, l.key("template"), g.Template, c.re, st.When.LatestUser)
	}
	return c
}

// parseTemplate splits a template into its parts, reporting a field that is
// not one, or a capture the step's regular expression does not have.
func parseTemplate(p *problems, l loc, tmpl string, re *regexp.Regexp, lu *TextCondition) []templatePart {
	var parts []templatePart
	rest := tmpl
	for rest != "" {
		open := strings.Index(rest, "{{")
		if open < 0 {
			parts = append(parts, templatePart{text: rest})
			break
		}
		if open > 0 {
			parts = append(parts, templatePart{text: rest[:open]})
		}
		end := strings.Index(rest[open:], "}}")
		if end < 0 {
			p.add(l, "%q opens a field that no }} closes", shorten(rest[open:], 40))
			return nil
		}
		name := strings.TrimSpace(rest[open+2 : open+end])
		rest = rest[open+end+2:]
		part, ok := templateField(name, re)
		if !ok {
			p.add(l, "%s", badField(name, re, lu))
			continue
		}
		parts = append(parts, part)
	}
	return parts
}

// templateField reads a field's name.
func templateField(name string, re *regexp.Regexp) (templatePart, bool) {
	group, isCapture := strings.CutPrefix(name, "capture.")
	if !isCapture {
		for _, f := range templateFields {
			if name == f {
				return templatePart{field: f}, true
			}
		}
		return templatePart{}, false
	}
	if re == nil {
		return templatePart{}, false
	}
	if n, err := strconv.Atoi(group); err == nil && strconv.Itoa(n) == group {
		return templatePart{field: "capture", capture: n}, n >= 0 && n <= re.NumSubexp()
	}
	if i := re.SubexpIndex(group); i > 0 {
		return templatePart{field: "capture", capture: i}, true
	}
	return templatePart{}, false
}

// badField says why a template field is not one.
func badField(name string, re *regexp.Regexp, lu *TextCondition) string {
	group, isCapture := strings.CutPrefix(name, "capture.")
	switch {
	case !isCapture:
		return "{{" + name + "}} is not a field: a template has {{latest_user}}, {{model}}, {{system}} and {{capture.N}}"
	case re == nil && lu != nil && lu.Op == OpMatches:
		return "{{" + name + "}}: the latest-user regular expression does not compile"
	case re == nil:
		return "{{" + name + "}}: captures come from a latest-user matches condition, and this step has none"
	}
	var names []string
	for _, n := range re.SubexpNames()[1:] {
		if n != "" {
			names = append(names, n)
		}
	}
	has := strconv.Itoa(re.NumSubexp()) + " group(s)"
	if len(names) > 0 {
		has += ", named " + strings.Join(names, ", ")
	}
	return "{{" + name + "}}: the latest-user regular expression has no group " + strconv.Quote(group) + " (it has " + has + ")"
}

// generated is what a text generator reads from the request.
type generated struct {
	user, model, system string
}

// requestText reads what a text generator uses from a request; model is
// the answer's.
func requestText(req *Request, model string) generated {
	v := newView(&req.Parsed, req.Body)
	return generated{user: v.user, model: model, system: req.Parsed.System}
}

// text derives the answer's text.
func (g *textGen) text(in generated) string {
	switch {
	case g.echo:
		return in.user
	case g.summary != nil:
		return summarize(in.user, *g.summary)
	}
	var captures []string
	if g.re != nil {
		captures = g.re.FindStringSubmatch(in.user)
	}
	var b strings.Builder
	for _, part := range g.parts {
		switch part.field {
		case "":
			b.WriteString(part.text)
		case "latest_user":
			b.WriteString(in.user)
		case "model":
			b.WriteString(in.model)
		case "system":
			b.WriteString(in.system)
		case "capture":
			if part.capture < len(captures) {
				b.WriteString(captures[part.capture])
			}
		}
	}
	return b.String()
}

// summarize extracts a Summary of text.
func summarize(text string, s Summary) string {
	out := strings.Join(strings.Fields(text), " ")
	if s.Sentences > 0 {
		out = firstSentences(out, s.Sentences)
	}
	if s.MaxChars > 0 && utf8.RuneCountInString(out) > s.MaxChars {
		r := []rune(out)[:s.MaxChars-1]
		cut := string(r)
		if sp := strings.LastIndexByte(cut, ' '); sp > 0 {
			cut = cut[:sp]
		}
		out = strings.TrimRight(cut, " ,;:") + "…"
	}
	return out
}

// firstSentences returns the first n sentences of text, whose whitespace is
// single spaces.
func firstSentences(text string, n int) string {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' {
				if n--; n == 0 {
					return text[:i+1]
				}
			}
		}
	}
	return text
}
