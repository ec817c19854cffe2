/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package eventtree

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// RenderOptions are what a drawing depends on besides the tree: the same
// tree and options always draw the same text.
type RenderOptions struct {
	// Namespace is named in the title.
	Namespace string
	// Start and End bound the time axis; End is usually now.
	Start, End time.Time
	// Width is the number of columns to fill.
	Width int
	// Color highlights Warnings and dims deleted objects with ANSI escapes.
	Color bool
}

// MinWidth is the narrowest drawing: narrower widths are widened to it.
const MinWidth = 60

// The glyphs of the time axis, by precedence in a cell: a Warning's mark
// hides a Normal one, and any mark hides a span.
const (
	glyphEmpty       = ' '
	glyphSpan        = '─'
	glyphWarningSpan = '━'
	glyphMark        = '●'
	glyphWarningMark = '▲'
)

var glyphRank = map[rune]int{glyphEmpty: 0, glyphSpan: 1, glyphWarningSpan: 2, glyphMark: 3, glyphWarningMark: 4}

const (
	ansiReset   = "\x1b[0m"
	ansiWarning = "\x1b[1;31m"
	ansiDeleted = "\x1b[2m"
	ansiNormal  = "\x1b[32m"
)

// style wraps text in an ANSI escape when color is on.
type style bool

func (s style) apply(code, text string) string {
	if !s || code == "" || text == "" {
		return text
	}
	return code + text + ansiReset
}

// Render draws t: a title, the axis's ruler, for each object a row with
// its place in the tree and its occurrences on the axis followed by a line
// of its reasons with their occurrences (Warnings first), and a legend.
func Render(w io.Writer, t *Tree, o RenderOptions) error {
	width := max(o.Width, MinWidth)
	paint := style(o.Color)
	rows := treeRows(t)

	labelWidth := 0
	for _, r := range rows {
		labelWidth = max(labelWidth, utf8.RuneCountInString(r.plainLabel())+1)
	}
	labelWidth = min(labelWidth, width*2/5)
	axisWidth := width - labelWidth - 2

	var b strings.Builder
	for _, line := range wrapWords(strings.Fields(title(t, o)), width) {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	ticks := tickColumns(axisWidth)
	b.WriteString(strings.Repeat(" ", labelWidth+1))
	b.WriteString(tickLabels(ticks, axisWidth, o.Start, o.End))
	b.WriteByte('\n')
	b.WriteString(ruler(labelWidth, axisWidth, ticks, '┌', '┬', '┐'))
	for _, r := range rows {
		b.WriteString(r.label(labelWidth, paint))
		b.WriteString("│")
		b.WriteString(axisRow(r.node.Occurrences, axisWidth, o.Start, o.End, paint))
		b.WriteString("│\n")
		for _, line := range reasonLines(r.node.Occurrences, r.detailPrefix, width, paint) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	b.WriteString(ruler(labelWidth, axisWidth, ticks, '└', '┴', '┘'))
	for _, line := range wrapWords(legend(o.End.Sub(o.Start)/time.Duration(axisWidth)), width) {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if t.Undecodable > 0 {
		fmt.Fprintf(&b, "%d events had an unreadable ancestry annotation and are drawn under %s\n", t.Undecodable, t.Root.Ref)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// title sums up the tree: its objects, events and occurrences, and the window.
func title(t *Tree, o RenderOptions) string {
	var objects, deleted, events int
	var occurrences int64
	for _, n := range t.Nodes() {
		objects++
		if n.Liveness == Deleted {
			deleted++
		}
		events += len(n.Occurrences)
		for _, oc := range n.Occurrences {
			occurrences += int64(oc.Count)
		}
	}
	where := ""
	if o.Namespace != "" {
		where = " in " + o.Namespace
	}
	gone := ""
	if deleted > 0 {
		gone = fmt.Sprintf(" (%d deleted)", deleted)
	}
	const layout = "2006-01-02 15:04"
	return fmt.Sprintf("%s%s: %d objects%s, %d events, %d occurrences, %s to %s UTC",
		t.Root.Ref, where, objects, gone, events, occurrences,
		o.Start.UTC().Format(layout), o.End.UTC().Format(layout))
}

// row is one object's place in the drawing.
type row struct {
	node *Node
	// branch is the tree's lines before the object's name ("│   ├── ").
	branch string
	// detailPrefix continues the tree's lines on the object's reasons line.
	detailPrefix string
}

func treeRows(t *Tree) []row {
	var rows []row
	var walk func(n *Node, prefix, branch string)
	walk = func(n *Node, prefix, branch string) {
		detail := prefix
		if len(n.Children) > 0 {
			detail += "│ "
		} else {
			detail += "  "
		}
		rows = append(rows, row{node: n, branch: branch, detailPrefix: detail})
		for i, c := range n.Children {
			if i == len(n.Children)-1 {
				walk(c, prefix+"    ", prefix+"└── ")
			} else {
				walk(c, prefix+"│   ", prefix+"├── ")
			}
		}
	}
	walk(t.Root, "", "")
	return rows
}

// Deleted objects are marked "(deleted)", or "✗" when that does not fit.
const (
	deletedSuffix      = " (deleted)"
	deletedShortSuffix = " ✗"
)

func (r row) suffix() string {
	if r.node.Liveness == Deleted {
		return deletedSuffix
	}
	return ""
}

func (r row) plainLabel() string { return r.branch + r.node.Ref.String() + r.suffix() }

// label is the row's label padded to width. When it does not fit, a
// deleted object's mark shortens to "✗", then the object's name loses its
// head ("…8f7-aaaaa"): the tail of a generated name tells pods apart.
func (r row) label(width int, paint style) string {
	name, suffix := r.node.Ref.String(), r.suffix()
	room := func() int {
		return width - 1 - utf8.RuneCountInString(r.branch) - utf8.RuneCountInString(suffix)
	}
	if utf8.RuneCountInString(name) > room() && suffix != "" {
		suffix = deletedShortSuffix
	}
	if n := utf8.RuneCountInString(name); n > room() {
		if room() < 2 {
			name = ""
		} else {
			name = "…" + string([]rune(name)[n-room()+1:])
		}
	}
	pad := width - utf8.RuneCountInString(r.branch+name+suffix)
	text := name + suffix
	if r.node.Liveness == Deleted {
		text = paint.apply(ansiDeleted, text)
	}
	return r.branch + text + strings.Repeat(" ", max(pad, 0))
}

// column is the axis cell of at, clamped to the axis.
func column(at, start, end time.Time, cells int) int {
	span := end.Sub(start)
	if span <= 0 {
		return cells - 1
	}
	c := int(int64(at.Sub(start)) * int64(cells) / int64(span))
	return min(max(c, 0), cells-1)
}

// axisRow draws occurrences on cells: a mark at a single occurrence, a
// span from first to last observation with a mark at each end that falls
// in the window.
func axisRow(occurrences []Occurrence, cells int, start, end time.Time, paint style) string {
	axis := make([]rune, cells)
	for i := range axis {
		axis[i] = glyphEmpty
	}
	put := func(i int, g rune) {
		if glyphRank[g] > glyphRank[axis[i]] {
			axis[i] = g
		}
	}
	for _, o := range occurrences {
		if o.Last.Before(start) || o.First.After(end) {
			continue
		}
		mark, span := glyphMark, glyphSpan
		if o.Type == "Warning" {
			mark, span = glyphWarningMark, glyphWarningSpan
		}
		first, last := column(o.First, start, end, cells), column(o.Last, start, end, cells)
		for i := first + 1; i < last; i++ {
			put(i, span)
		}
		if !o.First.Before(start) {
			put(first, mark)
		} else {
			put(first, span)
		}
		if !o.Last.After(end) {
			put(last, mark)
		} else {
			put(last, span)
		}
	}
	if !paint {
		return string(axis)
	}
	// One escape for each run of cells of the same color.
	var b strings.Builder
	for i := 0; i < len(axis); {
		code := glyphColor(axis[i])
		j := i + 1
		for j < len(axis) && glyphColor(axis[j]) == code {
			j++
		}
		b.WriteString(paint.apply(code, string(axis[i:j])))
		i = j
	}
	return b.String()
}

func glyphColor(g rune) string {
	switch g {
	case glyphWarningMark, glyphWarningSpan:
		return ansiWarning
	case glyphMark, glyphSpan:
		return ansiNormal
	}
	return ""
}

// tickColumns are the axis cells labeled in the header: both ends and
// three between.
func tickColumns(cells int) []int {
	return []int{0, cells / 4, cells / 2, cells * 3 / 4, cells - 1}
}

// tickLabels writes each tick's time back from end ("-3d12h", "now")
// over its cell: the first left-aligned, the last right-aligned, the others
// centered; a label that would touch its left neighbor is left out.
func tickLabels(ticks []int, cells int, start, end time.Time) string {
	line := []rune(strings.Repeat(" ", cells))
	next := 0
	for i, c := range ticks {
		at := start.Add(time.Duration(int64(end.Sub(start)) * int64(c) / int64(max(cells-1, 1))))
		text := []rune("-" + shortDuration(end.Sub(at)))
		if i == len(ticks)-1 {
			text = []rune("now")
		}
		from := c - len(text)/2
		switch i {
		case 0:
			from = 0
		case len(ticks) - 1:
			from = cells - len(text)
		}
		if from < next || from+len(text) > cells {
			continue
		}
		copy(line[from:], text)
		next = from + len(text) + 1
	}
	return strings.TrimRight(string(line), " ")
}

// ruler is the axis's top or bottom edge, with a tick mark at each tick.
func ruler(labelWidth, cells int, ticks []int, left, tick, right rune) string {
	line := []rune(strings.Repeat("─", cells))
	for _, c := range ticks[1 : len(ticks)-1] {
		line[c] = tick
	}
	return strings.Repeat(" ", labelWidth) + string(left) + string(line) + string(right) + "\n"
}

// shortDuration writes d in its two largest units: "7d", "5d6h", "1h40m",
// "45s".
func shortDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	units := []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var parts []string
	for _, u := range units {
		if len(parts) == 2 {
			break
		}
		if n := d / u.size; n > 0 || len(parts) > 0 {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
			} else {
				parts = append(parts, "")
			}
			d -= n * u.size
		}
	}
	if len(parts) == 0 {
		return "<1s"
	}
	return strings.Join(parts, "")
}

// reasonCount is the occurrences of one type and reason.
type reasonCount struct {
	typ, reason string
	count       int64
}

// reasonLines lists the object's reasons, Warnings first, each group most
// occurrences first ("Warning BackOff×42 Failed×3 · Normal Pulled×3"),
// wrapped to width under prefix.
func reasonLines(occurrences []Occurrence, prefix string, width int, paint style) []string {
	if len(occurrences) == 0 {
		return nil
	}
	sums := map[[2]string]int64{}
	for _, o := range occurrences {
		sums[[2]string{o.Type, o.Reason}] += int64(o.Count)
	}
	counts := make([]reasonCount, 0, len(sums))
	for k, n := range sums {
		counts = append(counts, reasonCount{typ: k[0], reason: k[1], count: n})
	}
	sort.Slice(counts, func(i, j int) bool {
		a, b := counts[i], counts[j]
		if (a.typ == "Warning") != (b.typ == "Warning") {
			return a.typ == "Warning"
		}
		if a.typ != b.typ {
			return a.typ < b.typ
		}
		if a.count != b.count {
			return a.count > b.count
		}
		return a.reason < b.reason
	})

	var lines []string
	line, used := prefix, utf8.RuneCountInString(prefix)
	add := func(plain, styled string, breakable bool) {
		n := utf8.RuneCountInString(plain)
		if breakable && used+1+n > width && used > utf8.RuneCountInString(prefix) {
			lines = append(lines, line)
			line, used = prefix+"  ", utf8.RuneCountInString(prefix)+2
		} else if used > utf8.RuneCountInString(prefix) {
			line += " "
			used++
		}
		line += styled
		used += n
	}
	typ := ""
	for _, c := range counts {
		if c.typ != typ {
			if typ != "" {
				add("·", "·", false)
			}
			typ = c.typ
			code := ""
			if typ == "Warning" {
				code = ansiWarning
			}
			add(typ, paint.apply(code, typ), true)
		}
		item := c.reason
		if c.count > 1 {
			item += fmt.Sprintf("×%d", c.count)
		}
		if c.typ == "Warning" {
			add(item, paint.apply(ansiWarning, item), true)
		} else {
			add(item, item, true)
		}
	}
	return append(lines, line)
}

// legend explains the glyphs and the time a column stands for.
func legend(column time.Duration) []string {
	return []string{
		fmt.Sprintf("%c event,", glyphMark),
		fmt.Sprintf("%c%c%c repeated or series (first to last),", glyphMark, glyphSpan, glyphMark),
		fmt.Sprintf("%c %c%c%c Warning,", glyphWarningMark, glyphWarningMark, glyphWarningSpan, glyphWarningMark),
		strings.TrimSpace(deletedShortSuffix) + " deleted;",
		"a column is " + shortDuration(column),
	}
}

// wrapWords joins words with spaces into lines of at most width runes
// (a longer word stands alone).
func wrapWords(words []string, width int) []string {
	var lines []string
	line := ""
	for _, w := range words {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
