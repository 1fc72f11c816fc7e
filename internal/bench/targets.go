package main

import (
	"fmt"
	"io"
	"strings"
)

// target is one of BENCHMARKS.md's targets: a ratio and its bound.
type target struct {
	what   string
	ratio  *float64
	bound  float64
	atMost bool // the ratio must be at most bound (times), else at least (rates)
}

// rate returns lib's per-second figure for the first workload w, or nil.
func (rep *report) rate(w, lib string) *float64 {
	for _, r := range rep.Results {
		if r.Workload == w && r.Library == lib && r.Figures != nil {
			return ptr(r.Figures.PerSecond)
		}
	}
	return nil
}

// div returns a/b, or nil.
func div(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	return ptr(*a / *b)
}

// targets evaluates BENCHMARKS.md's targets on this run.
func (rep *report) targets() []target {
	z := func(w string) *float64 { return rep.rate(w, libZklock) }
	lo, hi := rep.handoffSizes()
	hw, lw := fmt.Sprintf("handoff W=%d", hi), fmt.Sprintf("W=%d", lo)
	if hi == 0 {
		hw, lw = "handoff W=2000", "W=10"
	}
	return []target{
		{"uncontended >= 0.8 x floor", div(z(wUncontended), rep.rate(wFloor, libZK)), 0.8, false},
		{"uncontended >= 1.3 x zk.Lock", div(z(wUncontended), rep.rate(wUncontended, libZK)), 1.3, false},
		{"uncontended >= 2 x Curator", div(z(wUncontended), rep.rate(wUncontended, libCurator)), 2, false},
		{"contended >= 2 x Curator", div(z(wContended), rep.rate(wContended, libCurator)), 2, false},
		{"contended >= 1.2 x zk.Lock", div(z(wContended), rep.rate(wContended, libZK)), 1.2, false},
		{fmt.Sprintf("%s <= 1.3 x zklock's %s", hw, lw),
			div(rep.handoffMs(libZklock, hi), rep.handoffMs(libZklock, lo)), 1.3, true},
		{hw + " <= 0.5 x Curator's", div(rep.handoffMs(libZklock, hi), rep.handoffMs(libCurator, hi)), 0.5, true},
		{"semaphore >= 1.5 x Curator", div(z(wSemaphore), rep.rate(wSemaphore, libCurator)), 1.5, false},
		{"rwread >= 1.5 x Curator", div(z(wRWRead), rep.rate(wRWRead, libCurator)), 1.5, false},
	}
}

// printTargets writes whether this run meets each target.
func (rep *report) printTargets(w io.Writer) {
	note := ""
	if !strings.HasPrefix(rep.Storage, "tmpfs") {
		note = " They are set for tmpfs; this run is on disk."
	}
	fmt.Fprintf(w, "Targets (BENCHMARKS.md), zklock's ratio in this run.%s\n", note)
	t := &table{left: 1}
	for _, tg := range rep.targets() {
		if tg.ratio == nil {
			t.add(tg.what, "n/a", "")
			continue
		}
		met := *tg.ratio >= tg.bound
		if tg.atMost {
			met = *tg.ratio <= tg.bound
		}
		t.add(tg.what, fmt.Sprintf("%.2fx", *tg.ratio), map[bool]string{true: "met", false: "MISSED"}[met])
	}
	t.write(w)
	fmt.Fprintln(w)
}
