package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// errDNF marks a run that did not finish within its time limit.
var errDNF = errors.New("did not finish within the time limit")

// Phase names. A library announces each one to its phaser and waits for it
// to return before going on.
const (
	// phaseReady: every session is connected and warmed up; the measured
	// part comes next.
	phaseReady = "ready"
	// phaseQueued (handoff, failover): every waiter has been started. The
	// phaser returns once the lock path lists the gate's node and every
	// waiter's (failover: every participant's node); the timed stretch
	// comes next.
	phaseQueued = "queued"
	// phaseDrained (handoff, failover): the timed stretch is over. Handoff:
	// every waiter of the repetition that phaseQueued started has acquired
	// and released; the gate takes the lock again before the next
	// repetition. Failover: the next leader leads; the old one rejoins next.
	phaseDrained = "drained"
	// phaseHeld (manylocks): every lock is held, the acquire-all timed;
	// the process's memory is read next.
	phaseHeld = "held"
	// phaseRelease (manylocks): the release of every lock, timed, comes
	// next.
	phaseRelease = "release"
	// phaseMeasured: the measured part is over; the tear-down comes next.
	phaseMeasured = "measured"
)

// phaser is told of each phase of a run; the run waits for it to return
// and gives up if it fails.
type phaser func(ctx context.Context, phase string) error

// spec is one run of a workload by one library.
type spec struct {
	Workload string
	N        int           // floor, uncontended: pairs; handoff: waiters W; failover: participants P; manylocks: locks
	C        int           // contended, semaphore, rwread: sessions
	G        int           // manylocks: goroutines (Java: threads) sharing the acquires and releases; 0 means 1
	Leases   int           // semaphore: L
	Dur      time.Duration // contended, semaphore, rwread: S
	Warmup   int           // unmeasured acquire+release pairs first
	Reps     int           // handoff: repetitions on the same sessions (0 means 1); failover: timed failovers
	WarmReps int           // failover: unmeasured failovers first, of the same kind
	Mode     string        // failover: how the leader steps down, stepResign or stepClose
	Path     string        // the lock's path, fresh for this run; manylocks: the locks' is Path-0 .. Path-(N-1)
	WarmPath string        // where warm-up pairs run, except for floor and uncontended (Path)
}

// label names the workload and its size, as the table shows it.
func (s spec) label() string {
	switch s.Workload {
	case wFloor, wUncontended:
		return fmt.Sprintf("%s %d", s.Workload, s.N)
	case wHandoff:
		return fmt.Sprintf("%s %d", s.Workload, s.N)
	case wFailover:
		return fmt.Sprintf("%s %d %s", s.Workload, s.N, s.Mode)
	case wSemaphore:
		return fmt.Sprintf("%s %d %d %s", s.Workload, s.C, s.Leases, s.Dur)
	case wManyLocks:
		return fmt.Sprintf("%s %d G=%d", s.Workload, s.N, s.goroutines())
	}
	return fmt.Sprintf("%s %d %s", s.Workload, s.C, s.Dur)
}

// maxHolders is how many sessions may hold at once in a loop workload.
func (s spec) maxHolders() int {
	switch s.Workload {
	case wSemaphore:
		return s.Leases
	case wRWRead:
		return 1 << 30 // readers share
	}
	return 1
}

// endpoints are the server addresses a run's sessions connect to: the
// handoff's gate session to Gate, every other session (a failover's
// participants all) to Servers. They
// differ when a counting pass tells the two apart.
type endpoints struct {
	Servers []string
	Gate    []string
}

// raw is what a run measured, in the same shape for every library (the
// Java harness prints it as JSON).
type raw struct {
	Ops        int64   `json:"ops"`         // measured pairs, acquisitions, handoffs or failovers
	Seconds    float64 `json:"seconds"`     // measured time
	LatUS      []int64 `json:"lat_us"`      // floor, uncontended: each pair's time in µs; failover: each failover's
	PerSession []int64 `json:"per_session"` // loop workloads: acquisitions per session
	Violations int64   `json:"violations"`  // loop workloads: times too many held at once
	DNF        bool    `json:"dnf"`         // the time limit passed
	Error      string  `json:"error"`       // what failed, if anything

	// manylocks: Ops and Seconds are the acquire-all's; the rest is the
	// release-all, and the process's growth once every lock was held,
	// after a GC: heap in use, stack in use (Go only), goroutines (Java:
	// live threads).
	ReleaseSeconds float64 `json:"release_seconds"`
	HeldHeap       int64   `json:"held_heap"`
	HeldStack      *int64  `json:"held_stack"`
	HeldLive       *int64  `json:"held_live_heap"` // Go: live heap (HeapAlloc) held - before; nil for Java
	HeldTasks      int64   `json:"held_tasks"`
	HeapApprox     bool    `json:"heap_approx"` // Java: totalMemory - freeMemory after System.gc(), approximate
}

// library runs workloads with one lock library.
type library interface {
	// name is the library's name (libZklock, libCurator, libZK).
	name() string
	// supports reports whether the library runs workload w.
	supports(w string) bool
	// run runs sp against ep, announcing its phases to ph. It returns an
	// error wrapping errDNF if ctx's deadline passed first, and closes
	// every session it opened (bounded) before returning.
	run(ctx context.Context, sp spec, ep endpoints, ph phaser) (raw, error)
	// process returns the process the library's clients run in while run
	// runs (the tool's own for a Go library), for its CPU time; 0 if
	// none.
	process() int
}

// reps is how many times a handoff repeats, or how many failovers are
// timed: Reps, at least 1.
func (s spec) reps() int { return max(1, s.Reps) }

// goroutines is how many goroutines share a manylocks run's acquires:
// G, at least 1.
func (s spec) goroutines() int { return max(1, s.G) }

// manyPath is the path of lock i of a manylocks run on base.
func manyPath(base string, i int) string { return base + "-" + strconv.Itoa(i) }

// stretched reports whether workload w is measured stretch by stretch,
// from each phaseQueued to the next phaseDrained.
func stretched(w string) bool { return w == wHandoff || w == wFailover }
