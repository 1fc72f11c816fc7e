package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zklock/zklock/internal/zktest"
)

// faultKind is one kind of fault the monkey injects.
type faultKind int

const (
	killLeader faultKind = iota
	killFollower
	isolateLeader
	isolateFollower
	shortPause
	longPause
	cutMidCreate
	pauseHolderShort
	pauseHolderLong
	cutHolder
	isolateHolder
	pauseNext
	numFaults
)

func (k faultKind) String() string {
	return [...]string{
		"kill the leader (SIGKILL), restart it",
		"kill a follower (SIGKILL), restart it",
		"partition the leader from the others",
		"partition a follower from the others",
		"pause a session, shorter than its timeout",
		"pause a session, longer than its timeout",
		"cut a session in the middle of a create",
		"pause a holder's session, shorter than its timeout",
		"pause a holder's session, longer than its timeout",
		"cut a holder's session",
		"partition the server a holder's session is on",
		"pause the next in the mutex's or election's queue, either side of its timeout",
	}[k]
}

// monkey injects faults on a seeded schedule, one at a time, each healed
// before the next.
type monkey struct {
	cluster  zktest.Cluster
	part     zktest.Partitioner // nil: the cluster cannot be partitioned
	sessions []*session
	admin    admin       // reads the Mutex's queue, beside the faults
	only     []faultKind // the kinds to inject; nil: all
	rnd      *rand.Rand
	timeout  time.Duration // the sessions' timeout
	calm     time.Duration // quiet time between faults
	injected [numFaults]atomic.Int64
	hits     [numFaults][numHits]atomic.Int64    // what each injected fault struck
	byKind   [numKinds][numKindHits]atomic.Int64 // what faults did to each kind of section
	turns    [numFaults]int                      // faults of each kind aimed so far; the monkey's own
	kindTurn int                                 // holders aimed at so far, for holder's turn of kinds
	logf     func(format string, args ...any)
}

// run injects faults until ctx ends, in rounds: every kind once per
// round, in a random order.
func (m *monkey) run(ctx context.Context) error {
	var kinds []faultKind
	for k := faultKind(0); k < numFaults; k++ {
		partition := k == isolateLeader || k == isolateFollower || k == isolateHolder
		if (len(m.only) == 0 || slices.Contains(m.only, k)) && (m.part != nil || !partition) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		<-ctx.Done()
		return nil
	}
	var order []int
	for ctx.Err() == nil {
		if len(order) == 0 {
			order = m.rnd.Perm(len(kinds))
		}
		k := kinds[order[0]]
		order = order[1:]
		m.logf("fault: %v", k)
		err := m.inject(ctx, k)
		if errors.Is(err, errNotInjected) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%v: %w", k, err)
		}
		m.injected[k].Add(1)
		pause(ctx, m.between(m.calm/2, m.calm))
	}
	return nil
}

// inject causes one fault and heals it. A fault in progress when ctx ends
// is healed at once.
func (m *monkey) inject(ctx context.Context, k faultKind) error {
	switch k {
	case killLeader, killFollower:
		i, err := m.pick(k)
		if err != nil {
			return err
		}
		return m.kill(ctx, k, i)
	case isolateLeader, isolateFollower:
		i, err := m.pick(k)
		if err != nil {
			return err
		}
		return m.isolate(ctx, k, i)
	case shortPause, longPause:
		return m.pauseSession(ctx, k, m.anySession(k))
	case cutMidCreate:
		return m.cutCreate(ctx)
	case pauseHolderShort, pauseHolderLong:
		return m.pauseSession(ctx, k, m.holder())
	case cutHolder:
		s := m.holder()
		m.logf("  session %d (%v, 0x%x)", s.idx, s.policy, s.sid())
		m.strike(k, []*session{s})
		s.faults.Cut()
		return nil
	case isolateHolder:
		i := m.serverOf(m.holder())
		if i < 0 {
			return errNotInjected // between servers
		}
		return m.isolate(ctx, k, i)
	case pauseNext:
		return m.pauseSession(ctx, k, m.nextInLine())
	}
	return fmt.Errorf("unknown fault %d", k)
}

// kill kills server i and restarts it after a while.
func (m *monkey) kill(ctx context.Context, k faultKind, i int) error {
	m.strike(k, m.onServer(i))
	if err := m.cluster.Kill(i); err != nil {
		return err
	}
	pause(ctx, m.between(time.Second, 3*time.Second))
	return m.cluster.Start(i)
}

// isolate cuts server i off from the others for a while, then heals.
func (m *monkey) isolate(ctx context.Context, k faultKind, i int) error {
	m.strike(k, m.onServer(i))
	if err := m.part.Isolate(i); err != nil {
		return err
	}
	pause(ctx, m.between(time.Second, 2*m.timeout))
	return m.heal(i)
}

// pauseSession silences s's traffic: shorter than its timeout, longer,
// or (pauseNext) either.
func (m *monkey) pauseSession(ctx context.Context, k faultKind, s *session) error {
	m.logf("  session %d (%v, 0x%x)", s.idx, s.policy, s.sid())
	d := m.between(m.timeout*7/10, m.timeout*3/4)
	switch {
	case k == longPause || k == pauseHolderLong:
		d = m.timeout + m.between(m.timeout/4, m.timeout/2)
	case k == pauseNext:
		d = m.between(m.timeout*7/10, m.timeout*3/2)
	}
	m.strike(k, []*session{s})
	s.faults.Pause()
	pause(ctx, d)
	s.faults.Resume()
	return nil
}

// pick returns the leader's index for a fault on the leader (every other
// time once a holder's session is on it, if one comes soon), else a
// follower's: every other time one with a holder's session on it, if
// there is one.
func (m *monkey) pick(k faultKind) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := zktest.Leader(ctx, m.cluster)
	if err != nil {
		return 0, err
	}
	if k == killLeader || k == isolateLeader {
		if m.turn(k)%2 == 0 {
			m.awaitHolderOn(l, 2*m.timeout)
		}
		return l, nil
	}
	n := len(m.cluster.Servers())
	i := (l + 1 + m.rnd.IntN(n-1)) % n
	if m.turn(k)%2 == 1 {
		return i, nil
	}
	for j := range n - 1 {
		f := (i + j) % n
		if f == l {
			f = (f + 1) % n
		}
		if slices.ContainsFunc(m.onServer(f), func(s *session) bool { return s.status() == hitHolder }) {
			return f, nil
		}
	}
	return i, nil
}

// awaitHolderOn waits, at most d, until a session connected to server i
// holds a lock.
func (m *monkey) awaitHolderOn(i int, d time.Duration) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond) // polling the workers' state; nothing to wait on
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if slices.ContainsFunc(m.onServer(i), func(s *session) bool { return s.status() == hitHolder }) {
			return
		}
		<-tick.C
	}
}

// heal ends a partition and waits until server i serves again, as a
// leader or follower.
func (m *monkey) heal(i int) error {
	if err := m.part.Heal(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return zktest.WaitServing(ctx, m.cluster.Servers()[i])
}

// cutCreate cuts a session's connection right after it sent a create, and
// waits for the cut: the workers create all the time. A holder's session
// is cut while another of its workers queues.
func (m *monkey) cutCreate(ctx context.Context) error {
	s := m.anySession(cutMidCreate)
	m.logf("  session %d (%v, 0x%x)", s.idx, s.policy, s.sid())
	f := s.faults
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-f.CutOnCreate():
		m.strike(cutMidCreate, []*session{s})
		return nil
	case <-ctx.Done():
		return errNotInjected
	case <-t.C:
		return errors.New("no create within 30s")
	}
}

// errNotInjected means the run ended before the fault happened.
var errNotInjected = errors.New("not injected")

// between returns a random duration in [lo, hi).
func (m *monkey) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(m.rnd.Int64N(int64(hi-lo)))
}

// counts returns how many faults of each kind were injected, what they
// hit, and what they did to each kind of section.
func (m *monkey) counts() (c [numFaults]int64, h [numFaults][numHits]int64, byKind [numKinds][numKindHits]int64) {
	for i := range c {
		c[i] = m.injected[i].Load()
		for j := range h[i] {
			h[i][j] = m.hits[i][j].Load()
		}
	}
	for k := range byKind {
		for j := range byKind[k] {
			byKind[k][j] = m.byKind[k][j].Load()
		}
	}
	return c, h, byKind
}
