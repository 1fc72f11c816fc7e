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
var errLostClosed = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)

// hold is one ownership of a lock, shared by every recipe: of a node (a
// Mutex side, a lease) or of other holds (a MultiLock). It owns the context
// that carries the ownership and ends it once, with cause ErrReleased or
// ErrLockLost; it gives up what it owns exactly once, whichever ending
// comes first; and, for a node, it runs the one goroutine that watches for
// the loss.
type hold struct {
	// Written once by newHold, read-only after.
	c      *Client                 // nil for a hold of other holds
	name   string                  // names the hold in errors, such as "lock /a"
	path   string                  // the lock's base path, for events
	start  time.Time               // when the hold began
	node   *lockNode               // nil for a hold of other holds
	ctx    context.Context         // carries the hold; cancelled when it ends
	cancel context.CancelCauseFunc // ends ctx
	live   *atomic.Int32           // the owner's count of live holds
	free   func() error            // gives up what the hold owns; run once

	freeOnce sync.Once
	freeErr  error // written inside freeOnce

	mu    sync.Mutex // protects the fields below
	count int        // Releases still owed
	ended bool       // released or lost
	lost  error      // why the hold was lost, nil otherwise
}

// holdKey finds the hold of owner (a *Mutex, *SemaphoreMutex or
// *MultiLock) in the context that carries it.
type holdKey struct{ owner any }

// holdSpec says what a new hold is.
type holdSpec struct {
	key  any           // finds the hold in its context; nil for none
	name string        // names the hold in errors, such as "lock /a"
	path string        // the lock's base path, for events
	node *lockNode     // nil for a hold of other holds
	live *atomic.Int32 // the owner's count of live holds
	free func() error  // nil: delete node
}

// newHold returns a live hold with one Release owed. Its context keeps the
// values of parent but not its cancellation, and carries the hold under
// spec.key. c is nil for a hold of other holds.
func newHold(c *Client, parent context.Context, spec holdSpec) *hold {
	h := &hold{c: c, name: spec.name, path: spec.path, node: spec.node, live: spec.live, free: spec.free, count: 1, start: time.Now()}
	h.ctx, h.cancel = context.WithCancelCause(context.WithoutCancel(parent))
	if spec.key != nil {
		h.ctx = context.WithValue(h.ctx, spec.key, h)
	}
	if h.free == nil {
		h.free = h.deleteNode
	}
	h.live.Add(1)
	return h
}

// holdIn returns the hold of owner that ctx carries, live or not.
func holdIn(ctx context.Context, owner any) *hold {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(holdKey{owner}).(*hold)
	return h
}

// watch starts the goroutine that ends the hold when it is lost. It
// reports false, and loses the hold, once the Client has begun to close.
func (h *hold) watch(snap snapshot, onRevoke func(string)) bool {
	if h.c.goFunc(func() { h.monitor(snap, onRevoke) }) {
		return true
	}
	h.lose(errLostClosed)
	return false
}

// monitor follows the held node until the hold ends, and loses the hold
// when the node is deleted, the session is lost, or (under StandardPolicy)
// the connection is suspended. It never blocks on the network itself:
// setting the node's watch, at first (for a node granted at once) or again
// after a data change, runs beside it, so a loss is seen meanwhile.
func (h *hold) monitor(snap snapshot, onRevoke func(string)) {
	c := h.c
	var (
		own     <-chan zk.Event
		watched <-chan watchResult
	)
	if h.node.isKnown() {
		own = h.node.own // set before the hold began
	} else {
		watched = h.watchNode(onRevoke)
	}
	for {
		stateCh := c.stateChanged()
		if err := c.holdLost(snap); err != nil {
			h.lose(err)
			return
		}
		select {
		case w := <-watched:
			if w.err != nil {
				h.loseBy(w.err)
				return
			}
			own, watched = w.ch, nil
		case ev := <-own:
			if err := ownEventErr(ev); err != nil {
				h.loseBy(err)
				return
			}
			own, watched = nil, h.watchNode(onRevoke)
		case <-stateCh:
		case <-h.ctx.Done():
			return
		case <-c.closing:
			h.lose(errLostClosed)
			return
		}
	}
}

// watchResult is the outcome of setting a node's watch.
type watchResult struct {
	ch  <-chan zk.Event
	err error
}

// watchNode sets the held node's watch on a goroutine of its own, which
// ends with the hold at the latest.
func (h *hold) watchNode(onRevoke func(string)) <-chan watchResult {
	out := make(chan watchResult, 1)
	if !h.c.goFunc(func() {
		ch, err := watchOwn(h.ctx, h.c, h.node, onRevoke)
		out <- watchResult{ch, err}
	}) {
		out <- watchResult{err: ErrClosed}
	}
	return out
}

// loseBy loses the hold because following its node failed with err,
// unless the hold ended meanwhile.
func (h *hold) loseBy(err error) {
	if h.ctx.Err() != nil {
		return // released while we looked
	}
	switch {
	case errors.Is(err, errNodeGone):
		err = fmt.Errorf("%w: node %s deleted", ErrLockLost, h.c.relPath(h.node.path))
	case errors.Is(err, ErrClosed):
		err = errLostClosed
	default:
		err = fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	h.lose(err)
}

// token returns the node's fencing token, waiting if its hold's monitor
// has not learnt it yet (a node granted at once). what and path name the
// operation in errors.
func (h *hold) token(ctx context.Context, what, path string) (int64, error) {
	select {
	case <-h.node.known:
		return h.node.czxid, nil
	case <-h.ctx.Done():
		return 0, h.check(what, path)
	case <-ctx.Done():
		return 0, opErr(ctx, what, path, ctx.Err())
	}
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
		return fmt.Errorf("zklock: %s %s: %w", what, path, ErrNotHeld)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.lost != nil:
		return h.lost
	case h.ended:
		return fmt.Errorf("zklock: %s %s: %w", what, path, ErrNotHeld)
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
		return fmt.Errorf("zklock: release %s: %w", path, ErrNotHeld)
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
	h.mu.Unlock()
	h.emit(Event{Kind: EventReleased})
	return h.freed()
}

// lose ends the hold with err, which wraps ErrLockLost, and frees what it
// owns: a node that still exists must not block the queue.
func (h *hold) lose(err error) {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return
	}
	h.lost = fmt.Errorf("zklock: %s: %w", h.name, err)
	h.endLocked(h.lost)
	h.mu.Unlock()
	h.emit(Event{Kind: EventLost, Err: h.lost}) // logged there, at Warn
	h.freed()
}

// emit reports ev, with the hold's path, node and duration, to the
// Client's Observer.
func (h *hold) emit(ev Event) {
	if h.c == nil {
		return
	}
	ev.Path, ev.Held = h.path, time.Since(h.start)
	if h.node != nil {
		ev.Node = h.c.relPath(h.node.path)
	}
	h.c.emit(ev)
}

// endLocked marks the hold ended and cancels its context with cause; h.mu
// must be held.
func (h *hold) endLocked(cause error) {
	h.ended = true
	h.live.Add(-1)
	h.cancel(cause)
}

// freed frees what the hold owns, once, and returns the outcome; callers
// that come later wait for the first.
func (h *hold) freed() error {
	h.freeOnce.Do(func() { h.freeErr = h.free() })
	return h.freeErr
}

// deleteNode is the free function of a node hold: a guaranteed delete. A
// node found already gone means the hold had been lost unseen.
func (h *hold) deleteNode() error {
	err := h.c.deleteNode(h.node.path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("zklock: %s: %w: node already gone", h.name, ErrLockLost)
	case err != nil:
		return fmt.Errorf("zklock: %s: %w", h.name, err)
	}
	return nil
}
