package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The scenario page draws conversations as lanes: a step whose only next
// step follows it in the file continues its lane, drawn as a straight arrow
// down a column; a lane takes the leftmost column free from its first step
// to its last, so that conversations that follow one another share a
// column and interleaved ones stand side by side. Other jumps are arcs
// right of the columns. A step that may lead to more than maxArcs steps (the last step of each conversation of a
// from-cassette scenario leads to the first step of every conversation)
// lists them in a line of its node instead of drawing an arc to each.
// Everything drawn and listed is bounded: the page grows with the steps,
// never with steps × targets.
const (
	// graph geometry, in SVG user units.
	margin, nodeW, nodeH = 16.0, 420.0, 76.0
	colGap, rowGap       = 36.0, 28.0
	trackW               = 18.0 // between the arcs of jumps, right of the columns

	maxArcs       = 3    // edges drawn from one step; past it, its targets are listed
	maxTracks     = 16   // arc tracks right of the columns; past it, arcs share them
	maxColumns    = 4    // lanes side by side; past it, lanes share columns
	maxGraphSteps = 300  // nodes drawn
	maxTableSteps = 1000 // rows of the steps table
	maxThenListed = 12   // targets a table row names
	maxLine       = 54   // characters of a node's line
	maxCell       = 400  // characters of a table cell, and of a node's tooltip
)

// graphView is a scenario laid out for the page.
type graphView struct {
	Name, File    string
	Index         int
	Width, Height float64
	Nodes         []node
	Edges         []edge
	Rows          []stepRow
	// Steps counts the scenario's steps, Answered those answered.
	Steps, Answered int
	// GraphCut and TableCut are set when the graph or the table shows only
	// the first maxGraphSteps or maxTableSteps steps.
	GraphCut, TableCut bool
	MaxGraph, MaxTable int
}

type node struct {
	ID                        string
	Answered                  int
	Complete                  bool
	X, Y, W, H                float64
	Title, When, Respond, Fan string
}

type edge struct {
	D     string // the SVG path
	Class string // next, jump or back
}

// stepRow is a step in the table, its text and targets cut to size.
type stepRow struct {
	ID, When, Respond string
	Complete          bool
	Answered          int
	Then              []string
	More              int // targets left out of Then
}

// lanes places steps in columns, col[k] being step k's, and returns the
// columns used. A step whose one target comes later continues its lane
// there, unless another step's lane did first.
func lanes(targets [][]int) (col []int, cols int) {
	n := len(targets)
	next, col := make([]int, n), make([]int, n)
	linked := make([]bool, n)
	for k, ts := range targets {
		next[k] = -1
		if len(ts) == 1 && ts[0] > k && !linked[ts[0]] {
			next[k], linked[ts[0]] = ts[0], true
		}
	}
	var ends []int // the last row each column holds
	for k := range n {
		if linked[k] {
			continue
		}
		last := k
		for j := next[k]; j >= 0; j = next[j] {
			last = j
		}
		c := slices.IndexFunc(ends, func(end int) bool { return end < k })
		switch {
		case c < 0 && len(ends) < maxColumns:
			c, ends = len(ends), append(ends, last)
		case c < 0:
			c = 0
			for i, end := range ends {
				if end < ends[c] {
					c = i
				}
			}
			ends[c] = max(ends[c], last)
		default:
			ends[c] = last
		}
		for j := k; j >= 0; j = next[j] {
			col[j] = c
		}
	}
	return col, max(len(ends), 1)
}

// arc is an edge drawn right of the columns, from row from to row to.
type arc struct{ from, to, track int }

// tracks gives each arc a track, reusing a track once its arc has ended,
// and returns the tracks used.
func tracks(arcs []arc) int {
	order := make([]int, len(arcs))
	for k := range order {
		order[k] = k
	}
	span := func(a arc) (int, int) { return min(a.from, a.to), max(a.from, a.to) }
	slices.SortFunc(order, func(a, b int) int {
		la, _ := span(arcs[a])
		lb, _ := span(arcs[b])
		return cmp.Compare(la, lb)
	})
	var ends []int
	for _, k := range order {
		lo, hi := span(arcs[k])
		t := slices.IndexFunc(ends, func(end int) bool { return end < lo })
		switch {
		case t < 0 && len(ends) < maxTracks:
			t, ends = len(ends), append(ends, hi)
		case t < 0:
			t = k % maxTracks
			ends[t] = max(ends[t], hi)
		default:
			ends[t] = hi
		}
		arcs[k].track = t
	}
	return len(ends)
}

func layout(n int, g Graph) graphView {
	v := graphView{Name: g.Name, File: g.File, Index: n, Steps: len(g.Steps), MaxGraph: maxGraphSteps, MaxTable: maxTableSteps}
	for _, s := range g.Steps {
		if s.Answered > 0 {
			v.Answered++
		}
	}
	for _, s := range g.Steps[:min(len(g.Steps), maxTableSteps)] {
		r := stepRow{ID: s.ID, When: shorten(s.When, maxCell), Respond: shorten(s.Respond, maxCell), Complete: s.Complete, Answered: s.Answered}
		r.Then = s.Then[:min(len(s.Then), maxThenListed)]
		r.More = len(s.Then) - len(r.Then)
		v.Rows = append(v.Rows, r)
	}
	v.TableCut = len(g.Steps) > maxTableSteps
	v.GraphCut = len(g.Steps) > maxGraphSteps
	v.draw(g.Steps[:min(len(g.Steps), maxGraphSteps)])
	return v
}

// draw lays out the nodes and edges of steps.
func (v *graphView) draw(steps []Step) {
	at := make(map[string]int, len(steps))
	for k, s := range steps {
		at[s.ID] = k
	}
	// A step's distinct targets, up to one past maxArcs: past it, none is
	// drawn.
	targets := make([][]int, len(steps))
	for k, s := range steps {
		for _, id := range s.Then {
			if j, ok := at[id]; ok && !slices.Contains(targets[k], j) {
				if targets[k] = append(targets[k], j); len(targets[k]) > maxArcs {
					break
				}
			}
		}
	}
	col, cols := lanes(targets)
	below := make([]int, len(steps)) // the next step down the same column
	lastIn := map[int]int{}
	for k := len(steps) - 1; k >= 0; k-- {
		below[k] = -1
		if j, ok := lastIn[col[k]]; ok {
			below[k] = j
		}
		lastIn[col[k]] = k
	}
	x := func(k int) float64 { return margin + float64(col[k])*(nodeW+colGap) }
	y := func(k int) float64 { return margin + float64(k)*(nodeH+rowGap) }
	var arcs []arc
	for k, s := range steps {
		nd := node{ID: s.ID, Answered: s.Answered, Complete: s.Complete, X: x(k), Y: y(k), W: nodeW, H: nodeH,
			Title:   shorten(s.ID+"\nwhen: "+orAlways(s.When)+"\nrespond: "+s.Respond, maxCell),
			When:    shorten("when "+orAlways(s.When), maxLine),
			Respond: shorten("→ "+s.Respond, maxLine),
		}
		if len(targets[k]) > maxArcs {
			nd.Fan = shorten(fmt.Sprintf("then any of %d: %s", len(s.Then), strings.Join(s.Then[:min(len(s.Then), maxThenListed)], ", ")), maxLine)
		}
		v.Nodes = append(v.Nodes, nd)
		if nd.Fan != "" {
			continue
		}
		for _, j := range targets[k] {
			// A lane goes straight down its column, as does any step to
			// the next one in the column (in an overflowing column, the
			// next one of the lane may be further down: an arc then).
			if j == below[k] {
				v.Edges = append(v.Edges, edge{D: fmt.Sprintf("M%.1f %.1f V%.1f", x(k)+nodeW/2, y(k)+nodeH, y(j)-2), Class: "next"})
			} else {
				arcs = append(arcs, arc{from: k, to: j})
			}
		}
	}
	right := margin + float64(cols)*(nodeW+colGap) - colGap
	used := tracks(arcs)
	for _, a := range arcs {
		reach := right + float64(a.track+1)*trackW
		y1, y2 := y(a.from)+nodeH/2-8, y(a.to)+nodeH/2+8
		class := "jump"
		if a.to <= a.from {
			class = "back"
		}
		// Out of the node's right side to the track and back into the
		// target's, arriving leftwards (the arrowhead follows the path).
		d := fmt.Sprintf("M%.1f %.1f H%.1f C%.1f %.1f %.1f %.1f %.1f %.1f", x(a.from)+nodeW, y1, right, reach, y1, reach, y2, right+2, y2)
		if x2 := x(a.to) + nodeW; x2 < right {
			d += fmt.Sprintf(" H%.1f", x2+2)
		}
		v.Edges = append(v.Edges, edge{D: d, Class: class})
	}
	v.Width = right + float64(used+1)*trackW + margin
	v.Height = y(len(steps)) - rowGap + margin
}

func orAlways(when string) string {
	if when == "" {
		return "always"
	}
	return when
}

// shorten cuts s to at most n characters.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
