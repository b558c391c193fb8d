package review

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
)

// Format is how Write prints a review.
type Format string

// The formats: plain text for a terminal, Markdown for a pull-request
// comment (a table, then one collapsed <details> per conversation), JSON
// for tools.
const (
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
	FormatJSON     Format = "json"
)

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatText, FormatMarkdown, FormatJSON:
		return f, nil
	}
	return "", fmt.Errorf("%q is not text, markdown or json", s)
}

// Write prints the review in the format: the summary, then each
// conversation that differs with each difference by path, written as it
// is read (Each), so the output never waits for the whole. oldName and
// newName name the two sides.
func (r *Review) Write(w io.Writer, f Format, oldName, newName string) error {
	bw := bufio.NewWriter(w)
	var err error
	switch f {
	case FormatMarkdown:
		err = r.writeMarkdown(bw, oldName, newName)
	case FormatJSON:
		err = r.writeJSON(bw, oldName, newName)
	default:
		err = r.writeText(bw, oldName, newName)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// counts prints counts as "1 wording, 2 behaviour", leaving out zeros
// except when all are.
func counts(n Counts, withIdentical bool) string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{{n.Identical, "identical"}, {n.Wording, "wording only"}, {n.Request, "request side"}, {n.Behaviour, "behaviour"},
		{n.Added, "added"}, {n.Removed, "removed"}} {
		if c.n > 0 && (withIdentical || c.name != "identical") {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// verdict is the summary in one sentence.
func (s Summary) verdict() string {
	if s.Identical() {
		return fmt.Sprintf("identical: %s, %s", plural(s.Conversations.Total(), "conversation"), plural(s.Turns.Total(), "turn"))
	}
	n, verb := s.Conversations.Total()-s.Conversations.Identical, "differ"
	if n == 1 {
		verb = "differs"
	}
	return fmt.Sprintf("%d of %s %s", n, plural(s.Conversations.Total(), "conversation"), verb)
}

// plural is "1 turn", "2 turns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (r *Review) writeText(w *bufio.Writer, oldName, newName string) error {
	s := r.summary
	fmt.Fprintf(w, "llmproxy diff %s %s: %s\n", strconv.Quote(oldName), strconv.Quote(newName), s.verdict())
	fmt.Fprintf(w, "conversations: %s\n", counts(s.Conversations, true))
	fmt.Fprintf(w, "turns: %s\n", counts(s.Turns, true))
	fmt.Fprintf(w, "differences: %s\n", counts(s.Differences.counts(), false))
	return r.Each(func(c Conversation) error {
		fmt.Fprintf(w, "\n%s\n", heading(c))
		writeTurns(w, c, "  ")
		return nil
	})
}

// heading names a conversation and its class.
func heading(c Conversation) string {
	return fmt.Sprintf("conversation %s %s: %s", numbers(c.Old, c.New), c.Class, strconv.Quote(c.Title))
}

// numbers is "old 2 → new 3", "-" for an absent side.
func numbers(o, n int) string {
	side := func(k int) string {
		if k == 0 {
			return "-"
		}
		return strconv.Itoa(k)
	}
	return fmt.Sprintf("(old %s → new %s)", side(o), side(n))
}

// writeTurns prints a conversation's turns and their differences, one a
// line, each value quoted so that no recorded text breaks the layout.
func writeTurns(w *bufio.Writer, c Conversation, indent string) {
	for _, t := range c.Turns {
		fmt.Fprintf(w, "%sturn %d %s %s\n", indent, t.Turn, ids(t.OldID, t.NewID), t.Class)
		for _, d := range t.Differences {
			fmt.Fprintf(w, "%s  %-9s %s %s: %s → %s\n", indent, d.Class, d.What, d.Path, quote(d.Old), quote(d.New))
		}
	}
}

// ids is "(interaction 3 → 4)", "-" for an absent side.
func ids(o, n uint64) string {
	side := func(id uint64) string {
		if id == 0 {
			return "-"
		}
		return strconv.FormatUint(id, 10)
	}
	return fmt.Sprintf("(interaction %s → %s)", side(o), side(n))
}

// quote shows a value: quoted, or "-" when absent.
func quote(s string) string {
	if s == "" {
		return "-"
	}
	return strconv.Quote(s)
}

func (r *Review) writeMarkdown(w *bufio.Writer, oldName, newName string) error {
	s := r.summary
	fmt.Fprintf(w, "### llmproxy diff: %s → %s\n\n", mdCode(oldName), mdCode(newName))
	fmt.Fprintf(w, "**%s**", html.EscapeString(s.verdict()))
	if !s.Identical() {
		fmt.Fprintf(w, " — differences: %s", counts(s.Differences.counts(), false))
	}
	fmt.Fprint(w, "\n\n| | conversations | turns | differences |\n|---|---:|---:|---:|\n")
	for _, row := range []struct {
		name    string
		c, t, d int
	}{
		{"identical", s.Conversations.Identical, s.Turns.Identical, -1},
		{"wording only", s.Conversations.Wording, s.Turns.Wording, s.Differences.Wording},
		{"request side", s.Conversations.Request, s.Turns.Request, s.Differences.Request},
		{"behaviour", s.Conversations.Behaviour, s.Turns.Behaviour, s.Differences.Behaviour},
		{"added", s.Conversations.Added, s.Turns.Added, s.Differences.Added},
		{"removed", s.Conversations.Removed, s.Turns.Removed, s.Differences.Removed},
	} {
		d := ""
		if row.d >= 0 {
			d = strconv.Itoa(row.d)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s |\n", row.name, row.c, row.t, d)
	}
	return r.Each(func(c Conversation) error {
		var body strings.Builder
		bw := bufio.NewWriter(&body)
		writeTurns(bw, c, "")
		bw.Flush()
		fence := strings.Repeat("`", max(3, longestRun(body.String(), '`')+1))
		fmt.Fprintf(w, "\n<details><summary>%s</summary>\n\n%stext\n%s%s\n\n</details>\n",
			html.EscapeString(heading(c)), fence, body.String(), fence)
		return nil
	})
}

// mdCode is a name as Markdown inline code.
func mdCode(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	return fence + " " + s + " " + fence
}

// longestRun is the longest run of ch in s.
func longestRun(s string, ch byte) int {
	best, run := 0, 0
	for k := 0; k < len(s); k++ {
		if s[k] == ch {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// jsonReport is the head of the JSON form; conversations follow it.
type jsonReport struct {
	Old     string  `json:"old"`
	New     string  `json:"new"`
	Summary Summary `json:"summary"`
}

func (r *Review) writeJSON(w *bufio.Writer, oldName, newName string) error {
	head, err := json.MarshalIndent(jsonReport{Old: oldName, New: newName, Summary: r.summary}, "", "  ")
	if err != nil {
		return err
	}
	w.Write(head[:len(head)-2]) // without the closing "\n}"
	w.WriteString(",\n  \"conversations\": [")
	n := 0
	err = r.Each(func(c Conversation) error {
		b, err := json.MarshalIndent(c, "    ", "  ")
		if err != nil {
			return err
		}
		if n > 0 {
			w.WriteByte(',')
		}
		n++
		w.WriteString("\n    ")
		w.Write(b)
		return nil
	})
	if err != nil {
		return err
	}
	if n > 0 {
		w.WriteString("\n  ")
	}
	w.WriteString("]\n}\n")
	return nil
}
