package main

import (
	"context"
	"fmt"
	"time"
)

// quietPeriod is how long a counting pass waits without a request before
// it takes a snapshot, so that requests in flight land on the right side.
const quietPeriod = 300 * time.Millisecond

// timedQuiet is the quiet period of the timed runs in the latency regime,
// whose proxies count requests too: shorter, since it adds to every run's
// set-up (never to what is timed).
const timedQuiet = 100 * time.Millisecond

// snapshot is what a recorder saw at one phase.
type snapshot struct {
	At       time.Time
	Received int64 // srvr counters
	Sent     int64
	Nudges   int64 // requests the nudger had sent
	SrvrErr  error
	Counts   []opCounts    // counting pass: one per proxy
	Down     []int64       // counting pass: bytes from the server, one per proxy
	CPU      time.Duration // the server's CPU time so far; -1 if unknown
	Client   time.Duration // the library's process's CPU time so far; -1 if unknown
	Watches  int           // manylocks: the watches the server holds (wchs); -1 if not read
}

// recorder answers one run's phases: at phaseQueued it waits until the
// lock path lists the gate's node and every waiter's (failover: every
// participant's); at every phase it takes the snapshots it was asked for.
type recorder struct {
	env     *env
	path    string     // the lock path
	want    int        // handoff, failover: nodes to wait for at phaseQueued
	srvr    bool       // read the server's counters
	watches bool       // manylocks: read the server's watch count at phaseReady and phaseHeld
	client  func() int // the library's process (see library.process)
	proxies []*countingProxy
	quiet   time.Duration // with proxies: how long no request must pass before a snapshot
	snaps   map[string]snapshot
	starts  []snapshot // handoff, failover: at each phaseQueued
	ends    []snapshot // handoff, failover: at each phaseDrained
}

// newRecorder returns a recorder for sp.
func newRecorder(e *env, sp spec) *recorder {
	rec := &recorder{env: e, path: sp.Path, quiet: quietPeriod, snaps: make(map[string]snapshot)}
	switch sp.Workload {
	case wHandoff:
		rec.want = sp.N + 1
	case wFailover:
		rec.want = sp.N
	case wManyLocks:
		rec.watches = true
	}
	return rec
}

// phase is the recorder's phaser.
func (r *recorder) phase(ctx context.Context, name string) error {
	if name == phaseQueued {
		if err := r.env.waitChildren(ctx, r.path, r.want); err != nil {
			return err
		}
	}
	if len(r.proxies) > 0 {
		if err := waitQuiet(ctx, r.proxies, r.quiet); err != nil {
			return err
		}
	}
	s := snapshot{At: time.Now(), Watches: -1}
	if r.watches && (name == phaseReady || name == phaseHeld) {
		// A server too busy to answer leaves the figure out; it does not
		// fail the run.
		if n, err := r.env.watches(ctx); err == nil {
			s.Watches = n
		}
	}
	if r.srvr {
		s.Nudges = r.env.nudge.sent()
		s.Received, s.Sent, s.SrvrErr = r.env.srvr(ctx)
	}
	for _, p := range r.proxies {
		c, _ := p.Snapshot()
		s.Counts = append(s.Counts, c)
		s.Down = append(s.Down, p.Down())
	}
	s.CPU, s.Client = r.env.serverCPU(), clientCPU(r.client)
	r.snaps[name] = s
	switch name {
	case phaseQueued:
		r.starts = append(r.starts, s)
	case phaseDrained:
		r.ends = append(r.ends, s)
	}
	return nil
}

// clientCPU returns the CPU time of the process pid names so far, or -1
// when it cannot be read.
func clientCPU(pid func() int) time.Duration {
	if pid == nil {
		return -1
	}
	return cpuOf(pid())
}

// cpuOf returns the CPU time process pid has used so far, or -1 when it
// cannot be read (no process: pid 0; not Linux).
func cpuOf(pid int) time.Duration {
	if pid == 0 {
		return -1
	}
	d, err := processCPU(pid)
	if err != nil {
		return -1
	}
	return d
}

// waitQuiet waits until the proxies have counted no request for quiet.
func waitQuiet(ctx context.Context, proxies []*countingProxy, quiet time.Duration) error {
	total := func() int64 {
		var n int64
		for _, p := range proxies {
			c, connects := p.Snapshot()
			n += c.total() + connects
		}
		return n
	}
	last := total()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the clients to go quiet: %w", ctx.Err())
		case <-time.After(quiet):
		}
		now := total()
		if now == last {
			return nil
		}
		last = now
	}
}

// intervals returns the snapshots at the start and end of each measured
// stretch: one from phaseReady to phaseMeasured, or for a handoff or a
// failover one per repetition, from phaseQueued to phaseDrained, or for
// many locks two: the acquire-all (phaseReady to phaseHeld) and the
// release-all (phaseRelease to phaseMeasured).
func (r *recorder) intervals(workload string) [][2]snapshot {
	if workload == wManyLocks {
		var out [][2]snapshot
		for _, iv := range [][2]string{{phaseReady, phaseHeld}, {phaseRelease, phaseMeasured}} {
			from, ok1 := r.snaps[iv[0]]
			to, ok2 := r.snaps[iv[1]]
			if !ok1 || !ok2 {
				return nil
			}
			out = append(out, [2]snapshot{from, to})
		}
		return out
	}
	if stretched(workload) {
		var out [][2]snapshot
		for i := range min(len(r.starts), len(r.ends)) {
			out = append(out, [2]snapshot{r.starts[i], r.ends[i]})
		}
		return out
	}
	from, ok1 := r.snaps[phaseReady]
	to, ok2 := r.snaps[phaseMeasured]
	if !ok1 || !ok2 {
		return nil
	}
	return [][2]snapshot{{from, to}}
}
