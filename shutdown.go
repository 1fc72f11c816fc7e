package zklock

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Shutdown closes the Client gracefully, as http.Server.Shutdown closes a
// server: at once, new acquires fail with ErrClosed and acquires waiting
// in a queue end with ErrClosed, leaving no node; the holds that stand
// are left to their owners, whose Release ends them as usual (their
// contexts are not cancelled, and nothing is lost meanwhile); and once
// none stands, or ctx is done, the Client closes as Close does, which
// ends the holds still standing (lost, with ErrClosed).
//
// A re-entry of a hold that stands still succeeds meanwhile: it takes
// nothing new.
//
// Shutdown returns nil if no hold stood when the Client began to close:
// each was released, or lost on its own (its node deleted, its session
// lost, its maximum hold time reached), which its owner learns from the
// hold, not from Shutdown. Otherwise it returns an error that says how
// many holds the close cut short (the holds granted to their callers
// that stood when Close began, a MultiLock's as its members) and names
// their locks by the paths their recipes were made with (a lease's
// Semaphore's, a leadership's or a term's election's): each path once,
// sorted, at most ten and then how many more. The error wraps ctx.Err()
// (and its cause) when ctx ended the wait, or ErrClosed when a Close from
// elsewhere cut in, which ends the Shutdown at once.
//
// Shutdowns that run at once wait alike, and report the same holds. A
// Shutdown begun after Close began cut nothing short: it returns nil once
// the Client is closed (Close's Warn record says what Close cut short).
// One gap remains: a hold whose grant is being handed to its caller at
// the very moment the Client closes (its node taken, its acquire not yet
// returned) may be counted after Shutdown has read the count; that
// acquire then returns a hold already lost, as a hold lost to Close.
func (c *Client) Shutdown(ctx context.Context) error {
	if c.zero() {
		return nil
	}
	if ctx == nil {
		return wrapf(ErrInvalidArgument, "shutdown: nil context")
	}
	late := c.closeBegun()
	c.startDrain()
	why := c.awaitHolds(ctx)
	c.Close() // returns once the Close that ends the holds, ours or another's, is done
	n, locks := c.cut.read()
	if late || n == 0 {
		return nil
	}
	what := fmt.Sprintf("shutdown: %d hold(s) cut short, of %s", n, locks)
	if cause := context.Cause(ctx); why == ctx.Err() && cause != why {
		return &wrapError{msg: msgPrefix + what + ": " + unprefixed(why) + " (" + unprefixed(cause) + ")", errs: []error{why, cause}}
	}
	return wrapf(why, "%s", what)
}

// awaitHolds waits until no hold of c stands, ctx is done, or c is being
// closed, and returns why a hold still standing is cut short: ctx.Err(),
// or ErrClosed for a Close (or for a hold granted as the wait ended).
func (c *Client) awaitHolds(ctx context.Context) error {
	for c.holding.Load() > 0 {
		select {
		case <-c.holdEnded: // look again
		case <-c.closing:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ErrClosed
}

// closeBegun reports whether Close has begun, or c was closed from the
// start (NewClient with a nil connection).
func (c *Client) closeBegun() bool {
	if c.cut.begun.Load() {
		return true
	}
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// acquisition is an acquire under way, as acquiring set it up.
type acquisition struct {
	story                      // its events
	ctx     context.Context    // what it waits under: the caller's ctx, also ended with cause ErrClosed when a Shutdown begins
	cancel  context.CancelFunc // releases ctx (see stop)
	maxHold time.Duration      // of the holds it grants (see maxHoldOf)
	holder  *holderProbe       // names the lock's holder if it fails (see probeHolder); nil for none
}

// stop releases a's context and its holder probe; the acquire calls it
// when it returns.
func (a *acquisition) stop() {
	a.cancel()
	a.holder.stop()
}

// acquiring begins an acquire that is not a re-entry, with ctx (not nil):
// op, such as "acquire", of path, a lock of kind r on c whose maximum hold
// time is lockMax (0: none). It begins the acquire's story, so that every
// acquire that gets this far ends in one terminal event, also when it is
// refused here, before it queues: for refused (the recipe's own refusal,
// found without I/O, such as ErrLockUpgrade; nil for none), for a bound
// ContextWithMaxHold refuses (ErrInvalidArgument), for a ctx already
// done, and with ErrClosed once a Shutdown or Close has begun, in that
// order. A refusal is reported as the story's failure, and the error
// returned, naming op and path, is the one the caller returns.
func (c *Client) acquiring(ctx context.Context, r Recipe, op, path string, lockMax time.Duration, refused error) (acquisition, error) {
	a := acquisition{story: beginStory(c, r, path)}
	err := refused
	if err == nil {
		a.maxHold, err = maxHoldOf(ctx, lockMax)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && c.drain.Err() != nil {
		err = ErrClosed
	}
	if err != nil {
		return a, a.failed(opErr(ctx, op, path, err))
	}
	actx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.drain, func() { cancel(ErrClosed) })
	a.ctx, a.cancel = actx, func() { stop(); cancel(nil) }
	return a, nil
}

// shutdownErr returns err, an acquire's under actx (see acquiring), as
// ErrClosed if a Shutdown ended actx while the caller's ctx stands.
func shutdownErr(ctx, actx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return wrapf(ErrClosed, "shutting down")
	}
	return err
}

// drainState is the part of a Client that Shutdown drains with: drain,
// which the acquires watch (see acquiring), cancelled once, by the first
// of Shutdown (startDrain) and Close (client.go); and holdEnded, which
// hold.go signals (never closes) as each hold ends. Both are made by
// init and never replaced.
type drainState struct {
	drain       context.Context         // cancelled when a Shutdown begins: acquires end (see acquiring)
	drainCancel context.CancelCauseFunc // cancels drain
	drainOnce   sync.Once
	holdEnded   chan struct{} // signalled (not closed) when a hold ends, for Shutdown
}

func (d *drainState) init() {
	d.holdEnded = make(chan struct{}, 1)
	d.drain, d.drainCancel = context.WithCancelCause(context.Background())
}

// startDrain cancels drain, once: acquires waiting end with ErrClosed.
func (d *drainState) startDrain() {
	d.drainOnce.Do(func() { d.drainCancel(ErrClosed) })
}

// cutShort is the account of the holds that closing a Client cut short:
// the holds granted to their callers that stood when Close began, which
// end after it, whatever ends each (Close's sweep, a release or a loss
// that comes first, a MultiLock giving up its other members). Holds
// released or lost before are not counted, nor holds granted as Close
// began whose acquires fail with ErrClosed. Close is done writing it when
// it returns, but for a hold whose grant was under way then.
type cutShort struct {
	begun atomic.Bool // Close has begun; set first

	mu    sync.Mutex
	n     int                 // holds cut short; guarded by mu
	locks map[string]struct{} // the paths of their locks; guarded by mu
}

// begin starts the account: every hold that ends from now on was cut
// short.
func (r *cutShort) begin() { r.begun.Store(true) }

// add counts a hold of the lock at path, relative to the namespace.
func (r *cutShort) add(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.locks == nil {
		r.locks = make(map[string]struct{})
	}
	r.locks[path] = struct{}{}
}

// read returns how many holds were cut short, and their locks' paths,
// sorted and joined with commas: at most maxNamed, and how many more.
func (r *cutShort) read() (int, string) {
	r.mu.Lock()
	n, ps := r.n, slices.Sorted(maps.Keys(r.locks))
	r.mu.Unlock()
	return n, namePaths(ps)
}

// maxNamed bounds the paths that namePaths names.
const maxNamed = 10

// namePaths joins the sorted paths ps with commas: at most maxNamed,
// and how many more.
func namePaths(ps []string) string {
	if len(ps) > maxNamed {
		return strings.Join(ps[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(ps)-maxNamed)
	}
	return strings.Join(ps, ", ")
}

// multiTake is a MultiLock's acquire under way, found in the context its
// members are taken with: the member holds it makes are granted to the
// MultiLock, not yet to its caller, so Shutdown counts them (see
// cutShort) only once the MultiLock is granted, and never if its acquire
// fails and gives them up. A MultiLock that is a member of another hands
// its members on to the outer acquire.
type multiTake struct {
	outer *multiTake // the acquire of a MultiLock this one is a member of, or nil

	mu    sync.Mutex
	done  bool    // the acquire has ended; guarded by mu
	holds []*hold // the member holds taken; guarded by mu
}

// multiTakeKey is the context key of a multiTake.
type multiTakeKey struct{}

// withMultiTake returns ctx marked for the members of a MultiLock's
// acquire, and the acquire's multiTake.
func withMultiTake(ctx context.Context) (context.Context, *multiTake) {
	outer, _ := ctx.Value(multiTakeKey{}).(*multiTake)
	mt := &multiTake{outer: outer}
	return context.WithValue(ctx, multiTakeKey{}, mt), mt
}

// joinMultiTake records h, a hold being made with ctx, as a member of the
// MultiLock acquire that ctx marks, if one is under way, and reports
// whether it did.
func joinMultiTake(ctx context.Context, h *hold) bool {
	mt, _ := ctx.Value(multiTakeKey{}).(*multiTake)
	return mt != nil && mt.adopt([]*hold{h})
}

// adopt records holds as members of the acquire, unless it has ended.
func (mt *multiTake) adopt(holds []*hold) bool {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if mt.done {
		return false
	}
	mt.holds = append(mt.holds, holds...)
	return true
}

// finish ends the acquire. Granted, its member holds become its caller's
// (or the outer acquire's members): those that Close has cut short
// already are counted now. Failed, they stay uncounted: no caller had
// them.
func (mt *multiTake) finish(granted bool) {
	mt.mu.Lock()
	mt.done = true
	holds := mt.holds
	mt.holds = nil
	mt.mu.Unlock()
	if !granted || mt.outer != nil && mt.outer.adopt(holds) {
		return
	}
	for _, h := range holds {
		h.mu.Lock()
		h.member = false
		cut := h.cut && h.reported
		h.mu.Unlock()
		if cut {
			h.c.cut.add(h.lockPath())
		}
	}
}
