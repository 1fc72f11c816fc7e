package main

import (
	"errors"
	"math"
	"slices"
	"time"
)

// result is one run of one workload by one library, as reported.
type result struct {
	Workload  string     `json:"workload"`
	Label     string     `json:"label"`
	Library   string     `json:"library"`
	Regime    string     `json:"regime"`
	Round     int        `json:"round"` // 0-based; -1: the server's warm-up
	N         int        `json:"n,omitempty"`
	Mode      string     `json:"mode,omitempty"` // failover: how the leader stepped down
	Sessions  int        `json:"sessions,omitempty"`
	G         int        `json:"goroutines,omitempty"` // manylocks: goroutines (Java: threads) sharing the acquires
	Leases    int        `json:"leases,omitempty"`
	DurationS float64    `json:"duration_s,omitempty"`
	DNF       bool       `json:"dnf"`
	Error     string     `json:"error,omitempty"`
	WallS     float64    `json:"wall_s"`  // the whole run, set-up and tear-down included
	Figures   *figures   `json:"figures"` // null when the run did not finish or failed
	Srvr      *srvrDelta `json:"srvr"`    // null when not measured
	// Requests is what the clients sent over the measured part, per
	// operation, counted by the latency regime's proxies (pings and
	// connect requests left out); null on loopback. Many locks: per lock,
	// its acquire and its release; and each apart.
	Requests        *float64 `json:"requests_per_op"`
	RequestsAcquire *float64 `json:"requests_per_acquire,omitempty"`
	RequestsRelease *float64 `json:"requests_per_release,omitempty"`
}

// figures are a run's results. Pointers are null where they do not apply.
type figures struct {
	Ops           int64    `json:"ops"`
	Seconds       float64  `json:"seconds"`
	PerSecond     float64  `json:"per_second"`
	P50Ms         *float64 `json:"p50_ms"` // floor, uncontended: per pair; failover: per failover
	P99Ms         *float64 `json:"p99_ms"`
	MinPerSession *int64   `json:"min_per_session"`
	MaxPerSession *int64   `json:"max_per_session"`
	Violations    *int64   `json:"violations"`
	MsPerHandoff  *float64 `json:"ms_per_handoff"`

	// Many locks: Ops, Seconds and PerSecond are the acquire-all's.
	ReleaseMs        *float64 `json:"release_all_ms,omitempty"`           // time to release every lock
	ReleasePerSecond *float64 `json:"release_per_second,omitempty"`       // releases per second
	HeapPerHold      *float64 `json:"heap_bytes_per_hold,omitempty"`      // heap in use, after - before, / N
	HeapApprox       bool     `json:"heap_approx,omitempty"`              // Java's: approximate
	LivePerHold      *float64 `json:"live_heap_bytes_per_hold,omitempty"` // Go: live heap (objects alone), after - before, / N
	StackPerHold     *float64 `json:"stack_bytes_per_hold,omitempty"`
	TasksPerHold     *float64 `json:"tasks_per_hold,omitempty"`          // goroutines (Java: threads), after - before, / N
	WatchesPerHold   *float64 `json:"server_watches_per_hold,omitempty"` // the server's watch count, held - ready, / N
}

// srvrDelta is the change of the server's packet counters over the
// measured part, in all and per operation.
type srvrDelta struct {
	Received      int64   `json:"received"`
	Sent          int64   `json:"sent"`
	ReceivedPerOp float64 `json:"received_per_op"`
	SentPerOp     float64 `json:"sent_per_op"`
	// The server process's CPU time (user+system) over the measured part:
	// per op, and divided by the part's wall time (1 = one CPU busy).
	// Zero when not measured (an external server, not Linux, or a handoff
	// or failover, whose many short stretches are too short for 10ms ticks).
	CPUPerOpUS float64 `json:"cpu_per_op_us,omitempty"`
	CPUBusy    float64 `json:"cpu_busy,omitempty"`
	// The CPU time (user+system) of the process the library's clients run
	// in, per op, over the same part and under the same conditions: the
	// tool's own process for a Go library (its goroutines that drive the
	// workload included, alike for both), the harness for Curator.
	ClientCPUPerOpUS float64 `json:"client_cpu_per_op_us,omitempty"`
}

// newResult describes the outcome of running sp with lib.
func newResult(sp spec, lib string, r raw, err error, rec *recorder, wall time.Duration) result {
	res := result{
		Workload: sp.Workload, Label: sp.label(), Library: lib,
		N: sp.N, Mode: sp.Mode, Sessions: sp.C, G: sp.G, Leases: sp.Leases, DurationS: sp.Dur.Seconds(),
		WallS: wall.Seconds(),
	}
	switch {
	case errors.Is(err, errDNF):
		res.DNF, res.Error = true, err.Error()
	case err != nil:
		res.Error = err.Error()
	default:
		res.Figures = makeFigures(sp, r)
		res.Srvr = makeSrvr(sp, rec, r.Ops)
		res.Requests = makeRequests(sp, rec, r.Ops)
		if sp.Workload == wManyLocks {
			res.RequestsAcquire, res.RequestsRelease = manyRequests(rec, r.Ops)
			res.Figures.WatchesPerHold = manyWatches(rec, r.Ops)
		}
	}
	return res
}

// manyFigures adds a many-locks run's release and costs per hold to f.
func manyFigures(f *figures, r raw) {
	if r.Ops <= 0 {
		return
	}
	n := float64(r.Ops)
	f.ReleaseMs = ptr(r.ReleaseSeconds * 1000)
	if r.ReleaseSeconds > 0 {
		f.ReleasePerSecond = ptr(n / r.ReleaseSeconds)
	}
	f.HeapPerHold, f.HeapApprox = ptr(float64(r.HeldHeap)/n), r.HeapApprox
	if r.HeldStack != nil {
		f.StackPerHold = ptr(float64(*r.HeldStack) / n)
	}
	if r.HeldLive != nil {
		f.LivePerHold = ptr(float64(*r.HeldLive) / n)
	}
	f.TasksPerHold = ptr(float64(r.HeldTasks) / n)
}

// manyRequests counts the requests the proxies saw over a many-locks
// run's acquire-all and over its release-all, each per lock; nil without
// proxies.
func manyRequests(rec *recorder, ops int64) (acquire, release *float64) {
	if rec == nil || len(rec.proxies) == 0 || ops <= 0 {
		return nil, nil
	}
	ivs := rec.intervals(wManyLocks)
	if len(ivs) != 2 {
		return nil, nil
	}
	return ptr(float64(counted(ivs[0])) / float64(ops)), ptr(float64(counted(ivs[1])) / float64(ops))
}

// manyWatches is the growth of the server's watch count from phaseReady
// to phaseHeld, per lock; nil if either was not read.
func manyWatches(rec *recorder, ops int64) *float64 {
	if rec == nil || ops <= 0 {
		return nil
	}
	from, ok1 := rec.snaps[phaseReady]
	to, ok2 := rec.snaps[phaseHeld]
	if !ok1 || !ok2 || from.Watches < 0 || to.Watches < 0 {
		return nil
	}
	return ptr(float64(to.Watches-from.Watches) / float64(ops))
}

// makeFigures derives the figures of sp's workload from what was measured.
func makeFigures(sp spec, r raw) *figures {
	f := &figures{Ops: r.Ops, Seconds: r.Seconds}
	if r.Seconds > 0 {
		f.PerSecond = float64(r.Ops) / r.Seconds
	}
	switch sp.Workload {
	case wFloor, wUncontended, wFailover:
		f.P50Ms, f.P99Ms = percentileMs(r.LatUS, 0.50), percentileMs(r.LatUS, 0.99)
	case wHandoff:
		if r.Ops > 0 {
			f.MsPerHandoff = ptr(r.Seconds * 1000 / float64(r.Ops))
		}
	case wManyLocks:
		manyFigures(f, r)
	default:
		if len(r.PerSession) > 0 {
			f.MinPerSession, f.MaxPerSession = ptr(slices.Min(r.PerSession)), ptr(slices.Max(r.PerSession))
		}
		f.Violations = ptr(r.Violations)
	}
	return f
}

// makeSrvr computes the srvr deltas over the measured part, per op.
func makeSrvr(sp spec, rec *recorder, ops int64) *srvrDelta {
	if rec == nil || ops <= 0 {
		return nil
	}
	ivs := rec.intervals(sp.Workload)
	if len(ivs) == 0 {
		return nil
	}
	d := &srvrDelta{}
	var cpu, client, wall time.Duration
	// The server's CPU time is read in 10ms ticks: only a continuous
	// measured part (pairs, loops) is long enough to divide it.
	cpuKnown := !stretched(sp.Workload)
	clientKnown := cpuKnown
	for _, iv := range ivs {
		from, to := iv[0], iv[1]
		if from.SrvrErr != nil || to.SrvrErr != nil {
			return nil
		}
		cpuKnown = cpuKnown && from.CPU >= 0 && to.CPU >= 0
		clientKnown = clientKnown && from.Client >= 0 && to.Client >= 0
		cpu += to.CPU - from.CPU
		client += to.Client - from.Client
		wall += to.At.Sub(from.At)
		// Each nudge is one request in and one reply out.
		nudges := to.Nudges - from.Nudges
		d.Received += to.Received - from.Received - nudges
		d.Sent += to.Sent - from.Sent - nudges
	}
	d.ReceivedPerOp = float64(d.Received) / float64(ops)
	d.SentPerOp = float64(d.Sent) / float64(ops)
	if cpuKnown && wall > 0 {
		d.CPUPerOpUS = float64(cpu.Microseconds()) / float64(ops)
		d.CPUBusy = cpu.Seconds() / wall.Seconds()
	}
	if clientKnown && wall > 0 {
		d.ClientCPUPerOpUS = float64(client.Microseconds()) / float64(ops)
	}
	return d
}

// makeRequests counts the requests the proxies saw over the measured
// part, per op; nil without proxies.
func makeRequests(sp spec, rec *recorder, ops int64) *float64 {
	if rec == nil || len(rec.proxies) == 0 || ops <= 0 {
		return nil
	}
	ivs := rec.intervals(sp.Workload)
	if len(ivs) == 0 {
		return nil
	}
	var n int64
	for _, iv := range ivs {
		n += counted(iv)
	}
	return ptr(float64(n) / float64(ops))
}

// counted is the number of requests the proxies counted over a stretch.
func counted(iv [2]snapshot) int64 {
	var n int64
	for i := range min(len(iv[0].Counts), len(iv[1].Counts)) {
		n += iv[1].Counts[i].minus(iv[0].Counts[i]).total()
	}
	return n
}

// percentileMs returns the p-th percentile (nearest rank) of µs values, in
// milliseconds, or nil if there are none.
func percentileMs(us []int64, p float64) *float64 {
	if len(us) == 0 {
		return nil
	}
	s := slices.Clone(us)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return ptr(float64(s[i]) / 1000)
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
