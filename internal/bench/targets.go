package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// stat is the median and spread of a figure over the rounds.
type stat struct {
	Med, Min, Max float64
	N             int
}

// statOf returns the median, min and max of vs, or nil if there are none.
func statOf(vs []float64) *stat {
	if len(vs) == 0 {
		return nil
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &stat{Med: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// String formats the median, and the spread when there is more than one
// value: "2838 [2700..2900]".
func (s *stat) String() string {
	if s.N < 2 {
		return num(s.Med)
	}
	return fmt.Sprintf("%s [%s..%s]", num(s.Med), num(s.Min), num(s.Max))
}

// ratioString formats the stat of ratios: "1.25x [1.10..1.30]".
func (s *stat) ratioString() string {
	if s.N < 2 {
		return fmt.Sprintf("%.2fx", s.Med)
	}
	return fmt.Sprintf("%.2fx [%.2f..%.2f]", s.Med, s.Min, s.Max)
}

// values returns the values of a by-round map, in round order.
func values(m map[int]float64) []float64 {
	rounds := make([]int, 0, len(m))
	for r := range m {
		rounds = append(rounds, r)
	}
	slices.Sort(rounds)
	out := make([]float64, len(rounds))
	for i, r := range rounds {
		out[i] = m[r]
	}
	return out
}

// ratios returns a/b for every round both have.
func ratios(a, b map[int]float64) []float64 {
	var out []float64
	for _, r := range slices.Sorted(maps.Keys(a)) {
		if d, ok := b[r]; ok && d != 0 {
			out = append(out, a[r]/d)
		}
	}
	return out
}

// ratioCell formats the stat of a/b round by round, or "".
func ratioCell(a, b map[int]float64) string {
	if s := statOf(ratios(a, b)); s != nil {
		return s.ratioString()
	}
	return ""
}

// pick selects the results of one workload of one library: size is the
// handoff's W, the failover's P, the sessions C of a loop workload or the
// goroutines G of many locks, 0 for any; n is many locks' N, 0 for any;
// mode is the failover's way of stepping down.
type pick struct {
	workload string
	size     int
	lib      string
	mode     string
	n        int
}

// matches reports whether r is one of p's results.
func (p pick) matches(r *result) bool {
	if r.Workload != p.workload || r.Library != p.lib || r.Mode != p.mode || (p.n != 0 && r.N != p.n) {
		return false
	}
	switch {
	case p.size == 0:
		return true
	case r.Workload == wHandoff || r.Workload == wFailover:
		return r.N == p.size
	case r.Workload == wManyLocks:
		return max(1, r.G) == p.size
	}
	return r.Sessions == p.size
}

// rateOf is a run's per-second figure.
func rateOf(f *figures) *float64 { return ptr(f.PerSecond) }

// handoffOf is a run's ms per handoff.
func handoffOf(f *figures) *float64 { return f.MsPerHandoff }

// p50Of is a run's median time per operation (a failover's).
func p50Of(f *figures) *float64 { return f.P50Ms }

// releaseRateOf is a many-locks run's releases per second.
func releaseRateOf(f *figures) *float64 { return f.ReleasePerSecond }

// heapOf is a many-locks run's heap bytes per hold.
func heapOf(f *figures) *float64 { return f.HeapPerHold }

// tasksOf is a many-locks run's goroutines (Java: threads) per hold.
func tasksOf(f *figures) *float64 { return f.TasksPerHold }

// valueOf is the figure targets compare for workload w.
func valueOf(w string) func(*figures) *float64 {
	switch w {
	case wHandoff:
		return handoffOf
	case wFailover:
		return p50Of
	}
	return rateOf
}

// series returns the value of p's finished runs in regime rg, by round.
func (rep *report) series(rg string, p pick, value func(*figures) *float64) map[int]float64 {
	out := make(map[int]float64)
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Regime != rg || r.Round < 0 || r.Figures == nil || !p.matches(r) {
			continue
		}
		if v := value(r.Figures); v != nil {
			out[r.Round] = *v
		}
	}
	return out
}

// target is one of BENCHMARKS.md's targets (or an issue's): a ratio of
// two figures of a regime, or one figure of zklock's, and its bound.
type target struct {
	regime   string
	what     string
	num, den pick
	bound    float64
	atMost   bool                    // the ratio must be at most bound (times), else at least (rates)
	value    func(*figures) *float64 // the figure compared; nil: valueOf(num.workload)
	absolute string                  // if not "": num's own figure is compared with bound, in this unit; den is unused
}

// ratioTarget is a target on the ratio num / den.
func ratioTarget(rg, what string, num, den pick, bound float64, atMost bool) target {
	return target{regime: rg, what: what, num: num, den: den, bound: bound, atMost: atMost}
}

// targets are BENCHMARKS.md's targets.
func targets() []target {
	z := func(w string, size int) pick { return pick{workload: w, size: size, lib: libZklock} }
	g := func(w string, size int) pick { return pick{workload: w, size: size, lib: libZK} }
	c := func(w string, size int) pick { return pick{workload: w, size: size, lib: libCurator} }
	lo, lat := regLoopback, regLatency
	return append([]target{
		ratioTarget(lo, "uncontended >= 0.95 x floor", z(wUncontended, 0), g(wFloor, 0), 0.95, false),
		ratioTarget(lo, "uncontended >= 1.4 x zk.Lock", z(wUncontended, 0), g(wUncontended, 0), 1.4, false),
		ratioTarget(lo, "uncontended >= 1.7 x Curator", z(wUncontended, 0), c(wUncontended, 0), 1.7, false),
		ratioTarget(lo, "contended 16 >= 1.1 x zk.Lock", z(wContended, 16), g(wContended, 16), 1.1, false),
		ratioTarget(lo, "contended 16 >= 1.4 x Curator", z(wContended, 16), c(wContended, 16), 1.4, false),
		ratioTarget(lo, "handoff W=1 time <= zk.Lock's", z(wHandoff, 1), g(wHandoff, 1), 1, true),
		ratioTarget(lo, "handoff W=10 time <= zk.Lock's", z(wHandoff, 10), g(wHandoff, 10), 1, true),
		ratioTarget(lo, "handoff W=2000 <= 1.2 x zklock's W=10", z(wHandoff, 2000), z(wHandoff, 10), 1.2, true),
		ratioTarget(lo, "handoff W=2000 <= 0.8 x zk.Lock's", z(wHandoff, 2000), g(wHandoff, 2000), 0.8, true),
		ratioTarget(lo, "semaphore >= 1.5 x Curator", z(wSemaphore, 0), c(wSemaphore, 0), 1.5, false),
		ratioTarget(lo, "rwread >= 1.5 x Curator", z(wRWRead, 0), c(wRWRead, 0), 1.5, false),
		ratioTarget(lat, "uncontended >= 0.95 x floor (same path)", z(wUncontended, 0), g(wFloor, 0), 0.95, false),
		ratioTarget(lat, "contended 16 >= 1.6 x zk.Lock", z(wContended, 16), g(wContended, 16), 1.6, false),
		ratioTarget(lat, "handoff W=1 time <= 0.6 x zk.Lock's", z(wHandoff, 1), g(wHandoff, 1), 0.6, true),
		ratioTarget(lat, "semaphore >= 1.5 x Curator", z(wSemaphore, 0), c(wSemaphore, 0), 1.5, false),
	}, failoverTargets()...)
}

// failoverTargets: a failover at most half of LeaderLatch's time (p50),
// for each P, way of stepping down and regime.
func failoverTargets() []target {
	var out []target
	for _, rg := range []string{regLoopback, regLatency} {
		for _, p := range []int{3, 100} {
			for _, m := range stepModes() {
				z := pick{workload: wFailover, size: p, lib: libZklock, mode: m}
				c := pick{workload: wFailover, size: p, lib: libCurator, mode: m}
				what := fmt.Sprintf("failover %d %s time <= 0.5 x LeaderLatch's", p, m)
				out = append(out, ratioTarget(rg, what, z, c, 0.5, true))
			}
		}
	}
	return out
}

// manyTargets are issue 27's targets for many locks, in each regime and
// for each G that ran, at the largest N that ran there: acquire-all and
// release-all at least 1.5x Curator's rate and no slower than zk.Lock's;
// at most 2 KiB of heap and no goroutine per hold.
func (rep *report) manyTargets() []target {
	var out []target
	for _, rg := range rep.regimeNames() {
		for _, gn := range rep.manyLargest(rg) {
			g, n := gn[0], gn[1]
			at := func(lib string) pick { return pick{workload: wManyLocks, size: g, n: n, lib: lib} }
			z, c, k := at(libZklock), at(libCurator), at(libZK)
			name := fmt.Sprintf("manylocks %d G=%d", n, g)
			out = append(out,
				ratioTarget(rg, name+": acquire-all >= 1.5 x Curator", z, c, 1.5, false),
				ratioTarget(rg, name+": acquire-all >= zk.Lock", z, k, 1, false),
				target{regime: rg, what: name + ": release-all >= 1.5 x Curator", num: z, den: c, bound: 1.5, value: releaseRateOf},
				target{regime: rg, what: name + ": release-all >= zk.Lock", num: z, den: k, bound: 1, value: releaseRateOf},
				target{regime: rg, what: name + ": heap/hold <= 2 KiB", num: z, bound: 2048, atMost: true, value: heapOf, absolute: "B"},
				// A stray goroutine of the process's own makes 1/N; a
				// goroutine per hold makes 1.
				target{regime: rg, what: name + ": goroutines/hold = 0 (< 0.01)", num: z, bound: 0.01, atMost: true, value: tasksOf, absolute: "goroutines"},
			)
		}
	}
	return out
}

// manyLargest returns, for each G of the many-locks runs of regime rg in
// the order they ran, {G, the largest N that ran with it}.
func (rep *report) manyLargest(rg string) [][2]int {
	var out [][2]int
	for _, r := range rep.Results {
		if r.Regime != rg || r.Round < 0 || r.Workload != wManyLocks {
			continue
		}
		g := max(1, r.G)
		i := slices.IndexFunc(out, func(gn [2]int) bool { return gn[0] == g })
		if i < 0 {
			out = append(out, [2]int{g, r.N})
		} else {
			out[i][1] = max(out[i][1], r.N)
		}
	}
	return out
}

// targetRow is a target evaluated on this run: the median and spread of
// its ratio over the rounds, and whether the median meets the bound.
type targetRow struct {
	Regime string   `json:"regime"`
	Target string   `json:"target"`
	Bound  float64  `json:"bound"`
	AtMost bool     `json:"at_most"`
	Median *float64 `json:"median"` // null: not measured
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
	Rounds int      `json:"rounds"`
	Met    *bool    `json:"met"`
	// Unit is an absolute target's: its median, min and max are zklock's
	// figure itself, not a ratio.
	Unit string `json:"unit,omitempty"`
}

// evalTargets evaluates every target of the regimes that ran.
func (rep *report) evalTargets() []targetRow {
	var out []targetRow
	ran := rep.regimeNames()
	for _, tg := range append(targets(), rep.manyTargets()...) {
		if !slices.Contains(ran, tg.regime) {
			continue
		}
		value := tg.value
		if value == nil {
			value = valueOf(tg.num.workload)
		}
		row := targetRow{Regime: tg.regime, Target: tg.what, Bound: tg.bound, AtMost: tg.atMost, Unit: tg.absolute}
		var measured []float64
		if tg.absolute != "" {
			measured = values(rep.series(tg.regime, tg.num, value))
		} else {
			measured = ratios(rep.series(tg.regime, tg.num, value), rep.series(tg.regime, tg.den, value))
		}
		if s := statOf(measured); s != nil {
			met := s.Med >= tg.bound
			if tg.atMost {
				met = s.Med <= tg.bound
			}
			row.Median, row.Min, row.Max, row.Rounds, row.Met = &s.Med, &s.Min, &s.Max, s.N, &met
		}
		out = append(out, row)
	}
	return out
}

// printTargets writes whether this run meets each target of regime rg.
func (rep *report) printTargets(w io.Writer, rg string) {
	note := ""
	if !strings.HasPrefix(rep.Storage, "tmpfs") {
		note = " They are set for tmpfs; this run is on disk."
	}
	fmt.Fprintf(w, "Targets (BENCHMARKS.md; manylocks: issue 27, at the largest N of each G), %s: zklock's ratio (or,\n", rg)
	fmt.Fprintf(w, "with a unit, its own figure), median [min..max] of the rounds; met if the median is.%s\n", note)
	t := &table{left: 1}
	t.add("target", "measured", "met?")
	t.rule()
	n := 0
	for _, row := range rep.Targets {
		if row.Regime != rg {
			continue
		}
		n++
		if row.Median == nil {
			t.add(row.Target, "n/a", "")
			continue
		}
		s := stat{Med: *row.Median, Min: *row.Min, Max: *row.Max, N: row.Rounds}
		measured := s.ratioString()
		if row.Unit != "" {
			measured = s.String() + " " + row.Unit
		}
		t.add(row.Target, measured, map[bool]string{true: "met", false: "MISSED"}[*row.Met])
	}
	if n > 0 {
		t.write(w)
	}
	fmt.Fprintln(w)
}
