package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// rtWarmup is how many unmeasured pairs a counting run starts with.
const rtWarmup = 50

// rtRow is one line of the round-trips table: the requests the clients
// sent per operation, in all and by op.
type rtRow struct {
	Library string             `json:"library"`
	Regime  string             `json:"regime"`
	What    string             `json:"what"`
	Divisor int                `json:"divisor"` // the operations the counts are divided by
	Total   float64            `json:"total"`
	ByOp    map[string]float64 `json:"by_op"`
	Down    float64            `json:"down_bytes"` // bytes from the server: replies and notifications

	Groups map[string]float64 `json:"-"` // the table's columns
	DNF    bool               `json:"dnf,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// rtGroups are the round-trips table's op columns, in order.
func rtGroups() []string {
	return []string{"create", "getChildren", "getData/exists", "delete", "multi", "sync", "setWatches", "other"}
}

// opGroup is the column op is counted in.
func opGroup(op int32) string {
	switch op {
	case 1, 15, 19, 21: // create, create2, createContainer, createTTL
		return "create"
	case 8, 12: // getChildren, getChildren2
		return "getChildren"
	case 3, 4:
		return "getData/exists"
	case 2, 20: // delete, deleteContainer
		return "delete"
	case 14, 22: // multi, multiRead
		return "multi"
	case 9:
		return "sync"
	case 101, 105: // setWatches, setWatches2
		return "setWatches"
	}
	return "other"
}

// rtDelta is what a stretch of a counting run cost: requests by op, and
// bytes from the server. (The server's CPU time is reported with the
// timed runs: a counting stretch includes the quiet periods.)
type rtDelta struct {
	counts opCounts
	down   int64
}

// between is what the proxies listed in idx (every proxy if none) counted
// from a to b.
func between(a, b snapshot, idx ...int) rtDelta {
	if len(idx) == 0 {
		for i := range b.Counts {
			idx = append(idx, i)
		}
	}
	d := rtDelta{counts: make(opCounts)}
	for _, i := range idx {
		d.counts = d.counts.plus(b.Counts[i].minus(a.Counts[i]))
		d.down += b.Down[i] - a.Down[i]
	}
	return d
}

// plus returns d + o.
func (d rtDelta) plus(o rtDelta) rtDelta {
	if d.counts == nil {
		d.counts = make(opCounts)
	}
	return rtDelta{counts: d.counts.plus(o.counts), down: d.down + o.down}
}

// minus returns d - o.
func (d rtDelta) minus(o rtDelta) rtDelta {
	return rtDelta{counts: d.counts.minus(o.counts), down: d.down - o.down}
}

// newRTRow divides what delta counted by divisor.
func newRTRow(lib, what string, divisor int, delta rtDelta) rtRow {
	row := rtRow{Library: lib, What: what, Divisor: divisor,
		ByOp: make(map[string]float64), Groups: make(map[string]float64)}
	d := float64(max(divisor, 1))
	row.Down = float64(delta.down) / d
	for op, n := range delta.counts {
		row.ByOp[opName(op)] += float64(n) / d
		row.Groups[opGroup(op)] += float64(n) / d
		row.Total += float64(n) / d
	}
	return row
}

// rtPlan lists the counting runs: a pair of each kind, handoffs,
// failovers, a short run of each loop workload (counted per
// acquisition), and many locks taken one after another (counted per
// lock).
func rtPlan(cfg config) []spec {
	s := cfg.Sizes
	out := []spec{
		{Workload: wFloor, N: s.RTPairs, Warmup: rtWarmup},
		{Workload: wUncontended, N: s.RTPairs, Warmup: rtWarmup},
	}
	for _, w := range s.RTHandoff {
		out = append(out, spec{Workload: wHandoff, N: w, Warmup: rtWarmup})
	}
	for _, p := range s.RTFailover {
		for _, m := range stepModes() {
			out = append(out, spec{Workload: wFailover, N: p, Mode: m, Warmup: rtWarmup, WarmReps: 1, Reps: s.RTFailovers})
		}
	}
	if s.RTLoop > 0 {
		for _, w := range []string{wContended, wSemaphore, wRWRead} {
			out = append(out, spec{Workload: w, C: s.Sessions, Leases: s.Leases, Dur: s.RTLoop, Warmup: rtWarmup})
		}
	}
	if s.RTManyLocks > 0 {
		out = append(out, spec{Workload: wManyLocks, N: s.RTManyLocks, G: 1, Warmup: rtWarmup})
	}
	return out
}

// rtLoop reports whether sp is a loop workload, counted per acquisition.
func rtLoop(sp spec) bool {
	return sp.Workload == wContended || sp.Workload == wSemaphore || sp.Workload == wRWRead
}

// roundTrips runs the counting pass of regime rg: every library's runs go
// through counting proxies (one for the handoff's gate session, one for
// every other session) that add rg's delay, apart from the timed runs so
// that, on loopback, the proxies' latency touches no figure.
func roundTrips(ctx context.Context, e *env, cfg config, rg regime, libs []library, prog *progress) []rtRow {
	var rows []rtRow
	for _, sp := range rtPlan(cfg) {
		for _, lib := range libs {
			if ctx.Err() != nil {
				return rows
			}
			if lib.supports(sp.Workload) {
				for _, row := range countRun(ctx, e, lib, sp, rg, cfg.Limit, prog) {
					row.Regime = rg.Name
					rows = append(rows, row)
				}
			}
		}
	}
	return rows
}

// countRun runs sp with lib through two counting proxies and returns its
// rows.
func countRun(ctx context.Context, e *env, lib library, sp spec, rg regime, limit time.Duration, prog *progress) []rtRow {
	sp.Path, sp.WarmPath = e.paths("rt-"+sp.Workload, lib.name())
	what := rtWhat(sp)
	prog.begin(fmt.Sprintf("%s, round trips, %s: %s", rg.Name, what, displayName(lib.name())))
	var rec *recorder
	var r raw
	err := e.prepare(sp)
	if err == nil {
		rec, r, err = countThrough(ctx, e, lib, sp, rg.Delay, limit)
	}
	if cerr := e.teardown(sp); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		prog.end("failed")
		row := rtRow{Library: lib.name(), What: what, DNF: errors.Is(err, errDNF), Error: err.Error()}
		return []rtRow{row}
	}
	if rtLoop(sp) {
		// The divisor: every acquisition made. Each session's last one,
		// made at or after the stop time, is outside the timed count.
		sp.N = int(r.Ops) + sp.C
	}
	rows := rtRows(lib.name(), sp, rec)
	prog.end(fmt.Sprintf("%.2f requests per %s", rows[0].Total, rtUnit(sp)))
	return rows
}

// countThrough runs sp with lib through fresh counting proxies adding
// delay, and returns the recorder holding their counts at each phase,
// and what the run measured.
func countThrough(ctx context.Context, e *env, lib library, sp spec, delay, limit time.Duration) (*recorder, raw, error) {
	rt, err := e.openCounted(delay)
	if err != nil {
		return nil, raw{}, err
	}
	defer rt.close()
	rec := newRecorder(e, sp)
	rec.proxies = rt.proxies
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r, err := lib.run(rctx, sp, rt.ep, rec.phase)
	return rec, r, err
}

// rtWhat names a counting run.
func rtWhat(sp spec) string {
	switch {
	case sp.Workload == wHandoff:
		return fmt.Sprintf("handoff W=%d", sp.N)
	case sp.Workload == wFailover:
		return fmt.Sprintf("failover P=%d %s", sp.N, sp.Mode)
	case rtLoop(sp):
		return fmt.Sprintf("%s %d, per acquisition", sp.Workload, sp.C)
	case sp.Workload == wManyLocks:
		return fmt.Sprintf("manylocks N=%d", sp.N)
	}
	return sp.Workload + " pair"
}

// rtUnit is what a counting run's first row counts per.
func rtUnit(sp spec) string {
	switch {
	case stretched(sp.Workload):
		return sp.Workload
	case rtLoop(sp):
		return "acquisition"
	case sp.Workload == wManyLocks:
		return "acquire"
	}
	return "pair"
}

// rtRows turns a counting run's snapshots into rows: per pair or per
// acquisition, per lock for many locks (acquire and release apart), or
// those of handoffRows or failoverRows.
func rtRows(lib string, sp spec, rec *recorder) []rtRow {
	switch sp.Workload {
	case wHandoff:
		return handoffRows(lib, sp, rec)
	case wFailover:
		return failoverRows(lib, sp, rec)
	case wManyLocks:
		what := rtWhat(sp)
		return []rtRow{
			newRTRow(lib, what+": acquire, per lock", sp.N, between(rec.snaps[phaseReady], rec.snaps[phaseHeld])),
			newRTRow(lib, what+": release, per lock", sp.N, between(rec.snaps[phaseRelease], rec.snaps[phaseMeasured])),
		}
	}
	return []rtRow{newRTRow(lib, rtWhat(sp), sp.N, between(rec.snaps[phaseReady], rec.snaps[phaseMeasured]))}
}

// handoffRows are a counting handoff run's rows: per handoff (every
// session), per woken waiter (the waiters' sessions only), the gate's
// release, and the queueing per waiter.
func handoffRows(lib string, sp spec, rec *recorder) []rtRow {
	ready, queued, measured := rec.snaps[phaseReady], rec.snaps[phaseQueued], rec.snaps[phaseMeasured]
	what := rtWhat(sp)
	return []rtRow{
		newRTRow(lib, what+": per handoff", sp.N, between(queued, measured)),
		newRTRow(lib, what+": per woken waiter", sp.N, between(queued, measured, 0)),
		newRTRow(lib, what+": gate release", 1, between(queued, measured, 1)),
		newRTRow(lib, what+": queueing, per waiter", sp.N, between(ready, queued)),
	}
}

// failoverRows are a counting failover run's rows, per failover: the
// timed stretches (the step-down and the next leader's taking over, every
// session), and the old leader's rejoining between them (with its new
// session's requests after a close, the connect request left out).
func failoverRows(lib string, sp spec, rec *recorder) []rtRow {
	var stretches rtDelta
	for _, iv := range rec.intervals(sp.Workload) {
		stretches = stretches.plus(between(iv[0], iv[1]))
	}
	all := between(rec.snaps[phaseReady], rec.snaps[phaseMeasured])
	what := rtWhat(sp)
	return []rtRow{
		newRTRow(lib, what+": per failover", sp.reps(), stretches),
		newRTRow(lib, what+": rejoin", sp.reps(), all.minus(stretches)),
	}
}
