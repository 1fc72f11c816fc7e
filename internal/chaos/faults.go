package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	}[k]
}

// monkey injects faults on a seeded schedule, one at a time, each healed
// before the next.
type monkey struct {
	cluster  zktest.Cluster
	part     zktest.Partitioner // nil: the cluster cannot be partitioned
	sessions []*session
	only     []faultKind // the kinds to inject; nil: all
	rnd      *rand.Rand
	timeout  time.Duration // the sessions' timeout
	calm     time.Duration // quiet time between faults
	injected [numFaults]atomic.Int64
	logf     func(format string, args ...any)
}

// run injects faults until ctx ends: every kind once first, in a random
// order, then kinds at random.
func (m *monkey) run(ctx context.Context) error {
	kinds := m.only
	if len(kinds) == 0 {
		for k := faultKind(0); k < numFaults; k++ {
			kinds = append(kinds, k)
		}
	}
	first := m.rnd.Perm(len(kinds))
	for i := 0; ctx.Err() == nil; i++ {
		k := kinds[m.rnd.IntN(len(kinds))]
		if i < len(first) {
			k = kinds[first[i]]
		}
		if (k == isolateLeader || k == isolateFollower) && m.part == nil {
			continue
		}
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
		i, err := m.pick(k == killLeader)
		if err != nil {
			return err
		}
		if err := m.cluster.Kill(i); err != nil {
			return err
		}
		pause(ctx, m.between(time.Second, 3*time.Second))
		return m.cluster.Start(i)
	case isolateLeader, isolateFollower:
		i, err := m.pick(k == isolateLeader)
		if err != nil {
			return err
		}
		if err := m.part.Isolate(i); err != nil {
			return err
		}
		pause(ctx, m.between(time.Second, 2*m.timeout))
		return m.heal(i)
	case shortPause, longPause:
		s := m.sessions[m.rnd.IntN(len(m.sessions))]
		m.logf("  session %d (%v, 0x%x)", s.idx, s.policy, s.client.Conn().SessionID())
		f := s.faults
		f.Pause()
		d := m.between(m.timeout*7/10, m.timeout*3/4)
		if k == longPause {
			d = m.timeout + m.between(m.timeout/4, m.timeout/2)
		}
		pause(ctx, d)
		f.Resume()
		return nil
	case cutMidCreate:
		return m.cutCreate(ctx)
	}
	return fmt.Errorf("unknown fault %d", k)
}

// pick returns the leader's index, or a follower's.
func (m *monkey) pick(leader bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := zktest.Leader(ctx, m.cluster)
	if err != nil {
		return 0, err
	}
	if leader {
		return l, nil
	}
	n := len(m.cluster.Servers())
	return (l + 1 + m.rnd.IntN(n-1)) % n, nil
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
// waits for the cut: the workers create all the time.
func (m *monkey) cutCreate(ctx context.Context) error {
	s := m.sessions[m.rnd.IntN(len(m.sessions))]
	m.logf("  session %d (%v, 0x%x)", s.idx, s.policy, s.client.Conn().SessionID())
	f := s.faults
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-f.CutOnCreate():
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

// counts returns how many faults of each kind were injected.
func (m *monkey) counts() [numFaults]int64 {
	var c [numFaults]int64
	for i := range c {
		c[i] = m.injected[i].Load()
	}
	return c
}
