package main

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// occupancy is what a session's workers are doing, for aiming faults and
// for saying what each fault hit. Its workers write it; the monkey reads it.
type occupancy struct {
	holding   [numKinds]atomic.Int32 // workers in a section of each kind (from the grant until Release returns)
	waiting   atomic.Int32           // workers in Acquire
	longUntil atomic.Int64           // planned end (Unix ns) of the long section in progress, 0 if none
}

// holds reports whether a worker of the session is in a section of kind k.
func (o *occupancy) holds(k kind) bool { return o.holding[k].Load() > 0 }

// held lists the kinds of section the session is in, as " of mutex+lease",
// or "" if none.
func (o *occupancy) held() string {
	var out []string
	for k := range numKinds {
		if o.holds(k) {
			out = append(out, k.String())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " of " + strings.Join(out, "+")
}

// holdsAny reports whether a worker of the session is in a section.
func (o *occupancy) holdsAny() bool {
	for k := range numKinds {
		if o.holds(k) {
			return true
		}
	}
	return false
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
	case s.occ.holdsAny():
		return hitHolder
	case s.occ.waiting.Load() > 0:
		return hitWaiter
	}
	return hitIdle
}

// kindHit is what faults did to the sections of one kind.
type kindHit int

const (
	struckHolder kindHit = iota // a fault struck a holder's session while it held
	struckAimed                 // of those, faults aimed at a holder
	pausedNext                  // the next in the kind's queue was paused
	numKindHits
)

// aimedAtHolder reports whether k is a fault aimed at a holder's session.
func aimedAtHolder(k faultKind) bool {
	return k == pauseHolderShort || k == pauseHolderLong || k == cutHolder || k == isolateHolder
}

// strike records what a fault of kind k hit: a holder if any of the
// sessions struck held a lock, else a waiter if any waited, else idle;
// and, once per kind of section, that it struck a holder of that kind.
func (m *monkey) strike(k faultKind, struck []*session) {
	h := hitIdle
	var kinds [numKinds]bool
	for _, s := range struck {
		h = min(h, s.status())
		for sk := range kinds {
			kinds[sk] = kinds[sk] || s.occ.holds(kind(sk))
		}
	}
	m.hits[k][h].Add(1)
	for sk, struckOne := range kinds {
		if struckOne {
			m.byKind[sk][struckHolder].Add(1)
		}
		if struckOne && aimedAtHolder(k) {
			m.byKind[sk][struckAimed].Add(1)
		}
	}
	m.logf("  hit %v: %s", h, names(struck))
}

func (h hit) String() string { return [...]string{"holder", "waiter", "idle"}[h] }

func names(ss []*session) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("s%02d(%v, %v%s)", s.idx, s.policy, s.status(), s.occ.held()))
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
		if s.server() == srv {
			out = append(out, s)
		}
	}
	return out
}

// serverOf returns the index of the server s is connected to, or -1.
func (m *monkey) serverOf(s *session) int {
	return slices.Index(m.cluster.Servers(), s.server())
}

// holder picks the session of a current holder: one in a long section if
// there is one (a long section is where a loss can go unnoticed), else any
// holder, else any session. Among them it aims at each kind of section in
// turn (see inTurn), so that every kind, leaders too, meets faults aimed
// at holders. Where it lands in the hold is random, as the monkey's
// schedule is unrelated to the workers'.
func (m *monkey) holder() *session {
	var long, any []*session
	now := time.Now().UnixNano()
	for _, s := range m.sessions {
		if s.occ.longUntil.Load() > now {
			long = append(long, s)
		}
		if s.occ.holdsAny() {
			any = append(any, s)
		}
	}
	for _, set := range [][]*session{long, any, m.sessions} {
		if len(set) > 0 {
			return m.inTurn(set)
		}
	}
	return nil
}

// inTurn picks a session of set that holds a section of the kind whose
// turn it is, or of the next kind in turn that set holds, at random among
// them; any session of set if none holds.
func (m *monkey) inTurn(set []*session) *session {
	t := m.kindTurn
	m.kindTurn++
	for i := range int(numKinds) {
		k := kind((t + i) % int(numKinds))
		var of []*session
		for _, s := range set {
			if s.occ.holds(k) {
				of = append(of, s)
			}
		}
		if len(of) > 0 {
			return of[m.rnd.IntN(len(of))]
		}
	}
	return set[m.rnd.IntN(len(set))]
}

// queues are the locks whose next in line pauseNext aims at, in turn.
var queues = []kind{kindMutex, kindLeader}

// nextInLine returns the session of a waiter that the next grant of the
// Mutex or the Election (in turn, the other if that one has no queue)
// goes to, and counts it for that kind. With no queue, or none readable
// through the faults, it returns a holder's.
func (m *monkey) nextInLine() *session {
	t := m.turn(pauseNext)
	for i := range queues {
		k := queues[(t+i)%len(queues)]
		if s := m.nextIn(path.Join(root, k.lock())); s != nil {
			m.byKind[k][pausedNext].Add(1)
			return s
		}
	}
	return m.holder()
}

// nextIn returns the session of the next in the queue under base: the
// first after the head whose session also holds another lock (its grant
// and that hold's loss may then meet), else the first after the head; nil
// if there is none, or the queue cannot be read.
func (m *monkey) nextIn(base string) *session {
	kids, _, err := m.admin.Children(base)
	if err != nil || len(kids) < 2 {
		return nil
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
			if s.sid() != st.EphemeralOwner {
				continue
			}
			if s.status() == hitHolder {
				return s
			}
			first = cmp.Or(first, s)
		}
	}
	return first
}

// admin is the connection the monkey reads the queue with.
type admin interface {
	Children(p string) ([]string, *zk.Stat, error)
	Get(p string) ([]byte, *zk.Stat, error)
}
