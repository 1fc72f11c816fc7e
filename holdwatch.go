package zklock

import (
	"errors"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// holdWatch follows the nodes of a Client's holds and ends a hold when it
// is lost: its node deleted, its session lost, its connection suspended
// (under StandardPolicy), or the Client closed. It keeps no goroutine per
// hold. A Client made by Connect receives every event of its connection,
// node events included, through go-zookeeper's event callback, which never
// drops one and calls it before it fills the watch's own channel; run, the
// goroutine that applies session events, routes them here by path, and
// after every change of the connection's state sweeps the holds once. A
// Client made by NewClient has no callback: each watch's channel is then
// read by a goroutine of its own (follow), whose event comes here too.
//
// A node is known here from before its watch is first set (expect), so
// that no event of that watch can come before its entry: a waiter's event
// is kept for the hold that takes the node over (take). Nothing here waits
// on the network: setting a watch again after a data change (a revocation
// request) runs on a goroutine while it lasts, and the nodes of lost holds
// are deleted by the Client's background queue.
//
// A hold granted at once, from the listing sent behind its create, need
// not watch its own node (see parentWatch): that listing set a child watch
// on the lock's parent, whose first event after it tells of any change of
// the children, our node's deletion included. Such a hold watches its own
// node only when that event comes, or when its token is asked: an
// uncontended lock then costs two requests, its create and its listing,
// as zk.Lock's does, and still learns of its loss.
type holdWatch struct {
	c      *Client
	routed bool // node events come through the Client's callback

	mu      sync.Mutex
	nodes   map[string]*watched     // by full path; guarded by mu
	parents map[string]*parentWatch // by the parent's full path; guarded by mu
	swept   sessionFacts            // the session facts of the last sweep; guarded by mu
}

// parentWatch is the child watch on one lock's parent that its listings
// set, as the holdWatch follows it: the count of its events, and the holds
// that rely on it. It stays in holdWatch.parents while a listing is on its
// way (from before it is sent, so that no event after it can be missed) or
// a hold relies on it.
type parentWatch struct {
	refs   int        // listings not yet decided on, and holds in holds; guarded by holdWatch.mu
	events uint64     // child events seen; guarded by holdWatch.mu
	holds  []*watched // holds relying on it; an entry whose pw is no longer this one is stale; guarded by holdWatch.mu
}

// watched is one node of holdWatch: a waiter's, until its hold takes it.
type watched struct {
	h        *hold        // nil until the node's hold takes it over
	snap     snapshot     // the session facts h depends on
	onRevoke func(string) // h's revocation callback, or nil
	fired    zk.EventType // an event that came before h: a deletion beats a data change; 0 for none
	setting  turn         // the watch is being set (again); a data change meanwhile asks for another round
	pw       *parentWatch // the parent's watch h relies on instead of its own, or nil
}

func newHoldWatch(c *Client, routed bool) *holdWatch {
	return &holdWatch{c: c, routed: routed, nodes: make(map[string]*watched), parents: make(map[string]*parentWatch)}
}

// parentOK reports whether a hold granted at once may rely on its
// parent's watch: no token has been asked (see learn), and the hold ends
// at the first suspension (StandardPolicy), so that it never has to rely
// on the watch across a reconnect. After one, go-zookeeper sets the
// parent's watch again relative to the last zxid it has seen, which
// replies sent after the reconnect can have moved past a deletion made
// during the outage, and ZooKeeper then sets a child watch again without
// firing it; a data watch on the node itself fires for a missing node
// whatever the zxid, so a hold that outlives suspensions (SessionPolicy)
// watches its own node.
func (w *holdWatch) parentOK() bool {
	return w.c.opts.policy == StandardPolicy && !w.c.fencing.Load()
}

// listing records that a listing of parent that sets a child watch is
// about to be sent, and returns the parent's watch and its count of events
// so far, for the node the listing will show (see listed). It returns nil,
// and the listing sets no watch, for a Client without the callback, or
// whose holds may not rely on their parent's watch (see parentOK).
func (w *holdWatch) listing(parent string) (*parentWatch, uint64) {
	if !w.routed || !w.parentOK() {
		return nil, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	pw := w.parents[parent]
	if pw == nil {
		pw = &parentWatch{}
		w.parents[parent] = pw
	}
	pw.refs++
	return pw, pw.events
}

// listed ends a listing recorded by listing: n, if not nil, is the node it
// showed, which may rely on the parent's watch if granted at once (see
// take); any other outcome lets the parent's watch go.
func (w *holdWatch) listed(parent string, pw *parentWatch, events uint64, n *lockNode) {
	if pw == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n != nil {
		n.pw, n.pwEvents = pw, events
		return
	}
	w.unrefLocked(pw, parent)
}

// unrefLocked lets one reference to pw, the watch of parent, go; w.mu
// must be held.
func (w *holdWatch) unrefLocked(pw *parentWatch, parent string) {
	pw.refs--
	if pw.refs == 0 && w.parents[parent] == pw {
		delete(w.parents, parent)
	}
}

// parentOf returns the path of the parent of the node at p, as
// lockInternals.basePath has it, without allocating: a lock node's path
// is clean.
func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// unlist lets n's listing's reference to the parent's watch go, if it
// still has it.
func (w *holdWatch) unlist(n *lockNode) {
	w.mu.Lock()
	w.unlistLocked(n)
	w.mu.Unlock()
}

// unlistLocked lets n's listing's reference to the parent's watch go, if
// it still has it; w.mu must be held.
func (w *holdWatch) unlistLocked(n *lockNode) {
	if n.pw != nil {
		w.unrefLocked(n.pw, parentOf(n.path))
		n.pw = nil
	}
}

// childEvent applies an event of the child watch on a lock's parent: every
// hold that relied on it watches its own node from now on.
func (w *holdWatch) childEvent(parent string) {
	w.mu.Lock()
	pw := w.parents[parent]
	if pw == nil {
		w.mu.Unlock()
		return
	}
	pw.events++
	var set []*watched
	for _, e := range pw.holds {
		if e.pw == pw && w.ownWatchLocked(e, parent) {
			set = append(set, e)
		}
	}
	pw.holds = nil
	w.mu.Unlock()
	for _, e := range set {
		w.setWatch(e, e.h)
	}
}

// learn makes h, if it relies on its parent's watch, watch its own node,
// which learns its token; Token calls it before waiting for the token.
func (w *holdWatch) learn(h *hold) {
	if !w.c.fencing.Load() { // no write on every Token of a fencing Client
		w.c.fencing.Store(true) // from now on, holds learn their token as they are granted
	}
	w.mu.Lock()
	e := w.nodes[h.node.path]
	set := e != nil && e.h == h && e.pw != nil && w.ownWatchLocked(e, parentOf(h.node.path))
	w.mu.Unlock()
	if set {
		w.setWatch(e, h)
	}
}

// ownWatchLocked makes e, which relies on the watch of parent, watch its
// own node instead, and reports whether the caller must set that watch:
// not if it is being set already (after a data change), since one node
// has one setter at a time. w.mu must be held.
func (w *holdWatch) ownWatchLocked(e *watched, parent string) bool {
	w.leaveParentLocked(e, parent)
	return e.setting.take()
}

// leaveParentLocked lets e's reference to the watch of parent go, if it
// relies on it; w.mu must be held.
func (w *holdWatch) leaveParentLocked(e *watched, parent string) {
	if e.pw != nil {
		w.unrefLocked(e.pw, parent)
		e.pw = nil
	}
}

// expect records n, an own node whose watch is about to be set, so that
// the watch's events are kept, unless n was dropped (a watch set late, by
// a goroutine that outlived n's wait or hold, must not bring it back). A
// data change seen before is forgotten: the watch about to be set reads
// the node's data anew.
func (w *holdWatch) expect(n *lockNode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.nodes[n.path]
	switch {
	case n.dropped:
	case e == nil:
		w.nodes[n.path] = &watched{}
	case e.fired == zk.EventNodeDataChanged:
		e.fired = 0
	}
}

// drop forgets n for good: its wait or its hold is over.
func (w *holdWatch) drop(n *lockNode) {
	w.mu.Lock()
	n.dropped = true
	w.unlistLocked(n)
	if e := w.nodes[n.path]; e != nil {
		w.leaveParentLocked(e, parentOf(n.path))
	}
	delete(w.nodes, n.path)
	w.mu.Unlock()
}

// len returns the number of nodes and parents followed, for tests.
func (w *holdWatch) len() (nodes, parents int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.nodes), len(w.parents)
}

// take makes h, just granted, the owner of its node's entry, under the
// session facts snap. It applies what happened before: an event kept for
// the node, a change of the session facts since snap, a watch not set yet
// (a node granted at once). It reports false, leaving h alone, once the
// Client has begun to close.
func (w *holdWatch) take(h *hold, snap snapshot, onRevoke func(string)) bool {
	if w.c.usable() != nil {
		return false
	}
	n := h.node
	known := n.isKnown()
	w.mu.Lock()
	e := w.nodes[n.path]
	if e == nil {
		e = &watched{}
		w.nodes[n.path] = e
	}
	n.dropped = false // a hold takes it over
	e.h, e.snap, e.onRevoke = h, snap, onRevoke
	fired := e.fired
	e.fired = 0
	set := !known || fired == zk.EventNodeDataChanged
	if pw := n.pw; set && pw != nil && fired == 0 && onRevoke == nil && pw.events == n.pwEvents && w.parentOK() {
		// Granted at once, from a listing whose child watch has not fired
		// since it was sent: that watch tells of our node's deletion.
		n.pw, e.pw, set = nil, pw, false
		pw.holds = append(pw.holds, e)
	}
	w.unlistLocked(n)
	set = set && e.setting.take() // a new hold's entry: the turn is free
	w.mu.Unlock()
	if known && !w.routed {
		w.follow(n.own) // the waiter's watch
	}
	// After the entry: a sweep that began before it saw facts that this
	// reads too, or later ones.
	if err := w.c.holdLost(snap); err != nil {
		w.lose([]lostHold{{h, err}})
		return true
	}
	switch {
	case fired == zk.EventNodeDeleted:
		w.lose([]lostHold{{h, lossBy(h, errNodeGone)}})
	case set:
		w.setWatch(e, h)
	}
	return true
}

// event applies a node event of the Client's connection, or, without the
// callback, of a watch's channel.
func (w *holdWatch) event(ev zk.Event) {
	var err error
	switch {
	case ev.Type == zk.EventNodeChildrenChanged:
		w.childEvent(ev.Path)
		return
	case ev.Type == zk.EventNodeDeleted:
		w.childEvent(ev.Path) // a deleted parent had no child left
		err = errNodeGone
	case ev.Type == zk.EventNodeDataChanged:
	case ev.Type == zk.EventNotWatching && !w.routed:
		// The session's expiry or the connection's close, which a Client of
		// NewClient may not hear of otherwise (its events channel is lossy).
		err = ownEventErr(ev)
	default:
		return
	}
	w.mu.Lock()
	e := w.nodes[ev.Path]
	switch {
	case e == nil:
		w.mu.Unlock()
		return
	case e.h == nil:
		if e.fired != zk.EventNodeDeleted && ev.Type != zk.EventNotWatching {
			e.fired = ev.Type
		}
		w.mu.Unlock()
		return
	case err != nil:
		h := e.h
		w.mu.Unlock()
		w.lose([]lostHold{{h, lossBy(h, err)}})
		return
	case !e.setting.ask(): // being set: it is set once more after
		w.mu.Unlock()
		return
	}
	w.leaveParentLocked(e, parentOf(ev.Path)) // its own watch, set now, takes over from any parent's
	h := e.h
	w.mu.Unlock()
	w.setWatch(e, h)
}

// setWatch sets e's watch (again), for h, on a goroutine that lasts as
// long as it takes: a connection loss meanwhile waits for the session's
// connection to come back, and whether that loss ends the hold is the
// sweep's call. The first time, it learns the node's fencing token.
func (w *holdWatch) setWatch(e *watched, h *hold) {
	c := h.c
	ok := c.goFunc(func() {
		for {
			ch, err := watchOwn(h.ctx, c, h.node, e.onRevoke)
			if retryable(err) {
				err = c.awaitConnected(h.ctx, h.node.session, 0)
				if errors.Is(err, errSessionChanged) {
					err = errNodeGone
				}
				if err == nil {
					continue
				}
			}
			if err != nil { // a hold that ended meanwhile stays as it ended
				w.lose([]lostHold{{h, lossBy(h, err)}})
				return
			}
			if !w.routed {
				w.follow(ch)
			}
			w.mu.Lock()
			again := e.setting.done()
			w.mu.Unlock()
			if !again {
				return
			}
		}
	})
	if !ok {
		w.lose([]lostHold{{h, errLostClosed}})
	}
}

// follow reads a watch's channel, for a Client without the callback.
func (w *holdWatch) follow(ch <-chan zk.Event) {
	w.c.goFunc(func() {
		select {
		case ev, ok := <-ch:
			if ok {
				w.event(ev)
			}
		case <-w.c.closing:
		}
	})
}

// sweep ends the holds that a change of the session facts has lost, after
// a transition, once per change. Close sweeps last, with the Client
// closed: every hold still standing is lost.
func (w *holdWatch) sweep() {
	now := w.c.sessionFacts()
	w.mu.Lock()
	if now == w.swept {
		w.mu.Unlock()
		return
	}
	w.swept = now
	var lost []lostHold
	for _, e := range w.nodes {
		if e.h == nil {
			continue
		}
		if err := now.lost(e.snap); err != nil {
			lost = append(lost, lostHold{e.h, err})
		}
	}
	w.mu.Unlock()
	w.lose(lost)
}

// lostHold is a hold to end, and why.
type lostHold struct {
	h   *hold
	err error
}

// lose ends each hold with its loss, at once, and leaves the deletes of
// their nodes to the Client's background queue, so that neither the
// goroutine that applies events nor a sweep of many holds waits on the
// network. Losses to a change of connection are logged in one record,
// not one per hold.
func (w *holdWatch) lose(lost []lostHold) {
	var byCause map[Cause]int
	for _, l := range lost {
		if !l.h.end(l.err) {
			continue
		}
		if cause := causeOf(l.err); summedUp(cause) && cause != CauseClosed { // Close sums up its own
			if byCause == nil {
				byCause = make(map[Cause]int)
			}
			byCause[cause]++
		}
		h := l.h
		w.c.cleanup(func() { h.freed() })
	}
	for cause, n := range byCause {
		w.c.log.Warn("zklock: holds lost", "holds", n, "cause", cause.String())
	}
}
