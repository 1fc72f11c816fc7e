package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// memSettle is how long the number of watches must stay the same before
// the memory pass counts the waiters as queued.
const memSettle = 500 * time.Millisecond

// memSpec is one memory measurement.
type memSpec struct {
	Waiters  int           // W
	Sessions int           // the sessions the waiters are spread over
	Never    bool          // wait with a context that never ends
	Settle   time.Duration // see memSettle
	Limit    time.Duration
}

// memSnap is the process's goroutines and memory in use, after a GC.
type memSnap struct {
	Goroutines int
	HeapInuse  uint64 // spans in use: live objects and the free room in their spans
	HeapAlloc  uint64 // live objects alone
	StackInuse uint64
}

// takeMem runs a GC and reads the goroutine count and memory in use.
func takeMem() memSnap {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSnap{Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc, StackInuse: ms.StackInuse}
}

// memDelta is the growth of goroutines and memory per queued waiter.
type memDelta struct {
	Waiters             int     `json:"waiters"`
	Sessions            int     `json:"sessions"`
	GoroutinesPerWaiter float64 `json:"goroutines_per_waiter"`
	HeapBytesPerWaiter  float64 `json:"heap_inuse_bytes_per_waiter"`
	StackBytesPerWaiter float64 `json:"stack_inuse_bytes_per_waiter"`
}

// makeMem computes the growth per waiter between two snapshots.
func makeMem(before, after memSnap, waiters, sessions int) *memDelta {
	w := float64(waiters)
	return &memDelta{
		Waiters: waiters, Sessions: sessions,
		GoroutinesPerWaiter: float64(after.Goroutines-before.Goroutines) / w,
		HeapBytesPerWaiter:  (float64(after.HeapInuse) - float64(before.HeapInuse)) / w,
		StackBytesPerWaiter: (float64(after.StackInuse) - float64(before.StackInuse)) / w,
	}
}

// memRow is one line of the memory table: what one queued waiter costs
// this process.
type memRow struct {
	Library string `json:"library"`
	Setup   string `json:"setup"`
	memDelta
	DNF   bool   `json:"dnf,omitempty"`
	Error string `json:"error,omitempty"`
}

// memoryPass measures the goroutines and heap per queued waiter of the Go
// libraries: W waiters queued behind a gate, spread over a pool of
// sessions or one session each, with a context that can end and (zklock,
// pooled) one that never ends.
func memoryPass(ctx context.Context, e *env, cfg config, prog *progress) []memRow {
	s := cfg.Sizes
	var rows []memRow
	for _, g := range goLibs(cfg) {
		specs := []memSpec{
			{Waiters: s.MemWaiters, Sessions: s.MemSessions},
			{Waiters: s.MemWaiters, Sessions: s.MemWaiters},
		}
		if g.lib == libZklock {
			specs = append(specs, memSpec{Waiters: s.MemWaiters, Sessions: s.MemSessions, Never: true})
		}
		for _, ms := range specs {
			if ctx.Err() != nil {
				return rows
			}
			ms.Settle, ms.Limit = memSettle, cfg.Limit
			rows = append(rows, poolMemory(ctx, e, g, ms, prog))
		}
	}
	return rows
}

// goLibs returns the selected in-process libraries.
func goLibs(cfg config) []*goLib {
	var out []*goLib
	if cfg.hasLib(libZklock) {
		out = append(out, newZklockLib(cfg.Sizes.SessionLimit))
	}
	if cfg.hasLib(libZK) {
		out = append(out, newZKLib(cfg.Sizes.SessionLimit))
	}
	return out
}

// poolMemory runs one memory measurement and describes it.
func poolMemory(ctx context.Context, e *env, g *goLib, ms memSpec, prog *progress) memRow {
	setup := fmt.Sprintf("%d sessions x %d waiters", ms.Sessions, ms.Waiters/ms.Sessions)
	if ms.Sessions == ms.Waiters {
		setup = fmt.Sprintf("%d sessions x 1 waiter", ms.Sessions)
	}
	switch {
	case g.lib == libZK:
		setup += " (zk.Lock takes no context)"
	case ms.Never:
		setup += ", context that never ends"
	default:
		setup += ", context that can end"
	}
	row := memRow{Library: g.lib, Setup: setup}
	prog.begin(fmt.Sprintf("memory, %s: %s", setup, displayName(g.lib)))
	lockPath, _ := e.paths(wMemory, g.lib)
	rctx, cancel := context.WithTimeout(ctx, ms.Limit)
	set := &sessionSet{}
	d, err := g.queueMemory(rctx, e, lockPath, ms, set)
	cancel()
	err = errors.Join(err, set.closeAll(), e.cleanup(lockPath))
	if err != nil {
		row.DNF, row.Error = errors.Is(err, context.DeadlineExceeded), err.Error()
		prog.end("failed")
		return row
	}
	row.memDelta = *d
	prog.end(fmt.Sprintf("%.2f goroutines, %.0f heap bytes per waiter", d.GoroutinesPerWaiter, d.HeapBytesPerWaiter))
	return row
}

// queueMemory queues w waiters, spread over a pool of sessions, behind a
// gate session's hold, measures the process before and after, and then
// lets the queue drain.
func (g *goLib) queueMemory(ctx context.Context, e *env, lockPath string, ms memSpec, set *sessionSet) (*memDelta, error) {
	w, sessions := ms.Waiters, ms.Sessions
	ss, err := connectN(ctx, g.open, []string{e.server}, sessions+1, g.sessionTimeout, set)
	if err != nil {
		return nil, err
	}
	gate, err := ss[0].mutex(lockPath)
	if err != nil {
		return nil, err
	}
	if err := gate.acquire(ctx); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	waitCtx, stopWaits := context.WithCancel(ctx)
	defer stopWaits()
	if ms.Never {
		waitCtx = context.Background()
	}
	before := takeMem()
	cr := set.newCrew()
	for i := 0; i < w; i++ {
		l, err := ss[1+i%sessions].mutex(lockPath)
		if err != nil {
			return nil, err
		}
		cr.spawn(func() error {
			if err := l.acquire(waitCtx); err != nil {
				return fmt.Errorf("waiter: %w", err)
			}
			return l.release()
		})
	}
	if err := e.waitChildren(ctx, lockPath, w+1); err != nil {
		return nil, err
	}
	// Every node exists before every waiter has read the queue (W
	// listings of W names take the server a while): wait for the watches.
	if err := e.waitWatchesSettle(ctx, w, ms.Settle); err != nil {
		return nil, err
	}
	after := takeMem()
	// Drain the queue the ordinary way, each waiter taking and releasing
	// the lock in turn. Closing sessions under a queue would make every
	// waiter behind a closed one read the queue again at once, and
	// go-zookeeper v1.0.4 can then hang in its connection teardown (a
	// failed write leaves a request behind for flushRequests to block on).
	if err := gate.release(); err != nil {
		return nil, fmt.Errorf("gate release: %w", err)
	}
	if err := cr.wait(ctx); err != nil {
		return nil, fmt.Errorf("draining the queue: %w", err)
	}
	return makeMem(before, after, w, sessions), nil
}
