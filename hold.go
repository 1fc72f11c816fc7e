package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// errLostClosed is why a hold ends when its Client closes.
var errLostClosed = kindOf(ErrLockLost, ErrClosed)

// Hold is one hold of a lock, the value that acquiring returns:
// [Mutex.Lock] and [Mutex.TryLock] (also on both sides of a
// [ReadWriteLock]), [SemaphoreMutex.Lock], [MultiLock.Lock], and, for a
// lease of a [Semaphore], [Lease.Hold]. It carries everything about the
// hold: the context that carries it, its fencing token, its loss, and its
// release. Releasing through the Hold cannot pick the wrong context, which
// is the mistake that Acquire and Release by context allow.
//
// A Hold is safe for concurrent use. Each Hold owes exactly one Release: a
// second Release of the same Hold returns an error wrapping ErrNotHeld and
// changes nothing. Locking again with [Hold.Context] re-enters the lock
// (see [Mutex.Acquire]) and returns another Hold over the same hold, which
// owes its own Release; the lock is given up at the last one.
//
// A hold can be lost at any time (see [Mutex]): its context is then
// cancelled with a cause wrapping ErrLockLost, [Hold.Err] says why, and
// Release returns that loss once.
type Hold struct {
	// Written once by newHandle, read-only after.
	h     *hold           // the hold; shared by the Holds of re-entries
	ctx   context.Context // carries the hold
	path  string          // the lock's base path, for errors
	owner Locker          // releases the hold through owner.Release(ctx); nil: through h itself

	spent atomic.Bool // Release has been called
}

// newHandle returns a Hold over h, carried by ctx, whose Release releases
// h itself (path names the lock in errors).
func newHandle(h *hold, ctx context.Context, path string) *Hold {
	return &Hold{h: h, ctx: ctx, path: path}
}

// handleOf wraps the outcome of an acquire of l, hctx or err, in a Hold
// that releases through l.Release(hctx). path names the lock in errors.
// (No closure: a Client may keep a hundred thousand Holds.)
func handleOf(l Locker, path string, hctx context.Context, err error) (*Hold, error) {
	if err != nil {
		return nil, err
	}
	return &Hold{h: holdIn(hctx, l), ctx: hctx, path: path, owner: l}, nil
}

// errZeroHold is returned by the methods of a Hold not made by this
// package.
var errZeroHold = wrapf(ErrInvalidArgument, "Hold not made by a lock")

// Context returns the context that carries the hold. It is cancelled when
// the hold ends, with cause ErrReleased after the last Release of the
// hold, or a cause wrapping ErrLockLost when the hold is lost; it does not
// depend on the context given to acquire. Pass it down the call chain: an
// acquire with it re-enters. For a Hold not made by this package it is a
// context cancelled at once.
func (hd *Hold) Context() context.Context {
	if hd == nil || hd.h == nil {
		return zeroHoldCtx
	}
	return hd.ctx
}

// Done returns a channel that is closed when the hold ends, released or
// lost; Context().Done().
func (hd *Hold) Done() <-chan struct{} {
	return hd.Context().Done()
}

// Err returns nil while the hold stands; once it has ended, ErrReleased
// if it was released, or an error wrapping ErrLockLost that says why it
// was lost.
func (hd *Hold) Err() error {
	if hd == nil || hd.h == nil {
		return errZeroHold
	}
	if hd.ctx.Err() == nil {
		return nil
	}
	return context.Cause(hd.ctx)
}

// Release gives up the one Release this Hold owes, as [Mutex.Release]
// does with the Hold's context: the last Release of a hold cancels its
// context with cause ErrReleased and deletes the lock node (in the
// background if the delete fails on the network, until it succeeds or the
// session ends). It returns an error wrapping ErrLockLost if the hold was
// lost, and one wrapping ErrNotHeld if this Hold was released before.
func (hd *Hold) Release() error {
	if hd == nil || hd.h == nil {
		return errZeroHold
	}
	if !hd.spent.CompareAndSwap(false, true) {
		return errorf(ErrNotHeld, "release %s: this Hold was released before", hd.path)
	}
	if hd.owner != nil {
		return hd.owner.Release(hd.ctx)
	}
	return hd.h.release(hd.path)
}

// Token returns the hold's fencing token: the creation zxid of its node,
// which strictly increases from one holder of a path to the next (see
// [Mutex.Token]). It may wait one round trip to read it (see
// [Mutex.Token]). Once the hold has ended it returns the same error as
// Err would wrap: ErrNotHeld after a release, ErrLockLost after a loss. A
// [MultiLock] hold has one token per member, not one: its Token returns
// an error wrapping ErrInvalidArgument.
func (hd *Hold) Token() (int64, error) {
	n, err := hd.node("token")
	if err != nil {
		return 0, err
	}
	hd.h.learn()
	select {
	case <-n.learned():
	case <-hd.h.ctx.Done():
	}
	// Decided in this order, so that an ending hold always reports its end.
	if err := hd.h.check("token", hd.path); err != nil {
		return 0, err
	}
	return n.czxid, nil
}

// CheckOp returns a check on the hold's node, to put first in conn.Multi:
// the transaction then commits only while the hold exists (see
// [Hold.Multi], which does this for you). Its errors are Token's.
func (hd *Hold) CheckOp() (*zk.CheckVersionRequest, error) {
	n, err := hd.node("check op")
	if err != nil {
		return nil, err
	}
	return &zk.CheckVersionRequest{Path: n.path, Version: -1}, nil
}

// node returns the node of a single-node hold that stands.
func (hd *Hold) node(what string) (*lockNode, error) {
	if hd == nil || hd.h == nil {
		return nil, errZeroHold
	}
	if err := hd.h.check(what, hd.path); err != nil {
		return nil, err
	}
	if hd.h.node == nil {
		return nil, wrapf(ErrInvalidArgument, "%s %s: a multi-lock has no single node", what, hd.path)
	}
	return hd.h.node, nil
}

// Path returns the path of the hold's node, relative to the Client's
// namespace; "" for a [MultiLock] hold or a Hold not made by this package.
func (hd *Hold) Path() string {
	if hd == nil || hd.h == nil || hd.h.node == nil {
		return ""
	}
	return hd.h.c.relPath(hd.h.node.path)
}

// Bind returns a context that carries the hold, as [Hold.Context] does,
// and ends as soon as either ctx or the hold ends: with ctx's cause when
// ctx ends first, with the hold's (ErrReleased, or an error wrapping
// ErrLockLost) when the hold ends first. It carries the holds that ctx
// carries as well as this one (an acquire with it re-enters any of them
// that is re-entrant), and has ctx's other values and its deadline.
// This is the context to do the hold's work under, such as an HTTP
// handler's: it stops when the client goes away and when the lock is lost.
// Call cancel when the work is done, to release what Bind set up.
func (hd *Hold) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = errCtx(wrapf(ErrInvalidArgument, "bind: nil context"))
	}
	hctx := hd.Context()
	var h *hold
	if hd != nil {
		h = hd.h
	}
	bound, cancel := context.WithCancelCause(mergeHolds(ctx, hctx, h))
	stop := context.AfterFunc(hctx, func() { cancel(context.Cause(hctx)) })
	return bound, func() {
		stop()
		cancel(context.Canceled)
	}
}

// run runs fn under Bind(ctx) and releases the Hold, also when fn panics
// (the panic then goes on). It returns fn's and Release's errors, joined.
func (hd *Hold) run(ctx context.Context, fn func(context.Context) error) error {
	bound, cancel := hd.Bind(ctx)
	defer cancel()
	released := false
	defer func() {
		if !released { // fn panicked: release, then let the panic go on
			_ = hd.Release()
		}
	}()
	ferr := fn(bound)
	released = true
	if hd.spent.Load() { // fn released the Hold itself (see Selector.Term): only a loss is news
		if lost := hd.Err(); errors.Is(lost, ErrLockLost) {
			return joinErrs(ferr, lost)
		}
		return ferr
	}
	return joinErrs(ferr, hd.Release())
}

// notHeld is the error of a Release with a context that carries no hold
// of the lock at path, while live holds of it taken through the same
// object stand: then the caller most likely passed the context it gave to
// Acquire, not the one Acquire returned, and the lock stays held. That is
// said in the error and, for callers that drop it, logged at Warn.
// c is nil for a MultiLock, which logs nothing.
func notHeld(c *Client, path string, live int32) error {
	if live <= 0 {
		return wrapf(ErrNotHeld, "release %s", path)
	}
	const hint = "the context given carries no hold, but the lock is held in this process, and stays held: release with the context that Acquire returned, or use Lock and Hold.Release"
	if c != nil {
		c.log.Warn("zklock: release with a context that carries no hold; the lock stays held", "path", path, "live", live)
	}
	return errorf(ErrNotHeld, "release %s: %s", path, hint)
}

// zeroHoldCtx is the context of a Hold not made by this package.
var zeroHoldCtx = errCtx(errZeroHold)

// errCtx returns a context cancelled from the start, with cause err.
func errCtx(err error) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(err)
	return ctx
}

// hold is one ownership of a lock, shared by every recipe: of a node (a
// Mutex side, a lease) or of other holds (a MultiLock). It owns the context
// that carries the ownership and ends it once, with cause ErrReleased or
// ErrLockLost; it gives up what it owns exactly once, whichever ending
// comes first. Its Client's holdWatch follows its node, and ends it when
// it is lost.
type hold struct {
	// Written once by newHold, read-only after.
	c      *Client                 // nil for a hold of other holds
	name   string                  // names the hold in errors, such as "lock /a"
	began  time.Duration           // when the hold began, after story.start (see start)
	node   *lockNode               // nil for a hold of other holds
	parts  *[]*hold                // a hold of other holds: theirs, nil if one is not this package's (a pointer: most holds have none)
	parent context.Context         // the context the hold was taken with; ctx derives from it
	ctx    context.Context         // carries the hold; cancelled when it ends
	cancel context.CancelCauseFunc // ends ctx
	live   liveCounter             // the owner's count of live holds
	free   func() error            // gives up what the hold owns; run once; nil: deleteNode
	story  story                   // the acquire that granted the hold, for events

	// Packed so that a hold fits a smaller allocation: a Client may keep
	// a hundred thousand.
	freeOnce sync.Once
	mu       sync.Mutex  // protects count, ended, reported, member, cut, lost and expiry
	count    int32       // Releases still owed
	ended    bool        // released or lost
	reported bool        // its story reported it granted, so reports its end
	member   bool        // taken by a MultiLock's acquire not yet granted: not its caller's yet (see multiTake)
	cut      bool        // it ended after its Client's Close began (see cutShort)
	freeErr  error       // written inside freeOnce
	lost     error       // why the hold was lost, nil otherwise
	expiry   *time.Timer // ends the hold at its maximum hold time; nil for none
}

// holdKey finds a hold in the context that carries it, by keyOf its owner.
type holdKey struct{ owner any }

// lockID identifies what a [Mutex] or [SemaphoreMutex] locks: a lock of
// one Client. Their holds are found by it, so that a context that holds a
// lock through one of them holds it through every other one of the same
// lock and Client: it re-enters instead of waiting for itself.
type lockID struct {
	c              *Client
	path, lockName string // full path of the lock's nodes' parent; their name
	// variant tells apart locks whose nodes share path and name but not
	// their predicate: kazoo's Lock and WriteLock both name theirs
	// "__lock__", and a Lock counts no readers, so that a Lock's hold is
	// no WriteLock's. "" for most.
	variant string
}

// keyOf returns the key of owner's holds: the key it names as a lockKeyer,
// or owner itself (an owner that names none, or one not made by its
// constructor).
func keyOf(owner any) any {
	if k, ok := owner.(lockKeyer); ok {
		if key, _ := k.lockKey(); key != nil {
			return key
		}
	}
	return owner
}

// lockKeyer is an owner of holds that names their key: a recipe whose
// holds belong to what it locks rather than to itself names the lock's
// lockID, so that its holds are found through any of its kind on the same
// lock (see lockID).
type lockKeyer interface {
	// lockKey returns the key of the owner's holds and what it locks, for
	// messages; nil and "" for an owner not made by its constructor.
	lockKey() (key any, name string)
}

// liveCounter counts the holds of one owner that stand: an
// *atomic.Int32 of the owner's own, or a lock's count in its Client's
// table (lockCount).
type liveCounter interface {
	Add(delta int32) int32
	Load() int32
}

// liveTable counts, per lock of a Client (by lockID), the holds that
// stand, so that every value of one lock (Mutexes of one path and Client,
// say) sees the holds taken through any of them, as it re-enters them.
// Its keys are lockIDs boxed in an interface, which compare as the
// lockIDs do: a two-word key keeps the table's entry of a lock held small.
type liveTable struct {
	mu sync.Mutex
	n  map[any]int32 // guarded by mu; no zero entries
}

// count returns the count in t of the lock key, a lockID boxed once by
// its owner (such as Mutex.key).
func (t *liveTable) count(key any) lockCount { return lockCount{t, key} }

// lockCount is one lock's count in its Client's liveTable.
type lockCount struct {
	t   *liveTable
	key any // a lockID
}

// Add adds delta to the lock's count and returns the new count.
func (lc lockCount) Add(delta int32) int32 {
	lc.t.mu.Lock()
	defer lc.t.mu.Unlock()
	n := lc.t.n[lc.key] + delta
	if n <= 0 {
		delete(lc.t.n, lc.key) // the table holds only locks held
	} else {
		if lc.t.n == nil {
			lc.t.n = make(map[any]int32)
		}
		lc.t.n[lc.key] = n
	}
	return n
}

// Load returns the lock's count.
func (lc lockCount) Load() int32 {
	lc.t.mu.Lock()
	defer lc.t.mu.Unlock()
	return lc.t.n[lc.key]
}

// alsoCount is a liveCounter that also counts in another: it answers
// Load from the first.
type alsoCount struct {
	liveCounter
	also *atomic.Int32
}

// Add adds delta to both counts and returns the first's.
func (a alsoCount) Add(delta int32) int32 {
	a.also.Add(delta)
	return a.liveCounter.Add(delta)
}

// holdSpec says what a new hold is.
type holdSpec struct {
	key   any          // finds the hold in its context; nil for none
	name  string       // names the hold in errors, such as "lock /a"
	node  *lockNode    // nil for a hold of other holds
	parts []*hold      // a hold of other holds: theirs, nil if one is foreign
	live  liveCounter  // the owner's count of live holds
	free  func() error // nil: delete node
	story story        // the acquire that granted the hold, for events
	// maxHold, if positive, ends the hold that long after its grant (see
	// WithMaxHold).
	maxHold time.Duration
}

// newHold returns a live hold with one Release owed. Its context keeps the
// values of parent but not its cancellation, and carries the hold under
// spec.key. c is nil for a hold of other holds.
func newHold(c *Client, parent context.Context, spec holdSpec) *hold {
	h := &hold{c: c, name: spec.name, node: spec.node, live: spec.live, free: spec.free, story: spec.story, count: 1, parent: parent}
	if parts := spec.parts; parts != nil {
		h.parts = &parts
	}
	if now := time.Now(); h.story.start.IsZero() {
		h.story.start = now
	} else {
		h.began = now.Sub(h.story.start)
	}
	h.ctx, h.cancel = context.WithCancelCause(context.WithoutCancel(parent))
	if spec.key != nil {
		h.ctx = context.WithValue(h.ctx, spec.key, h)
	}
	h.live.Add(1)
	if c != nil {
		c.holding.Add(1)
		h.member = joinMultiTake(parent, h)
	}
	if d, _ := parent.Value(maxHoldKey{}).(time.Duration); d != 0 {
		// The bound is this acquire's (or, for a MultiLock, its members'),
		// not the hold's nested ones.
		h.ctx = context.WithValue(h.ctx, maxHoldKey{}, time.Duration(0))
	}
	if spec.maxHold > 0 {
		h.mu.Lock()
		h.expireLocked(spec.maxHold)
		h.mu.Unlock()
	}
	return h
}

// holdIn returns the hold of owner that ctx carries, live or not.
func holdIn(ctx context.Context, owner any) *hold {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(holdKey{keyOf(owner)}).(*hold)
	return h
}

// watch hands the hold's node to its Client's holdWatch, which ends the
// hold when it is lost. It reports false, and loses the hold, once the
// Client has begun to close.
func (h *hold) watch(snap snapshot, onRevoke func(string)) bool {
	if h.c.holds.take(h, snap, onRevoke) {
		return true
	}
	h.lose(errLostClosed)
	return false
}

// learn makes the hold's node learn its token, if it relies on its
// parent's watch (see holdWatch.learn), before a wait for the token.
func (h *hold) learn() {
	if h.c != nil && h.node != nil {
		h.c.holds.learn(h)
	}
}

// lossBy returns the loss of h that following its node failed with.
func lossBy(h *hold, err error) error {
	switch {
	case errors.Is(err, errNodeGone):
		return &wrapError{msg: msgPrefix + "lock lost: node " + h.c.relPath(h.node.path) + " deleted", errs: []error{ErrLockLost, errLossDeleted}}
	case errors.Is(err, ErrClosed):
		return errLostClosed
	}
	return kindOf(ErrLockLost, err)
}

// lockPath returns the path of the lock that h holds, relative to the
// namespace, as its recipe was made with: a lease's Semaphore's, a
// leadership's election's. It falls back on h's name for a hold granted
// by no acquire's story.
func (h *hold) lockPath() string {
	if h.story.path != "" {
		return h.story.path
	}
	return h.name
}

// token returns the node's fencing token, waiting if its holdWatch
// has not learnt it yet (a node granted at once). what and path name the
// operation in errors. An ended hold always reports its end, even when ctx
// is the hold's own context and so ends with it.
func (h *hold) token(ctx context.Context, what, path string) (int64, error) {
	var ctxErr error
	h.learn()
	select {
	case <-h.node.learned():
	case <-h.ctx.Done():
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	if err := h.check(what, path); err != nil {
		return 0, err
	}
	if ctxErr != nil {
		return 0, opErr(ctx, what, path, ctxErr)
	}
	return h.node.czxid, nil
}

// nodes returns the Client and the nodes of the hold: its own, or those of
// the holds it is made of, which must all be this package's and of one
// Client.
func (h *hold) nodes() (*Client, []*lockNode, error) {
	if h.node != nil {
		return h.c, []*lockNode{h.node}, nil
	}
	if h.parts == nil {
		return nil, nil, fmt.Errorf("a member is not a lock of this package: %w", ErrInvalidArgument)
	}
	var c *Client
	var out []*lockNode
	for _, p := range *h.parts {
		pc, nodes, err := p.nodes()
		if err != nil {
			return nil, nil, err
		}
		if c != nil && pc != c {
			return nil, nil, fmt.Errorf("members on different Clients cannot be checked in one transaction: %w", ErrInvalidArgument)
		}
		c, out = pc, append(out, nodes...)
	}
	return c, out, nil
}

// relPath maps a ZooKeeper path of the hold's out of the namespace.
func (h *hold) relPath(p string) string {
	c, _, err := h.nodes()
	if err != nil || c == nil {
		return p
	}
	return c.relPath(p)
}

// enter counts a re-entry. It reports false if the hold has ended.
func (h *hold) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return false
	}
	h.count++
	return true
}

// isLive reports whether the hold stands: neither released nor lost.
func (h *hold) isLive() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.ended
}

// check returns nil while the hold stands, its loss if it was lost, and
// ErrNotHeld once it is released. what and path name the operation.
func (h *hold) check(what, path string) error {
	if h == nil {
		return wrapf(ErrNotHeld, "%s %s", what, path)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.lost != nil:
		return h.lost
	case h.ended:
		return wrapf(ErrNotHeld, "%s %s", what, path)
	}
	return nil
}

// release gives up one Release owed. The last one ends the hold with cause
// ErrReleased and frees what it owns. A lost hold returns its loss (after
// its freeing is done) for each Release still owed, and every hold returns
// ErrNotHeld once nothing is owed.
func (h *hold) release(path string) error {
	h.mu.Lock()
	if h.count == 0 {
		h.mu.Unlock()
		return wrapf(ErrNotHeld, "release %s", path)
	}
	h.count--
	if lost := h.lost; lost != nil {
		h.mu.Unlock()
		h.freed()
		return lost
	}
	if h.count > 0 {
		h.mu.Unlock()
		return nil
	}
	h.endLocked(ErrReleased)
	report := h.reported
	h.mu.Unlock()
	if report {
		h.reportEnd(nil)
	}
	return h.freed()
}

// lose ends the hold with err, which wraps ErrLockLost, and frees what it
// owns: a node that still exists must not block the queue.
func (h *hold) lose(err error) {
	if h.end(err) {
		h.freed()
	}
}

// end ends the hold with err, which wraps ErrLockLost, but leaves what it
// owns to the caller to free. It reports false if the hold had ended.
func (h *hold) end(err error) bool {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return false
	}
	h.lost = wrapf(err, "%s", h.name)
	h.endLocked(h.lost)
	report := h.reported
	h.mu.Unlock()
	if report {
		h.reportEnd(h.lost) // logged there
	}
	return true
}

// reportGranted reports the hold granted, as an event of its story, and
// then its end if it has ended already: a hold that ends before its grant
// is reported leaves the report of its end to this. The grant is queued
// (and the end it owes counted) before the hold counts as reported, so
// that an end reported meanwhile by release or lose cannot come first.
func (h *hold) reportGranted() {
	h.story.opened(1)
	ev := Event{Kind: EventAcquired, Wait: time.Since(h.story.start)}
	if h.node != nil {
		ev.Node, ev.Position = h.c.relPath(h.node.path), h.node.position
	}
	h.story.emit(ev)
	h.mu.Lock()
	h.reported = true
	ended, lost := h.ended, h.lost
	if h.cut && !h.member {
		h.c.cut.add(h.lockPath()) // granted to its caller, then cut short
	}
	h.mu.Unlock()
	if ended {
		h.reportEnd(lost)
	}
}

// reportEnd reports the end of a hold its story reported granted: a
// release, or the loss lost.
func (h *hold) reportEnd(lost error) {
	if lost == nil {
		h.emit(Event{Kind: EventReleased})
	} else {
		h.emit(Event{Kind: EventLost, Err: lost})
	}
	h.story.settle()
}

// start returns when the hold began. The hold keeps it as an offset from
// its story's start, which it keeps anyway: a Client may keep a hundred
// thousand holds, and a time.Time is three words.
func (h *hold) start() time.Time { return h.story.start.Add(h.began) }

// emit reports ev, with the hold's node and duration, as an event of the
// story that granted the hold.
func (h *hold) emit(ev Event) {
	ev.Held = time.Since(h.start())
	if h.node != nil {
		ev.Node = h.c.relPath(h.node.path)
	}
	if ev.Err != nil {
		ev.Cause = causeOf(ev.Err)
	}
	h.story.emit(ev)
}

// endLocked marks the hold ended and cancels its context with cause; h.mu
// must be held.
func (h *hold) endLocked(cause error) {
	h.ended = true
	if h.expiry != nil {
		h.expiry.Stop()
	}
	h.live.Add(-1)
	if h.c != nil {
		// Before the count falls: a Shutdown that sees it fall may close
		// the Client, and this hold ended before that.
		if h.c.cut.begun.Load() {
			h.cut = true
			if h.reported && !h.member { // a hold not yet granted to its caller counts when it is (reportGranted, multiTake.finish)
				h.c.cut.add(h.lockPath())
			}
		}
		if h.node != nil {
			h.c.holds.drop(h.node)
		}
		h.c.holding.Add(-1)
		select {
		case h.c.holdEnded <- struct{}{}:
		default:
		}
	}
	h.cancel(cause)
}

// freed frees what the hold owns, once, and returns the outcome; callers
// that come later wait for the first.
func (h *hold) freed() error {
	h.freeOnce.Do(func() {
		if h.free == nil {
			h.freeErr = h.deleteNode() // no method value kept per hold
		} else {
			h.freeErr = h.free()
		}
	})
	return h.freeErr
}

// deleteNode is the free function of a node hold: a guaranteed delete. A
// node found already gone means the hold had been lost unseen.
func (h *hold) deleteNode() error {
	gone, err := h.c.deleteNodeGone(context.Background(), h.node.path, h.story)
	if gone {
		h.node.solo.deleted(h.node.name)
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return errorf(ErrLockLost, "%s: lock lost: node already gone", h.name)
	case err != nil:
		return wrapf(err, "%s", h.name)
	}
	return nil
}
