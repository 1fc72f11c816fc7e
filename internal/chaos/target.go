package main

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// occupancy is what a session's workers are doing, for aiming faults and
// for saying what each fault hit. Its workers write it; the monkey reads it.
type occupancy struct {
	holding   atomic.Int32 // workers in a section (from the grant until Release returns)
	waiting   atomic.Int32 // workers in Acquire
	longUntil atomic.Int64 // planned end (Unix ns) of the long section in progress, 0 if none
}

// hit is what a fault found on the sessions it struck.
type hit int

const (
	hitHolder hit = iota // a session of a current holder
	hitWaiter            // no holder, but a session with a worker in Acquire
	hitIdle              // sessions between sections
	numHits
)

// status returns what s is doing now.
func (s *session) status() hit {
	switch {
	case s.occ.holding.Load() > 0:
		return hitHolder
	case s.occ.waiting.Load() > 0:
		return hitWaiter
	}
	return hitIdle
}

// strike records what a fault of kind k hit: a holder if any of the
// sessions struck held a lock, else a waiter if any waited, else idle.
func (m *monkey) strike(k faultKind, struck []*session) {
	h := hitIdle
	for _, s := range struck {
		h = min(h, s.status())
	}
	m.hits[k][h].Add(1)
	m.logf("  hit %v: %s", h, names(struck))
}

func (h hit) String() string { return [...]string{"holder", "waiter", "idle"}[h] }

func names(ss []*session) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("s%02d(%v, %v)", s.idx, s.policy, s.status()))
	}
	return fmt.Sprint(out)
}

// anySession picks the session of a fault that is aimed at no one in
// particular: at random, but in turn among the holders' sessions, the
// waiters' and the idle ones (among all when the turn's are none), so
// that each is exercised whatever the workers happen to be doing.
func (m *monkey) anySession(k faultKind) *session {
	want := hit(m.turn(k) % int(numHits))
	if want == hitHolder {
		return m.holder() // preferably one in a long section: it still holds when a cut on its next create comes
	}
	var set []*session
	for _, s := range m.sessions {
		if s.status() == want {
			set = append(set, s)
		}
	}
	if len(set) == 0 {
		set = m.sessions
	}
	return set[m.rnd.IntN(len(set))]
}

// turn counts a choice for a fault of kind k and returns how many came
// before.
func (m *monkey) turn(k faultKind) int {
	m.turns[k]++
	return m.turns[k] - 1
}

// onServer returns the sessions connected to server i now.
func (m *monkey) onServer(i int) []*session {
	srv := m.cluster.Servers()[i]
	var out []*session
	for _, s := range m.sessions {
		if s.client.Conn().Server() == srv {
			out = append(out, s)
		}
	}
	return out
}

// serverOf returns the index of the server s is connected to, or -1.
func (m *monkey) serverOf(s *session) int {
	return slices.Index(m.cluster.Servers(), s.client.Conn().Server())
}

// holder picks the session of a current holder: one in a long section if
// there is one (a long section is where a loss can go unnoticed), else any
// holder, else any session. Where it lands in the hold is random, as the
// monkey's schedule is unrelated to the workers'.
func (m *monkey) holder() *session {
	var long, any []*session
	now := time.Now().UnixNano()
	for _, s := range m.sessions {
		if s.occ.longUntil.Load() > now {
			long = append(long, s)
		}
		if s.occ.holding.Load() > 0 {
			any = append(any, s)
		}
	}
	for _, set := range [][]*session{long, any, m.sessions} {
		if len(set) > 0 {
			return set[m.rnd.IntN(len(set))]
		}
	}
	return nil
}

// nextInLine returns the session of a waiter that the Mutex's next grant
// goes to: the first in its queue whose session also holds another lock
// (its grant and that hold's loss may then meet), else the first in the
// queue. With no queue, or none readable through the faults, a holder's.
func (m *monkey) nextInLine() *session {
	base := path.Join(root, "mutex")
	kids, _, err := m.admin.Children(base)
	if err != nil || len(kids) < 2 {
		return m.holder()
	}
	// Sequence numbers are the last ten characters of every lock node.
	slices.SortFunc(kids, func(a, b string) int { return cmp.Compare(a[len(a)-10:], b[len(b)-10:]) })
	var first *session
	for _, kid := range kids[1:] {
		_, st, err := m.admin.Get(path.Join(base, kid))
		if err != nil {
			continue
		}
		for _, s := range m.sessions {
			if s.client.Conn().SessionID() != st.EphemeralOwner {
				continue
			}
			if s.status() == hitHolder {
				return s
			}
			first = cmp.Or(first, s)
		}
	}
	if first == nil {
		return m.holder()
	}
	return first
}

// admin is the connection the monkey reads the queue with.
type admin interface {
	Children(p string) ([]string, *zk.Stat, error)
	Get(p string) ([]byte, *zk.Stat, error)
}
