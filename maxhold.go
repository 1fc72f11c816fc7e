package zklock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrMaxHold is the cause, with ErrLockLost, of a hold that its maximum
// hold time ended (see [WithMaxHold]).
var ErrMaxHold = errors.New("zklock: maximum hold time passed")

// WithMaxHold bounds how long a hold of the lock may stand: when d has
// passed since the grant, the hold ends as a lost hold does, whatever its
// owner is doing (even stuck in a deadlock or an endless loop, while the
// session's heartbeats, which go-zookeeper sends from goroutines of its
// own, keep the session alive): its context is cancelled with a cause that
// wraps ErrLockLost and ErrMaxHold, its node is deleted, so that the next
// participant is granted, Release reports the loss, and the Observer sees
// an EventLost with CauseMaxHold. It applies to every recipe: a Mutex, a
// ReadWriteLock's sides, each lease of a Semaphore, a SemaphoreMutex, an
// Election's leadership and a Selector's term. [ContextWithMaxHold] bounds
// one acquire; the smaller bound applies.
//
// Like any loss, it is noticed by the holder only through its context:
// a hold can always end early, so writes that must not come from a
// holder past its time are guarded by fencing (Hold.Token, Hold.Multi).
// d must be positive: anything else gives ErrInvalidArgument.
func WithMaxHold(d time.Duration) LockOption {
	return func(o *lockOptions) {
		if d <= 0 && o.err == nil {
			o.err = errorf(ErrInvalidArgument, "maximum hold time %v is not positive", d)
		}
		o.maxHold = d
	}
}

// maxHoldKey is the context key of ContextWithMaxHold's bound.
type maxHoldKey struct{}

// ContextWithMaxHold returns ctx with a maximum hold time for the holds of
// the acquires made with it, as Redisson's lease time bounds one lock
// call: see [WithMaxHold], whose rules it follows. A hold's context does
// not carry it on: acquires made with a hold's context are unbounded
// unless they say so. An acquire that re-enters a hold takes nothing new:
// the hold keeps the bound of its grant.
//
// A d that is not positive is a mistake that ContextWithMaxHold cannot
// return (it returns a context, as context.WithValue does, and never
// panics): each acquire made with the context then fails at once, before
// any ZooKeeper request, with an error wrapping ErrInvalidArgument that
// names the value. Check a computed d before you call it.
func ContextWithMaxHold(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return context.WithValue(ctx, maxHoldKey{}, refusedMaxHold{d})
	}
	return context.WithValue(ctx, maxHoldKey{}, d)
}

// refusedMaxHold is the value ContextWithMaxHold stores for a d that is
// not positive: the acquires made with it fail, naming d.
type refusedMaxHold struct{ d time.Duration }

// maxHoldOf returns the maximum hold time of an acquire with ctx of a lock
// whose own bound is lock (0 for none): the smaller of the two, or 0; an
// error for a bound ContextWithMaxHold refused.
func maxHoldOf(ctx context.Context, lock time.Duration) (time.Duration, error) {
	v := ctx.Value(maxHoldKey{})
	if r, ok := v.(refusedMaxHold); ok {
		return 0, errorf(ErrInvalidArgument, "ContextWithMaxHold(%v): maximum hold time is not positive", r.d)
	}
	if d, _ := v.(time.Duration); d > 0 && (lock == 0 || d < lock) {
		return d, nil
	}
	return lock, nil
}

// expireLocked starts the timer that ends h after d, if d is positive; h.mu must
// be held. The timer runs no goroutine until it fires; endLocked stops it.
func (h *hold) expireLocked(d time.Duration) {
	if d <= 0 {
		return
	}
	h.expiry = time.AfterFunc(d, func() {
		h.lose(kindOf(ErrLockLost, fmt.Errorf("%w (%v)", ErrMaxHold, d)))
	})
}
