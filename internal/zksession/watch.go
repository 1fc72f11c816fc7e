package zksession

import (
	"context"
	"slices"
	"sync"

	"github.com/zklock/zklock/internal/zkwire"
)

// An Event is what a Watch hears: a change of its node (Type
// EventNodeCreated...), its removal (EventDataWatchRemoved,
// EventChildWatchRemoved) or the end of the session (Type EventNone,
// State StateExpired, StateAuthFailed or StateClosed). Config.OnEvent
// hears the notifications and the session's states as Events too.
type Event struct {
	Type  zkwire.EventType
	State zkwire.KeeperState
	Path  string
	Zxid  int64 // the notification's zxid (-1 from servers up to 3.8), 0 if made here
}

// watchKind is which of the Java client's three watch tables a Watch is
// in: data (getData, or exists on a node that was there), exist (exists
// on a missing node) or child (getChildren).
type watchKind uint8

const (
	kindNone watchKind = iota
	kindData
	kindExist
	kindChild
)

// A Watch is one one-shot watch on a node. Its channel C is buffered 1
// and receives exactly one Event, then nothing more (it is not closed);
// a Watch set under a context from WithNotify hands its Event to that
// function instead, and has no channel (C is nil). A Watch costs nothing once it has
// fired or been removed.
type Watch struct {
	C      <-chan Event
	c      chan Event
	notify func(Event) // WithNotify's, or nil
	path   string
	kind   watchKind // set when registered; guarded by watchSet.mu
}

// deliver hands w its one Event.
func (w *Watch) deliver(ev Event) {
	if w.notify != nil {
		w.notify(ev)
		return
	}
	w.c <- ev
}

type notifyKey struct{}

// WithNotify returns a copy of ctx under which a call that sets a Watch
// (GetDataW, ExistsW, GetChildren2W) makes one that hands its one Event to
// f instead of its channel: f is called once, under the session's watch
// bookkeeping (by the reader, RemoveWatch or the session's end), and must
// neither block nor call the Session. It costs no goroutine: for a caller
// that turns the Event into something else, such as a value on a channel
// of its own.
func WithNotify(ctx context.Context, f func(Event)) context.Context {
	return context.WithValue(ctx, notifyKey{}, f)
}

// A Tentative collects the watches that calls made under a context from
// WithTentative set, for a caller that may drop those calls' results (a
// read sent behind a write that then failed): Drop removes them. The zero
// Tentative is ready to use; it is safe for concurrent use.
type Tentative struct {
	mu      sync.Mutex
	set     []tentativeWatch // guarded by mu
	dropped bool             // guarded by mu
}

// tentativeWatch is one Watch a Tentative collected, with its session.
type tentativeWatch struct {
	s *Session
	w *Watch
}

type tentativeKey struct{}

// WithTentative returns a copy of ctx under which a call that sets a
// Watch (GetDataW, ExistsW, GetChildren2W) records it in t.
func WithTentative(ctx context.Context, t *Tentative) context.Context {
	return context.WithValue(ctx, tentativeKey{}, t)
}

// add records w, set on s; after Drop, it removes w at once.
func (t *Tentative) add(s *Session, w *Watch) {
	t.mu.Lock()
	dropped := t.dropped
	if !dropped {
		t.set = append(t.set, tentativeWatch{s, w})
	}
	t.mu.Unlock()
	if dropped {
		s.unwatch(w)
	}
}

// Drop removes every Watch t recorded, and any recorded later, as
// RemoveWatch does (each hears its removal; the server's watch goes when
// it was the last on its path), without waiting for the server's answer:
// a removal that fails with the connection needs none, since a new
// connection sets only the watches the session still has.
func (t *Tentative) Drop() {
	t.mu.Lock()
	set := t.set
	t.set, t.dropped = nil, true
	t.mu.Unlock()
	for _, tw := range set {
		tw.s.unwatch(tw.w)
	}
}

// Path returns the watched node's path.
func (w *Watch) Path() string { return w.path }

// newWatch returns a Watch of path that hands its Event to notify or, if
// that is nil, to a channel of its own.
func newWatch(path string, notify func(Event)) *Watch {
	if notify != nil {
		return &Watch{notify: notify, path: path}
	}
	c := make(chan Event, 1)
	return &Watch{C: c, c: c, path: path}
}

// pathWatches are one path's watches, of every kind (each Watch's kind
// says which of the Java client's tables it is in), and how many requests
// that set a server watch on it are in flight, by server type (data and
// exist watches are one server watch, WatcherData; child watches
// another). One list instead of three keeps a path watched by one Watch
// small: a Client that holds many locks watches a path per lock.
type pathWatches struct {
	ws                     []*Watch
	inflightData, inflight int32
}

// has reports whether p holds a Watch of kind k.
func (p *pathWatches) has(k watchKind) bool {
	for _, w := range p.ws {
		if w.kind == k {
			return true
		}
	}
	return false
}

func (p *pathWatches) empty() bool {
	return len(p.ws) == 0 && p.inflightData+p.inflight == 0
}

// watchSet is a session's watches. mu guards m and every Watch's kind;
// a Watch is delivered to, once, only by whoever removes it from m under
// mu, so its send never blocks.
type watchSet struct {
	mu sync.Mutex
	m  map[string]*pathWatches
	// persistent are the persistent watches the server set (AddWatch),
	// by path: bit 1<<mode for each AddWatchMode. Written by the reader
	// (on the reply) and by RemovePersistentWatch.
	persistent map[string]uint8
}

func (s *watchSet) entry(path string) *pathWatches {
	p := s.m[path]
	if p == nil {
		if s.m == nil {
			s.m = make(map[string]*pathWatches)
		}
		p = &pathWatches{}
		s.m[path] = p
	}
	return p
}

func (s *watchSet) tidy(path string, p *pathWatches) {
	if p.empty() {
		delete(s.m, path)
	}
}

// serverType is the server's watch type a request of kind k sets.
func serverType(k watchKind) zkwire.WatcherType {
	if k == kindChild {
		return zkwire.WatcherChildren
	}
	return zkwire.WatcherData
}

// sent counts a request that will set a server watch of r.wtype on
// r.path, from the moment it is queued until settle.
func (s *watchSet) sent(r *request) {
	s.mu.Lock()
	p := s.entry(r.path)
	if r.wtype == zkwire.WatcherChildren {
		p.inflight++
	} else {
		p.inflightData++
	}
	s.mu.Unlock()
}

// settle ends the count of r and, if its reply had code (and r was not
// abandoned, register true), registers r's Watch as the code says.
func (s *watchSet) settle(r *request, code zkwire.Code, register bool) bool {
	registered, _ := s.settleOrphan(r, code, register)
	return registered
}

// settleOrphan is settle, also returning, when the reply says the server
// set a watch that is not registered (r was abandoned) and that no Watch
// of the session and no request in flight needs, that watch's server
// type: the server's watch is nobody's. 0 otherwise.
func (s *watchSet) settleOrphan(r *request, code zkwire.Code, register bool) (bool, zkwire.WatcherType) {
	if r.wtype == 0 {
		return false, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.entry(r.path)
	if r.wtype == zkwire.WatcherChildren {
		p.inflight--
	} else {
		p.inflightData--
	}
	defer s.tidy(r.path, p)
	k := registeredKind(r.op, code)
	switch {
	case k == kindNone:
		return false, 0
	case register:
		r.watch.kind = k
		p.ws = append(p.ws, r.watch)
		return true, 0
	case p.needs(serverType(k)):
		return false, 0
	}
	return false, serverType(k)
}

// needs reports whether a Watch of p, or a request in flight that may
// set one, needs the server's watch of type t (WatcherData or
// WatcherChildren).
func (p *pathWatches) needs(t zkwire.WatcherType) bool {
	if t == zkwire.WatcherChildren {
		return p.inflight > 0 || p.has(kindChild)
	}
	return p.inflightData > 0 || p.has(kindData) || p.has(kindExist)
}

// registeredKind is the table a watch goes in after a reply of op with
// code, as the Java client's WatchRegistration decides; kindNone when
// the server set no watch.
func registeredKind(op zkwire.OpCode, code zkwire.Code) watchKind {
	switch {
	case op == zkwire.OpExists && code == zkwire.CodeOK:
		return kindData
	case op == zkwire.OpExists && code == zkwire.CodeNoNode:
		return kindExist
	case code != zkwire.CodeOK:
		return kindNone
	case op == zkwire.OpGetData:
		return kindData
	case op == zkwire.OpGetChildren, op == zkwire.OpGetChildren2:
		return kindChild
	}
	return kindNone
}

// fire delivers a notification to the watches it triggers, as the Java
// client's ZKWatchManager does, and forgets them.
func (s *watchSet) fire(ev Event) {
	var triggers func(watchKind) bool
	switch ev.Type {
	case zkwire.EventNodeCreated, zkwire.EventNodeDataChanged:
		triggers = func(k watchKind) bool { return k != kindChild }
	case zkwire.EventNodeDeleted:
		triggers = func(watchKind) bool { return true }
	case zkwire.EventNodeChildrenChanged:
		triggers = func(k watchKind) bool { return k == kindChild }
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.m[ev.Path]
	if p == nil {
		return
	}
	p.ws = slices.DeleteFunc(p.ws, func(w *Watch) bool {
		if triggers(w.kind) {
			w.deliver(ev)
			return true
		}
		return false
	})
	s.tidy(ev.Path, p)
}

// remove takes w out of the set, delivering it a removal event. It
// returns false if w was not there (it fired, or was removed before),
// and whether no watch nor request in flight needs the server's watch
// of w's type on its path any more.
func (s *watchSet) remove(w *Watch) (found, last bool, t zkwire.WatcherType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.m[w.path]
	if p == nil || w.kind == kindNone {
		return false, false, 0
	}
	i := slices.Index(p.ws, w)
	if i < 0 {
		return false, false, 0
	}
	p.ws = slices.Delete(p.ws, i, i+1)
	ev := Event{Type: zkwire.EventDataWatchRemoved, State: zkwire.StateSyncConnected, Path: w.path}
	t = serverType(w.kind)
	if t == zkwire.WatcherChildren {
		ev.Type = zkwire.EventChildWatchRemoved
	}
	last = !p.needs(t)
	w.deliver(ev)
	s.tidy(w.path, p)
	return true, last, t
}

// end delivers the end of the session to every watch and forgets them.
func (s *watchSet) end(state zkwire.KeeperState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for path, p := range s.m {
		for _, w := range p.ws {
			w.deliver(Event{Type: zkwire.EventNone, State: state, Path: path})
		}
	}
	s.m = nil
}

// addPersistent records that the server set a persistent watch of mode
// on path.
func (s *watchSet) addPersistent(path string, mode zkwire.AddWatchMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.persistent == nil {
		s.persistent = make(map[string]uint8)
	}
	s.persistent[path] |= 1 << mode
}

// removePersistent forgets the persistent watch of mode on path, and
// reports whether it was there.
func (s *watchSet) removePersistent(path string, mode zkwire.AddWatchMode) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	bits := s.persistent[path]
	if bits&(1<<mode) == 0 {
		return false
	}
	if bits &^= 1 << mode; bits == 0 {
		delete(s.persistent, path)
	} else {
		s.persistent[path] = bits
	}
	return true
}

// oneShot reports whether the session holds a one-shot watch on path,
// or has a request in flight that may set one.
func (s *watchSet) oneShot(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.m[path]
	return p != nil && !p.empty()
}

// setWatchesMax bounds the paths of one SetWatches, as the Java client's
// SET_WATCHES_MAX_LENGTH does (ZOOKEEPER-706).
const setWatchesMax = 128 * 1024

// setWatches returns the requests' bodies that set the watches again on
// a new connection, in batches of at most setWatchesMax bytes of paths,
// each with relativeZxid zxid: SetWatches, or SetWatches2 when there are
// persistent watches (as the Java client does, so that a session without
// them still works with a server before 3.6).
func (s *watchSet) setWatches(zxid int64) (bodies []zkwire.Encodable, op zkwire.OpCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []zkwire.SetWatches2
	cur, size := zkwire.SetWatches2{RelativeZxid: zxid}, 0
	add := func(l *[]string, path string) {
		if size > 0 && size+len(path) > setWatchesMax {
			out = append(out, cur)
			// l points into cur, a variable: it now names the new batch's list.
			cur, size = zkwire.SetWatches2{RelativeZxid: zxid}, 0
		}
		*l = append(*l, path)
		size += len(path) + 4
	}
	for path, p := range s.m {
		if p.has(kindData) {
			add(&cur.DataWatches, path)
		}
		if p.has(kindExist) {
			add(&cur.ExistWatches, path)
		}
		if p.has(kindChild) {
			add(&cur.ChildWatches, path)
		}
	}
	for path, bits := range s.persistent {
		if bits&(1<<zkwire.AddWatchPersistent) != 0 {
			add(&cur.PersistentWatches, path)
		}
		if bits&(1<<zkwire.AddWatchPersistentRecursive) != 0 {
			add(&cur.PersistentRecursiveWatches, path)
		}
	}
	if size > 0 {
		out = append(out, cur)
	}
	return asSetWatches(out, len(s.persistent) > 0)
}

// asSetWatches returns batches as request bodies: SetWatches2 if v2,
// else SetWatches (their persistent lists are then empty).
func asSetWatches(batches []zkwire.SetWatches2, v2 bool) ([]zkwire.Encodable, zkwire.OpCode) {
	bodies := make([]zkwire.Encodable, len(batches))
	for i, b := range batches {
		if v2 {
			bodies[i] = b
		} else {
			bodies[i] = zkwire.SetWatches{RelativeZxid: b.RelativeZxid, DataWatches: b.DataWatches, ExistWatches: b.ExistWatches, ChildWatches: b.ChildWatches}
		}
	}
	if v2 {
		return bodies, zkwire.OpSetWatches2
	}
	return bodies, zkwire.OpSetWatches
}
