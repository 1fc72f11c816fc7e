package main

import (
	"fmt"
	"io"
	"strings"
)

// metric is one row of a workload in the main table.
type metric struct {
	name  string
	value func(f *figures) *float64 // a number, for ratios
	text  func(f *figures) string   // or a text
	floor bool                      // also compare zklock with the floor
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
		return []metric{{name: "ms/handoff", value: func(f *figures) *float64 { return f.MsPerHandoff }}}
	case wRWRead:
		return []metric{rate("acq/s"), spread}
	}
	return []metric{rate("acq/s"), spread, viol}
}

// print writes the report's tables to w.
func (rep *report) print(w io.Writer) {
	rep.printHeader(w)
	if len(rep.Results) > 0 {
		rep.printMain(w)
		rep.printTargets(w)
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
	fmt.Fprintf(w, "zklock benchmark (%s sizes), %s\n", rep.Mode, rep.Started.Format("2006-01-02 15:04:05 MST"))
	t := &table{left: 2}
	t.add("storage:", rep.Storage)
	t.add("ZooKeeper:", rep.ZooKeeper+", one server on loopback")
	t.add("machine:", fmt.Sprintf("%d CPUs", rep.CPUs))
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
	t.write(w)
	fmt.Fprintln(w)
}

// result returns the result of label by lib, or nil.
func (rep *report) result(label, lib string) *result {
	for i, r := range rep.Results {
		if r.Label == label && r.Library == lib {
			return &rep.Results[i]
		}
	}
	return nil
}

// labels returns the workloads' labels in the order they ran.
func (rep *report) labels() []string {
	var out []string
	seen := make(map[string]bool)
	for _, r := range rep.Results {
		if !seen[r.Label] {
			seen[r.Label] = true
			out = append(out, r.Label)
		}
	}
	return out
}

// printMain writes the figures of every workload, library by library,
// and zklock's ratios to the others.
func (rep *report) printMain(w io.Writer) {
	fmt.Fprintln(w, "Throughput and latency. go-zk is zk.Lock, or raw create+delete for the floor. Ratios are")
	fmt.Fprintln(w, "zklock / other: above 1 is better for rates, below 1 for times. srvr: the server's")
	fmt.Fprintln(w, "Received/Sent packet counters over the measured part, per operation.")
	t := &table{left: 2}
	t.add("workload", "figure", "zklock", "Curator", "go-zk", "zklock/Curator", "zklock/go-zk", "zklock/floor")
	t.rule()
	floor := rep.floorRate()
	for _, label := range rep.labels() {
		rep.addWorkload(t, label, floor)
	}
	rep.addScaling(t)
	t.write(w)
	fmt.Fprintln(w)
}

// floorRate is go-zk's floor in pairs/s, or nil.
func (rep *report) floorRate() *float64 {
	for _, r := range rep.Results {
		if r.Workload == wFloor && r.Library == libZK && r.Figures != nil {
			return ptr(r.Figures.PerSecond)
		}
	}
	return nil
}

// addWorkload adds label's rows to t.
func (rep *report) addWorkload(t *table, label string, floor *float64) {
	libs := allLibs()
	first := rep.result(label, libs[0])
	for _, l := range libs[1:] {
		if first == nil {
			first = rep.result(label, l)
		}
	}
	for i, m := range metrics(first.Workload) {
		row := []string{"", m.name}
		if i == 0 {
			row[0] = label
		}
		vals := make([]*float64, len(libs))
		for j, l := range libs {
			var cell string
			cell, vals[j] = rep.cell(rep.result(label, l), m)
			row = append(row, cell)
		}
		if m.value != nil {
			row = append(row, ratio(vals[0], vals[1]), ratio(vals[0], vals[2]))
			if m.floor {
				row = append(row, ratio(vals[0], floor))
			}
		}
		t.add(row...)
	}
	rep.addSrvr(t, label, libs)
}

// cell formats one library's figure for m, and returns it as a number
// when it is one.
func (rep *report) cell(r *result, m metric) (string, *float64) {
	switch {
	case r == nil:
		return "-", nil
	case r.DNF:
		return "DNF", nil
	case r.Figures == nil:
		return "ERR", nil
	case m.text != nil:
		return m.text(r.Figures), nil
	}
	v := m.value(r.Figures)
	if v == nil {
		return "", nil
	}
	return num(*v), v
}

// addSrvr adds the srvr cross-check row of label.
func (rep *report) addSrvr(t *table, label string, libs []string) {
	row := []string{"", "srvr recv/sent per op"}
	any := false
	for _, l := range libs {
		r := rep.result(label, l)
		if r == nil || r.Srvr == nil {
			row = append(row, "")
			continue
		}
		any = true
		row = append(row, fmt.Sprintf("%.2f/%.2f", r.Srvr.ReceivedPerOp, r.Srvr.SentPerOp))
	}
	if any {
		t.add(row...)
	}
}

// handoffMs returns lib's ms per handoff at W=n, or nil.
func (rep *report) handoffMs(lib string, n int) *float64 {
	for _, r := range rep.Results {
		if r.Workload == wHandoff && r.Library == lib && r.N == n && r.Figures != nil {
			return r.Figures.MsPerHandoff
		}
	}
	return nil
}

// handoffSizes returns the smallest and largest handoff W that ran.
func (rep *report) handoffSizes() (lo, hi int) {
	for _, r := range rep.Results {
		if r.Workload == wHandoff {
			if lo == 0 || r.N < lo {
				lo = r.N
			}
			hi = max(hi, r.N)
		}
	}
	return lo, hi
}

// addScaling adds each library's handoff time at the largest W relative
// to its own at the smallest.
func (rep *report) addScaling(t *table) {
	lo, hi := rep.handoffSizes()
	if lo == hi {
		return
	}
	row := []string{"handoff scaling", fmt.Sprintf("W=%d / W=%d", hi, lo)}
	for _, l := range allLibs() {
		row = append(row, ratio(rep.handoffMs(l, hi), rep.handoffMs(l, lo)))
	}
	t.add(row...)
}

// printRoundTrips writes the requests per operation of the counting pass.
func (rep *report) printRoundTrips(w io.Writer) {
	fmt.Fprintln(w, "Round trips: requests sent per operation, client to server, counted by a proxy in a")
	fmt.Fprintln(w, "separate pass (pings and connect requests not counted).")
	t := &table{left: 2}
	t.add(append([]string{"operation", "library", "total"}, rtGroups()...)...)
	t.rule()
	for _, r := range rep.RoundTrips {
		row := []string{r.What, displayName(r.Library)}
		if r.Error != "" {
			row = append(row, map[bool]string{true: "DNF", false: "ERR"}[r.DNF])
			t.add(row...)
			continue
		}
		row = append(row, num(r.Total))
		for _, g := range rtGroups() {
			row = append(row, rtCell(r.Groups[g]))
		}
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
			lines = append(lines, fmt.Sprintf("%s, %s: %s", r.Label, displayName(r.Library), firstLine(r.Error)))
		}
	}
	for _, r := range rep.RoundTrips {
		if r.Error != "" {
			lines = append(lines, fmt.Sprintf("round trips %s, %s: %s", r.What, displayName(r.Library), firstLine(r.Error)))
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
