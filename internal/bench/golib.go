package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// goLib is a library driven in this process: zklock, or go-zookeeper.
type goLib struct {
	lib            string
	open           opener
	workloads      []string
	sessionTimeout time.Duration
}

// process implements library: Go libraries run in the tool's process.
func (g *goLib) process() int { return os.Getpid() }

// newZklockLib returns zklock: Mutex (one per lock of many locks too),
// Semaphore, ReadWriteLock's read side, Election.
func newZklockLib(sessionTimeout time.Duration) *goLib {
	return &goLib{lib: libZklock, open: openZklock, sessionTimeout: sessionTimeout,
		workloads: []string{wUncontended, wContended, wHandoff, wSemaphore, wRWRead, wFailover, wManyLocks}}
}

// newZKLib returns go-zookeeper: zk.Lock for the mutex workloads (one per
// lock of many locks too), raw create and delete for the floor.
func newZKLib(sessionTimeout time.Duration) *goLib {
	return &goLib{lib: libZK, open: openZK, sessionTimeout: sessionTimeout,
		workloads: []string{wFloor, wUncontended, wContended, wHandoff, wManyLocks}}
}

// name implements library.
func (g *goLib) name() string { return g.lib }

// supports implements library.
func (g *goLib) supports(w string) bool { return slices.Contains(g.workloads, w) }

// run implements library.
func (g *goLib) run(ctx context.Context, sp spec, ep endpoints, ph phaser) (r raw, err error) {
	set := &sessionSet{}
	defer func() {
		if cerr := set.closeAll(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	switch sp.Workload {
	case wFloor, wUncontended:
		r, err = g.pairs(ctx, sp, ep, ph, set)
	case wHandoff:
		r, err = g.handoff(ctx, sp, ep, ph, set)
	case wFailover:
		r, err = g.failover(ctx, sp, ep, ph, set)
	case wManyLocks:
		r, err = g.manyLocks(ctx, sp, ep, ph, set)
	default:
		r, err = g.loop(ctx, sp, ep, ph, set)
	}
	return r, dnf(ctx, err)
}

// dnf wraps err with errDNF when ctx's deadline has passed.
func dnf(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", errDNF, err)
	}
	return err
}

// recipe makes the participant a workload uses on a session.
func (g *goLib) recipe(s goSession, sp spec, p string) (locker, error) {
	switch sp.Workload {
	case wFloor:
		return s.floor(p)
	case wSemaphore:
		return s.semaphore(p, sp.Leases)
	case wRWRead:
		return s.readLock(p)
	case wFailover:
		return s.leader(p)
	}
	return s.mutex(p)
}

// createParents creates p and its missing parents as persistent nodes.
func createParents(c *zk.Conn, p string) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := range parts {
		cur := "/" + path.Join(parts[:i+1]...)
		_, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// warm runs n acquire+release pairs of l, not measured.
func warm(ctx context.Context, l locker, n int) error {
	for i := 0; i < n; i++ {
		if err := l.acquire(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if err := l.release(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// pairs is floor and uncontended: one session, Warmup unmeasured pairs,
// then N timed acquire+release pairs, all on the lock's path.
func (g *goLib) pairs(ctx context.Context, sp spec, ep endpoints, ph phaser, set *sessionSet) (raw, error) {
	ss, err := connectN(ctx, g.open, ep.Servers, 1, g.sessionTimeout, set)
	if err != nil {
		return raw{}, err
	}
	l, err := g.recipe(ss[0], sp, sp.Path)
	if err != nil {
		return raw{}, err
	}
	if err := warm(ctx, l, sp.Warmup); err != nil {
		return raw{}, err
	}
	if err := ph(ctx, phaseReady); err != nil {
		return raw{}, err
	}
	r := raw{Ops: int64(sp.N), LatUS: make([]int64, sp.N)}
	start := time.Now()
	for i := range r.LatUS {
		t0 := time.Now()
		if err := l.acquire(ctx); err != nil {
			return raw{}, fmt.Errorf("pair %d: %w", i, err)
		}
		if err := l.release(); err != nil {
			return raw{}, fmt.Errorf("pair %d: %w", i, err)
		}
		r.LatUS[i] = time.Since(t0).Microseconds()
	}
	r.Seconds = time.Since(start).Seconds()
	return r, ph(ctx, phaseMeasured)
}

// loop is contended, semaphore and rwread: C sessions each loop acquire,
// count the holders, release, for Dur; more than maxHolders at once is a
// violation. Acquisitions whose acquire returned before Dur ran out count.
func (g *goLib) loop(ctx context.Context, sp spec, ep endpoints, ph phaser, set *sessionSet) (raw, error) {
	ss, err := g.warmSessions(ctx, sp, ep.Servers, sp.C, set)
	if err != nil {
		return raw{}, err
	}
	ls := make([]locker, len(ss))
	for i, s := range ss {
		if ls[i], err = g.recipe(s, sp, sp.Path); err != nil {
			return raw{}, err
		}
	}
	if err := ph(ctx, phaseReady); err != nil {
		return raw{}, err
	}
	r := raw{PerSession: make([]int64, len(ls)), Seconds: sp.Dur.Seconds()}
	var holders, violations atomic.Int64
	start := make(chan struct{})
	cr := set.newCrew()
	stopAt := time.Now().Add(sp.Dur)
	for i, l := range ls {
		cr.spawn(func() error {
			<-start
			return spin(ctx, l, stopAt, int64(sp.maxHolders()), &holders, &violations, &r.PerSession[i])
		})
	}
	close(start)
	if err := cr.wait(ctx); err != nil {
		return raw{}, err
	}
	for _, n := range r.PerSession {
		r.Ops += n
	}
	r.Violations = violations.Load()
	return r, ph(ctx, phaseMeasured)
}

// warmSessions connects n sessions to servers and runs the workload's
// unmeasured pairs on the first.
func (g *goLib) warmSessions(ctx context.Context, sp spec, servers []string, n int, set *sessionSet) ([]goSession, error) {
	ss, err := connectN(ctx, g.open, servers, n, g.sessionTimeout, set)
	if err != nil {
		return nil, err
	}
	if err := g.preWarm(ctx, ss[0], sp); err != nil {
		return nil, err
	}
	return ss, nil
}

// preWarm runs the unmeasured pairs of the workload's recipe on the
// warm-up path.
func (g *goLib) preWarm(ctx context.Context, s goSession, sp spec) error {
	l, err := g.recipe(s, sp, sp.WarmPath)
	if err != nil {
		return err
	}
	return warm(ctx, l, sp.Warmup)
}

// spin loops acquire, holder check, release until stopAt, counting the
// acquisitions that came before it.
func spin(ctx context.Context, l locker, stopAt time.Time, max int64, holders, violations *atomic.Int64, count *int64) error {
	for {
		if err := l.acquire(ctx); err != nil {
			return err
		}
		now := time.Now()
		if holders.Add(1) > max {
			violations.Add(1)
		}
		holders.Add(-1)
		if err := l.release(); err != nil {
			return err
		}
		if !now.Before(stopAt) {
			return nil
		}
		*count++
	}
}

// handoff: W sessions queue on one Mutex held by a gate session. Once the
// phaser has seen the W+1 nodes, the gate releases; the time until every
// waiter has acquired and released is measured.
func (g *goLib) handoff(ctx context.Context, sp spec, ep endpoints, ph phaser, set *sessionSet) (raw, error) {
	gs, err := g.warmSessions(ctx, sp, ep.Gate, 1, set)
	if err != nil {
		return raw{}, err
	}
	gate, err := gs[0].mutex(sp.Path)
	if err != nil {
		return raw{}, err
	}
	if err := gate.acquire(ctx); err != nil {
		return raw{}, fmt.Errorf("gate: %w", err)
	}
	ss, err := connectN(ctx, g.open, ep.Servers, sp.N, g.sessionTimeout, set)
	if err != nil {
		return raw{}, err
	}
	if err := ph(ctx, phaseReady); err != nil {
		return raw{}, err
	}
	var seconds float64
	for rep := range sp.reps() {
		if rep > 0 {
			if err := gate.acquire(ctx); err != nil {
				return raw{}, fmt.Errorf("gate, repetition %d: %w", rep+1, err)
			}
		}
		s, err := handoffOnce(ctx, gate, ss, sp.Path, ph, set)
		if err != nil {
			return raw{}, err
		}
		seconds += s
	}
	return raw{Ops: int64(sp.N * sp.reps()), Seconds: seconds}, ph(ctx, phaseMeasured)
}

// handoffOnce queues a waiter of each session behind the gate, which
// holds the lock, releases the gate and times until every waiter is done.
// The waiters' lock objects are part of what a waiter costs: they are
// made here.
func handoffOnce(ctx context.Context, gate locker, ss []goSession, p string, ph phaser, set *sessionSet) (float64, error) {
	ls := make([]locker, len(ss))
	for i, s := range ss {
		var err error
		if ls[i], err = s.mutex(p); err != nil {
			return 0, err
		}
	}
	seconds, err := queueAndRelease(ctx, gate, ls, ph, set)
	if err != nil {
		return 0, err
	}
	return seconds, ph(ctx, phaseDrained)
}

// queueAndRelease starts every waiter, waits for the phaser to see them
// queued, releases the gate and times until every waiter is done.
func queueAndRelease(ctx context.Context, gate locker, ls []locker, ph phaser, set *sessionSet) (float64, error) {
	cr := set.newCrew()
	for _, l := range ls {
		cr.spawn(func() error {
			if err := l.acquire(ctx); err != nil {
				return fmt.Errorf("waiter: %w", err)
			}
			return l.release()
		})
	}
	if err := ph(ctx, phaseQueued); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := gate.release(); err != nil {
		return 0, fmt.Errorf("gate release: %w", err)
	}
	if err := cr.wait(ctx); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}
