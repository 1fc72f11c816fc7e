package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// table lays out rows in columns: the first `left` columns aligned left,
// the others right.
type table struct {
	left int
	rows [][]string
}

// add appends a row.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// rule appends a separator row.
func (t *table) rule() { t.rows = append(t.rows, nil) }

// write prints the table to w, indented by two spaces.
func (t *table) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	total := 0
	for _, wd := range widths {
		total += wd + 2
	}
	for _, r := range t.rows {
		if r == nil {
			fmt.Fprintf(w, "  %s\n", strings.Repeat("-", max(total-2, 0)))
			continue
		}
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < t.left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
			b.WriteString("  ")
		}
		fmt.Fprintf(w, "  %s\n", strings.TrimRight(b.String(), " "))
	}
}

// displayName is a library's column title.
func displayName(lib string) string {
	switch lib {
	case libCurator:
		return "Curator"
	case libZK:
		return "go-zk"
	}
	return lib
}

// num formats a figure with a precision that suits its size.
func num(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
