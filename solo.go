package zklock

import (
	"context"
	"strconv"
	"sync"

	"github.com/go-zookeeper/zk"
)

// solo lets a lock that one Client keeps taking alone skip the listing: such
// an acquire sends its create and nothing else, so that an acquire and
// release cost the floor's two requests (and the hold's watch on its own
// node, as any hold, if it lives long enough to set it). It keeps what the
// Client knows of its last node of the lock (see soloTable), and grants a new node from its create's
// reply alone when that proves the node is the only one under the lock's
// parent:
//
//   - ZooKeeper numbers a sequential node with the count of the creates
//     under its parent so far (the parent's cversion as it persists it), so
//     a node numbered one above our last node was created next: nothing
//     else was created under that parent in between;
//   - but only under that parent: a container parent reaped and created
//     again counts from zero, so the parent must be the one our last node
//     was in. An exists watch on the parent, set on the connection that
//     carries the create and not fired when its reply comes, says so: one
//     connection delivers a watch's event before the reply to any request
//     sent after the change. A watch set on another connection says
//     nothing (go-zookeeper sets watches again after a reconnect, possibly
//     after requests that waited for the connection), so the watch is
//     bound to the connection it was set on;
//   - our last node was alone: a listing after its create showed only it,
//     or it was itself granted this way; and it is gone: its delete
//     returned. Any node created after it would have taken our number.
//
// A node created under other conditions is decided from a listing, as
// ever. The fast way is tried only after a create that was itself numbered
// one above the node before it, so that a lock taken in turn by several
// processes, where the guess would fail and cost a second round trip,
// keeps listing behind the create. The parent's watch is set once per
// solo, with the listing of an acquire that follows an acquire alone, and
// again after a new connection; go-zookeeper keeps each watch's channel
// until the parent changes or the session ends (it cannot remove one):
// one per lock and connection, and one more for a lock whose entry the
// table forgot while a Mutex still used it.
//
// The numbering is ZooKeeper's implementation (3.8.0 here), not its
// documented contract, so every listing that makes a node count as alone
// also checks it against the parent's counts (see listed).
type solo struct {
	mu     sync.Mutex
	last   string // name of our last node, "" if none
	seq    int64  // its sequence number
	streak bool   // its sequence was one above the node before it
	alone  bool   // it was the only node under the parent
	gone   bool   // its delete returned
	lczxid int64  // creation zxid of the parent it was in, 0 if unknown

	parent <-chan zk.Event // exists watch on the parent, nil if none
	czxid  int64           // the watched parent's creation zxid
	conn   uint64          // the connection the watch was set on (see Client.connEpoch)
	arming turn            // a watch is being set
}

// soloTable is what a Client knows of the locks it takes alone: one solo
// per lock, shared by every Mutex of the Client and lock, so that a Mutex
// made per call skips the listing as one kept does. Sharing one is what
// the goroutines sharing one Mutex have always done: the proof rests on
// ZooKeeper's count of creates, whoever creates. The table holds at most
// maxSolos; beyond, a lock's entry is forgotten (its Mutexes keep theirs),
// and a Mutex made afterwards starts with a new one, which lists until it
// has learnt again: two solos of one lock prove nothing wrong either, since
// a node either one did not create moves the count past what each expects.
type soloTable struct {
	mu sync.Mutex
	m  map[any]*solo // by lockID, boxed as liveTable's keys are; guarded by mu
}

// maxSolos bounds a Client's soloTable: a few hundred kilobytes.
const maxSolos = 4096

// of returns the solo of the lock id, a boxed lockID (see liveTable),
// making it if needed.
func (t *soloTable) of(id any) *solo {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.m[id]; s != nil {
		return s
	}
	if t.m == nil {
		t.m = make(map[any]*solo)
	}
	if len(t.m) >= maxSolos {
		for k := range t.m { // forget one, any
			delete(t.m, k)
			break
		}
	}
	s := &solo{}
	t.m[id] = s
	return s
}

// soloOK reports whether li may grant without a listing: li is a Mutex's,
// its driver allows it (see Shortcuts.Solo), and the Client knows its
// connections (see Client.connEpoch).
func (li *lockInternals) soloOK() bool {
	return li.solo != nil && li.c.connEpoch() != 0 && li.shortcuts().Solo
}

// watching reports whether the parent's watch stands, on connection conn,
// over the parent our last node was in; s.mu must be held. A fired watch
// is dropped.
func (s *solo) watching(conn uint64) bool {
	if s.parent != nil && fired(s.parent) {
		s.parent = nil
	}
	return s.parent != nil && conn != 0 &&
		conn == s.conn &&
		s.czxid == s.lczxid
}

// ready reports whether the next create may be granted from its reply: the
// last node was alone and is gone, it continued a streak, and the
// parent's watch stands on connection conn, the current one.
func (s *solo) ready(conn uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastFree() && s.streak && s.watching(conn)
}

// arm sets the parent's watch beside an acquire's requests, if the last
// node was alone and is gone and no watch stands: the next acquire alone
// can then skip its listing. The channel, nil if arm sends nothing, is
// closed once the watch is set or has failed.
func (li *lockInternals) arm() <-chan struct{} {
	s, c := li.solo, li.c
	s.mu.Lock()
	if !s.lastFree() || s.watching(c.connEpoch()) || !s.arming.take() {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	done := make(chan struct{})
	if !c.goFunc(func() {
		defer close(done)
		conn := c.connEpoch()
		ok, st, ch, err := c.zc.ExistsW(context.Background(), li.basePath)
		if err != nil || !ok || c.connEpoch() != conn {
			ch = nil
		}
		s.armed(ch, st, conn)
	}) {
		s.armed(nil, nil, 0)
		close(done)
	}
	return done
}

// armed ends an arming: ch is the parent's watch, set on connection conn,
// when its stat was st; nil if it failed.
func (s *solo) armed(ch <-chan zk.Event, st *zk.Stat, conn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arming.done()
	if ch != nil && st != nil && conn != 0 {
		s.parent, s.czxid, s.conn = ch, st.Czxid, conn
	}
}

// created records our new node name, and reports whether it is proved
// alone by its number (see solo): conn0 and conn1 are the connection
// before its create was sent and after the reply came.
func (s *solo) created(name string, conn0, conn1 uint64) bool {
	seq, ok := seqOf(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	next := ok && s.last != "" && seq == s.seq+1
	proved := next && s.lastFree() && conn0 == conn1 && s.watching(conn1)
	s.last, s.seq, s.streak, s.alone, s.gone, s.lczxid = name, seq, next, proved, false, 0
	if proved {
		s.lczxid = s.czxid
	}
	if !ok {
		s.last = ""
	}
	return proved
}

// lastFree reports whether our last node was alone and is gone, so that
// no node but a newer one can be under the parent; s.mu must be held.
func (s *solo) lastFree() bool {
	return s.alone && s.gone
}

// listed records a listing taken after the create of name, with the
// parent's stat then: name is alone if it is the only child, and if the
// parent's counts say that its number counts the parent's creates. A
// parent's cversion, as ZooKeeper reports it, counts creates and deletes
// of children: with one child, created last, whose number n counts the
// creates before it, it is 2(n+1)-1. A server that numbered otherwise is
// caught here, before any number is trusted.
func (s *solo) listed(name string, children []string, st *zk.Stat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != s.last || st == nil {
		return
	}
	s.alone = len(children) == 1 && children[0] == name && st.NumChildren == 1 && int64(st.Cversion) == 2*s.seq+1
	s.lczxid = st.Czxid
}

// deleted records that the node name is gone.
func (s *solo) deleted(name string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == s.last {
		s.gone = true
	}
}

// seqOf returns the sequence number ZooKeeper appended to name.
func seqOf(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	return n, err == nil && n >= 0
}
