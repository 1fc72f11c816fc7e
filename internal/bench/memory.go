package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// memSettle is how long the memory pass waits after every waiter's node
// exists before it measures.
const memSettle = time.Second

// memSpec is one memory measurement.
type memSpec struct {
	Waiters  int           // W
	Sessions int           // the pool the waiters share
	Never    bool          // wait with a context that never ends
	Settle   time.Duration // wait after the queue is complete
	Limit    time.Duration
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
// libraries: W waiters shared by a pool of sessions, queued behind a gate,
// with a context that can end and (zklock) one that never ends. It adds
// the one-session-per-waiter figures of the largest handoff run.
func memoryPass(ctx context.Context, e *env, cfg config, results []result, prog *progress) []memRow {
	s := cfg.Sizes
	var rows []memRow
	for _, g := range goLibs(cfg) {
		variants := []bool{false}
		if g.lib == libZklock {
			variants = []bool{false, true}
		}
		for _, never := range variants {
			if ctx.Err() != nil {
				return rows
			}
			ms := memSpec{Waiters: s.MemWaiters, Sessions: s.MemSessions, Never: never, Settle: memSettle, Limit: cfg.Limit}
			rows = append(rows, poolMemory(ctx, e, g, ms, prog))
		}
		if r := largestHandoff(results, g.lib); r != nil {
			rows = append(rows, memRow{Library: g.lib, memDelta: *r.Memory,
				Setup: fmt.Sprintf("handoff run, one session per waiter, W=%d", r.N)})
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

// largestHandoff returns lib's handoff result with the most waiters that
// measured memory, or nil.
func largestHandoff(results []result, lib string) *result {
	var best *result
	for i, r := range results {
		if r.Library == lib && r.Workload == wHandoff && r.Memory != nil && (best == nil || r.N > best.N) {
			best = &results[i]
		}
	}
	return best
}

// poolMemory runs one memory measurement and describes it.
func poolMemory(ctx context.Context, e *env, g *goLib, ms memSpec, prog *progress) memRow {
	setup := fmt.Sprintf("%d sessions x %d waiters", ms.Sessions, ms.Waiters/ms.Sessions)
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
// gate session's hold, and measures the process before and after. The
// waits end by cancellation, or (ms.Never) when closeAll closes the sessions.
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
			if l.acquire(waitCtx) == nil { // only if the gate went away
				return l.release()
			}
			return nil // the wait was ended on purpose
		})
	}
	if err := e.waitChildren(ctx, lockPath, w+1); err != nil {
		return nil, err
	}
	// Let the last waiters finish reading the queue and settle into their
	// waits.
	select {
	case <-time.After(ms.Settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after := takeMem()
	return makeMem(before, after, w, sessions), nil
}
