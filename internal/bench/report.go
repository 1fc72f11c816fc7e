package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// metric is one row of a workload in the main table.
type metric struct {
	name   string
	value  func(f *figures) *float64 // a number, for ratios
	text   func(f *figures) string   // or a text
	floor  bool                      // also compare zklock with the floor
	plain  bool                      // a number shown without ratios
	approx func(f *figures) bool     // marks a library's approximate figure with "~"
}

// metrics returns the rows shown for workload w.
func metrics(w string) []metric {
	rate := func(unit string) metric {
		return metric{name: unit, value: func(f *figures) *float64 { return ptr(f.PerSecond) }}
	}
	p50 := metric{name: "p50 ms/pair", value: func(f *figures) *float64 { return f.P50Ms }}
	p99 := metric{name: "p99 ms/pair", value: func(f *figures) *float64 { return f.P99Ms }}
	spread := metric{name: "min..max per session", text: func(f *figures) string {
		if f.MinPerSession == nil {
			return ""
		}
		return fmt.Sprintf("%d..%d", *f.MinPerSession, *f.MaxPerSession)
	}}
	viol := metric{name: "violations", text: func(f *figures) string {
		if f.Violations == nil {
			return ""
		}
		return fmt.Sprint(*f.Violations)
	}}
	switch w {
	case wFloor:
		return []metric{rate("pairs/s"), p50, p99}
	case wUncontended:
		r := rate("pairs/s")
		r.floor = true
		return []metric{r, p50, p99}
	case wHandoff:
		return []metric{{name: "ms/handoff", value: handoffOf}}
	case wFailover:
		return []metric{{name: "p50 ms/failover", value: p50Of}, {name: "p99 ms/failover", value: func(f *figures) *float64 { return f.P99Ms }}}
	case wRWRead:
		return []metric{rate("acq/s"), spread}
	case wManyLocks:
		return manyMetrics()
	}
	return []metric{rate("acq/s"), spread, viol}
}

// manyMetrics are the rows of a many-locks run: the acquire-all's rate,
// the release-all's time and rate, and what a hold costs.
func manyMetrics() []metric {
	approx := func(f *figures) bool { return f.HeapApprox }
	return []metric{
		{name: "acquisitions/s", value: rateOf},
		{name: "release-all ms", value: func(f *figures) *float64 { return f.ReleaseMs }, plain: true},
		{name: "releases/s", value: releaseRateOf},
		{name: "heap bytes/hold", value: heapOf, plain: true, approx: approx},
		{name: "live heap bytes/hold", value: func(f *figures) *float64 { return f.LivePerHold }, plain: true},
		{name: "stack bytes/hold", value: func(f *figures) *float64 { return f.StackPerHold }, plain: true},
		{name: "goroutines/hold (Java: threads)", value: tasksOf, plain: true},
		{name: "server watches/hold", value: func(f *figures) *float64 { return f.WatchesPerHold }, plain: true},
	}
}

// print writes the report's tables to w.
func (rep *report) print(w io.Writer) {
	rep.printHeader(w)
	for _, rg := range rep.regimeNames() {
		rep.printMain(w, rg)
		rep.printTargets(w, rg)
	}
	if len(rep.RoundTrips) > 0 {
		rep.printRoundTrips(w)
	}
	if len(rep.Memory) > 0 {
		rep.printMemory(w)
	}
	rep.printProblems(w)
}

// printHeader writes the circumstances of the run.
func (rep *report) printHeader(w io.Writer) {
	fmt.Fprintf(w, "zklock benchmark (%s sizes, %d rounds), %s\n", rep.Mode, rep.Rounds, rep.Started.Format("2006-01-02 15:04:05 MST"))
	t := &table{left: 2}
	t.add("storage:", rep.Storage)
	t.add("ZooKeeper:", rep.ZooKeeper+", one server")
	t.add("server JVM:", rep.ServerJVM)
	machine := fmt.Sprintf("%d CPUs", rep.CPUs)
	if rep.Pinning != "" {
		machine += "; " + rep.Pinning
	}
	t.add("machine:", machine)
	t.add("Go:", rep.GoVersion)
	java := rep.Java
	if rep.Curator != "" {
		java += " (harness: " + rep.Curator + ")"
	}
	t.add("Java:", java)
	t.add("time limit:", fmt.Sprintf("%.0fs per workload and library", rep.LimitS))
	nudge := "off"
	if rep.NudgeMs > 0 {
		nudge = fmt.Sprintf("a read every %gms from the controller session, against ZOOKEEPER-4537's stalls", rep.NudgeMs)
	}
	t.add("nudge:", nudge)
	t.add("warm-up:", "every library ran unmeasured on loopback before anything was timed")
	for i, o := range rep.Order {
		names := make([]string, len(o))
		for j, l := range o {
			names[j] = displayName(l)
		}
		t.add(fmt.Sprintf("round %d:", i+1), strings.Join(names, ", "))
	}
	for _, ri := range rep.Regimes {
		t.add(ri.Name+":", ri.describe())
	}
	t.write(w)
	fmt.Fprintln(w)
}

// hasMany reports whether regime rg has many-locks results.
func (rep *report) hasMany(rg string) bool {
	for _, r := range rep.Results {
		if r.Regime == rg && r.Round >= 0 && r.Workload == wManyLocks {
			return true
		}
	}
	return false
}

// regimeNames lists the regimes that have results, in the order they ran.
func (rep *report) regimeNames() []string {
	var out []string
	for _, r := range rep.Results {
		if r.Round >= 0 && !slices.Contains(out, r.Regime) {
			out = append(out, r.Regime)
		}
	}
	return out
}

// runs returns every round's result of label by lib in regime rg.
func (rep *report) runs(rg, label, lib string) []*result {
	var out []*result
	for i, r := range rep.Results {
		if r.Regime == rg && r.Round >= 0 && r.Label == label && r.Library == lib {
			out = append(out, &rep.Results[i])
		}
	}
	return out
}

// labels returns the workloads' labels of regime rg in the order they ran.
func (rep *report) labels(rg string) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Regime == rg && r.Round >= 0 && !slices.Contains(out, r.Label) {
			out = append(out, r.Label)
		}
	}
	return out
}

// printMain writes the figures of every workload of regime rg, library
// by library, and zklock's ratios to the others.
func (rep *report) printMain(w io.Writer, rg string) {
	fmt.Fprintf(w, "== %s ==\n", rg)
	fmt.Fprintf(w, "Figures: the median [min..max] over %d rounds. go-zk is zk.Lock, or raw create+delete for the\n", rep.Rounds)
	fmt.Fprintln(w, "floor. Ratios are zklock / other in each round, their median [min..max]: above 1 is better")
	fmt.Fprintln(w, "for rates, below 1 for times. server CPU: the server process's user+system time over the")
	fmt.Fprintln(w, "measured part (10ms clock ticks), per op, and as a share of one CPU (busy); client CPU: the")
	fmt.Fprintln(w, "same of the clients' process (Go: the tool's own, its drivers included; Curator: its harness). srvr: the")
	fmt.Fprintln(w, "server's Received/Sent packet counters over the measured part, per operation; requests/op:")
	fmt.Fprintln(w, "what the clients sent, counted by the proxies.")
	if rep.hasMany(rg) {
		fmt.Fprintln(w, "manylocks N G=g: one session takes N distinct locks (parents created beforehand) from g")
		fmt.Fprintln(w, "goroutines (Java: threads), holds them all, releases them all; srvr, CPU per lock (acquire and")
		fmt.Fprintln(w, "release); per hold: the process's growth from before the lock objects were made until all")
		fmt.Fprintln(w, "were held, after a GC, / N (~: Java's totalMemory-freeMemory after System.gc(), approximate),")
		fmt.Fprintln(w, "and the server's watch count's.")
	}
	t := &table{left: 2}
	t.add("workload", "figure", "zklock", "Curator", "go-zk", "zklock/Curator", "zklock/go-zk", "zklock/floor")
	t.rule()
	floor := rep.series(rg, pick{workload: wFloor, lib: libZK}, rateOf)
	for _, label := range rep.labels(rg) {
		rep.addWorkload(t, rg, label, floor)
	}
	rep.addScaling(t, rg)
	t.write(w)
	fmt.Fprintln(w)
}

// addWorkload adds the rows of label in regime rg to t.
func (rep *report) addWorkload(t *table, rg, label string, floor map[int]float64) {
	libs := allLibs()
	var workload string
	for _, l := range libs {
		if rs := rep.runs(rg, label, l); len(rs) > 0 {
			workload = rs[0].Workload
			break
		}
	}
	for i, m := range metrics(workload) {
		row := []string{"", m.name}
		if i == 0 {
			row[0] = label
		}
		vals := make([]map[int]float64, len(libs))
		for j, l := range libs {
			var cell string
			cell, vals[j] = rep.cell(rep.runs(rg, label, l), m)
			row = append(row, cell)
		}
		if m.value != nil && !m.plain {
			row = append(row, ratioCell(vals[0], vals[1]), ratioCell(vals[0], vals[2]))
			if m.floor {
				row = append(row, ratioCell(vals[0], floor))
			}
		}
		t.add(row...)
	}
	rep.addPerOp(t, rg, label, workload, libs)
}

// cell formats one library's figure for m over its rounds, and returns
// the values by round when it is a number.
func (rep *report) cell(rs []*result, m metric) (string, map[int]float64) {
	if len(rs) == 0 {
		return "-", nil
	}
	if m.text != nil {
		return textCell(rs, m), nil
	}
	vals := make(map[int]float64)
	bad, tilde := "", ""
	for _, r := range rs {
		switch {
		case r.DNF:
			bad = "DNF"
		case r.Figures == nil:
			bad = "ERR"
		default:
			if v := m.value(r.Figures); v != nil {
				vals[r.Round] = *v
				if m.approx != nil && m.approx(r.Figures) {
					tilde = "~"
				}
			}
		}
	}
	if len(vals) == 0 {
		return bad, nil
	}
	cell := tilde + statOf(values(vals)).String()
	if bad != "" {
		cell += fmt.Sprintf(" (%d %s)", len(rs)-len(vals), bad)
	}
	return cell, vals
}

// textCell joins a text metric over the rounds: per-session ranges merge,
// violations add up.
func textCell(rs []*result, m metric) string {
	var lo, hi, viol int64 = -1, -1, 0
	for _, r := range rs {
		f := r.Figures
		switch {
		case f == nil:
		case m.name == "violations" && f.Violations != nil:
			viol += *f.Violations
		case f.MinPerSession != nil:
			if lo < 0 || *f.MinPerSession < lo {
				lo = *f.MinPerSession
			}
			hi = max(hi, *f.MaxPerSession)
		}
	}
	if m.name == "violations" {
		return fmt.Sprint(viol)
	}
	if lo < 0 {
		return ""
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

// addPerOp adds the srvr cross-check row of label and, in the latency
// regime, the requests counted by the proxies, each a median over rounds.
// Many locks count per lock (its acquire and its release), and their
// requests show for the acquire and the release apart.
func (rep *report) addPerOp(t *table, rg, label, workload string, libs []string) {
	op := "op"
	if workload == wManyLocks {
		op = "lock"
		rep.addManyRequests(t, rg, label, libs)
	}
	srvr := []string{"", "srvr recv/sent per " + op}
	reqs := []string{"", "requests/" + op}
	cpu := []string{"", "server CPU µs/" + op + " (busy)"}
	ccpu := []string{"", "client CPU µs/" + op}
	anySrvr, anyReqs, anyCPU, anyClient := false, false, false, false
	for _, l := range libs {
		var recv, sent, req, perOp, busy, client []float64
		for _, r := range rep.runs(rg, label, l) {
			if r.Srvr != nil {
				recv, sent = append(recv, r.Srvr.ReceivedPerOp), append(sent, r.Srvr.SentPerOp)
			}
			if r.Srvr != nil && r.Srvr.CPUPerOpUS > 0 {
				perOp, busy = append(perOp, r.Srvr.CPUPerOpUS), append(busy, r.Srvr.CPUBusy)
			}
			if r.Srvr != nil && r.Srvr.ClientCPUPerOpUS > 0 {
				client = append(client, r.Srvr.ClientCPUPerOpUS)
			}
			if r.Requests != nil {
				req = append(req, *r.Requests)
			}
		}
		srvr, reqs, cpu, ccpu = append(srvr, ""), append(reqs, ""), append(cpu, ""), append(ccpu, "")
		if len(client) > 0 {
			anyClient = true
			ccpu[len(ccpu)-1] = fmt.Sprintf("%.0f", statOf(client).Med)
		}
		if len(perOp) > 0 {
			anyCPU = true
			cpu[len(cpu)-1] = fmt.Sprintf("%.0f (%.0f%%)", statOf(perOp).Med, 100*statOf(busy).Med)
		}
		if len(recv) > 0 {
			anySrvr = true
			srvr[len(srvr)-1] = fmt.Sprintf("%.2f/%.2f", statOf(recv).Med, statOf(sent).Med)
		}
		if len(req) > 0 {
			anyReqs = true
			reqs[len(reqs)-1] = statOf(req).String()
		}
	}
	if anyReqs && workload != wManyLocks {
		t.add(reqs...)
	}
	if anySrvr {
		t.add(srvr...)
	}
	if anyCPU {
		t.add(cpu...)
	}
	if anyClient {
		t.add(ccpu...)
	}
}

// addManyRequests adds the rows of a many-locks run's requests per
// acquire and per release (latency regime), each a median over rounds.
func (rep *report) addManyRequests(t *table, rg, label string, libs []string) {
	for _, part := range []struct {
		name string
		of   func(r *result) *float64
	}{
		{"requests/acquire", func(r *result) *float64 { return r.RequestsAcquire }},
		{"requests/release", func(r *result) *float64 { return r.RequestsRelease }},
	} {
		row, any := []string{"", part.name}, false
		for _, l := range libs {
			var vs []float64
			for _, r := range rep.runs(rg, label, l) {
				if v := part.of(r); v != nil {
					vs = append(vs, *v)
				}
			}
			cell := ""
			if s := statOf(vs); s != nil {
				cell, any = s.String(), true
			}
			row = append(row, cell)
		}
		if any {
			t.add(row...)
		}
	}
}

// addScaling adds each library's handoff time at the largest W relative
// to its own at W=10 (or the smallest W), round by round.
func (rep *report) addScaling(t *table, rg string) {
	_, hi := rep.handoffSizes(rg)
	lo := 10
	if !slices.Contains(rep.handoffList(rg), lo) || hi <= lo {
		return
	}
	row := []string{"handoff scaling", fmt.Sprintf("W=%d / W=%d", hi, lo)}
	for _, l := range allLibs() {
		a := rep.series(rg, pick{workload: wHandoff, size: hi, lib: l}, handoffOf)
		b := rep.series(rg, pick{workload: wHandoff, size: lo, lib: l}, handoffOf)
		row = append(row, ratioCell(a, b))
	}
	t.add(row...)
}

// handoffList returns the handoff sizes W that ran in regime rg.
func (rep *report) handoffList(rg string) []int {
	var out []int
	for _, r := range rep.Results {
		if r.Regime == rg && r.Round >= 0 && r.Workload == wHandoff && !slices.Contains(out, r.N) {
			out = append(out, r.N)
		}
	}
	return out
}

// handoffSizes returns the smallest and largest handoff W of regime rg.
func (rep *report) handoffSizes(rg string) (lo, hi int) {
	ws := rep.handoffList(rg)
	if len(ws) == 0 {
		return 0, 0
	}
	return slices.Min(ws), slices.Max(ws)
}

// printRoundTrips writes the requests per operation of the counting pass.
func (rep *report) printRoundTrips(w io.Writer) {
	fmt.Fprintln(w, "Round trips: requests sent per operation, client to server, counted by proxies in a")
	fmt.Fprintln(w, "separate pass of each regime (pings and connect requests not counted); bytes: what the")
	fmt.Fprintln(w, "server sent back per operation (replies and notifications).")
	t := &table{left: 3}
	t.add(append(append([]string{"regime", "operation", "library", "total"}, rtGroups()...), "bytes")...)
	t.rule()
	for i, r := range rep.RoundTrips {
		if i > 0 && r.Regime != rep.RoundTrips[i-1].Regime {
			t.rule()
		}
		row := []string{r.Regime, r.What, displayName(r.Library)}
		if r.Error != "" {
			row = append(row, map[bool]string{true: "DNF", false: "ERR"}[r.DNF])
			t.add(row...)
			continue
		}
		row = append(row, num(r.Total))
		for _, g := range rtGroups() {
			row = append(row, rtCell(r.Groups[g]))
		}
		row = append(row, fmt.Sprintf("%.0f", r.Down))
		t.add(row...)
	}
	t.write(w)
	fmt.Fprintln(w)
}

// rtCell formats a count per operation; zero is blank.
func rtCell(v float64) string {
	if v == 0 {
		return ""
	}
	return num(v)
}

// printMemory writes the memory per queued waiter.
func (rep *report) printMemory(w io.Writer) {
	fmt.Fprintln(w, "Memory per queued waiter: (after - before) / W, after a GC, sessions connected before,")
	fmt.Fprintln(w, "after once every waiter's watch is set; goroutines include the waiting goroutine itself.")
	t := &table{left: 2}
	t.add("library", "setup", "goroutines/waiter", "heap bytes/waiter", "stack bytes/waiter")
	t.rule()
	for _, r := range rep.Memory {
		if r.Error != "" {
			t.add(displayName(r.Library), r.Setup, map[bool]string{true: "DNF", false: "ERR"}[r.DNF])
			continue
		}
		t.add(displayName(r.Library), r.Setup, fmt.Sprintf("%.2f", r.GoroutinesPerWaiter),
			fmt.Sprintf("%.0f", r.HeapBytesPerWaiter), fmt.Sprintf("%.0f", r.StackBytesPerWaiter))
	}
	t.write(w)
	fmt.Fprintln(w)
}

// printProblems lists the notes and every error, one line each.
func (rep *report) printProblems(w io.Writer) {
	var lines []string
	lines = append(lines, rep.Notes...)
	for _, r := range rep.Results {
		if r.Error != "" {
			lines = append(lines, fmt.Sprintf("%s, round %d, %s, %s: %s", r.Regime, r.Round+1, r.Label, displayName(r.Library), firstLine(r.Error)))
		}
	}
	for _, r := range rep.RoundTrips {
		if r.Error != "" {
			lines = append(lines, fmt.Sprintf("%s, round trips %s, %s: %s", r.Regime, r.What, displayName(r.Library), firstLine(r.Error)))
		}
	}
	for _, r := range rep.Memory {
		if r.Error != "" {
			lines = append(lines, fmt.Sprintf("memory %s, %s: %s", r.Setup, displayName(r.Library), firstLine(r.Error)))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "Problems:\n  %s\n", strings.Join(lines, "\n  "))
	}
}
