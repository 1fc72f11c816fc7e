package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Locker is the interface common to the lock recipes.
type Locker interface {
	// Acquire blocks until the lock is held or ctx is done. The returned
	// context carries the hold and is cancelled (context.Cause =
	// ErrLockLost) when the hold is lost, or (Cause = ErrReleased) when it
	// is released. Its cancellation does not depend on ctx's deadline.
	Acquire(ctx context.Context) (context.Context, error)
	// TryAcquire is Acquire without waiting: ErrLocked when another holds it.
	TryAcquire(ctx context.Context) (context.Context, error)
	// Release gives up one hold carried by ctx; ErrNotHeld if ctx carries none.
	Release(ctx context.Context) error
	// IsAcquiredInThisProcess reports whether any hold of this object exists.
	IsAcquiredInThisProcess() bool
}

// MultiLock holds several locks as one, like Curator's
// InterProcessMultiLock: Acquire takes them all, in order, or none.
//
// A MultiLock is safe for concurrent use. Its holds are carried by the
// context Acquire returns, which also carries every member's hold, and it
// is re-entrant per context. The returned context is cancelled when the
// MultiLock is released or when any member's hold is lost. To avoid
// deadlocks between MultiLocks over the same locks, every process must take
// them in the same order; [NewMultiLockPaths] sorts them.
type MultiLock struct {
	locks []Locker // immutable

	mu    sync.Mutex              // protects holds
	holds map[*multiHold]struct{} // live holds
}

type multiHold struct {
	ctx    context.Context         // the MultiLock's hold context
	cancel context.CancelCauseFunc // ends ctx
	member []context.Context       // member hold contexts, in acquisition order
	count  int                     // guarded by MultiLock.mu
}

type multiKey struct{ m *MultiLock }

// NewMultiLock returns a MultiLock over locks, taken in the given order.
func NewMultiLock(locks ...Locker) *MultiLock {
	return &MultiLock{locks: slices.Clone(locks), holds: make(map[*multiHold]struct{})}
}

// NewMultiLockPaths returns a MultiLock over Mutexes on paths, taken in
// sorted path order whatever the order given, so that two MultiLocks over
// the same paths cannot deadlock. A path given twice is locked once.
func NewMultiLockPaths(c *Client, paths ...string) (*MultiLock, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("zklock: multi-lock: no paths: %w", ErrInvalidArgument)
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(paths)))
	locks := make([]Locker, len(sorted))
	for i, p := range sorted {
		m, err := NewMutex(c, p)
		if err != nil {
			return nil, err
		}
		locks[i] = m
	}
	return NewMultiLock(locks...), nil
}

// Acquire takes every lock, in order, under ctx's one deadline. If ctx
// already carries a hold of ml, it only counts the re-entry. On failure it
// releases what it took, in reverse order, and returns an error wrapping
// the member's error; it leaves no node behind.
func (ml *MultiLock) Acquire(ctx context.Context) (context.Context, error) {
	return ml.acquire(ctx, Locker.Acquire)
}

// TryAcquire is Acquire without waiting: if any lock is held by another
// participant it releases what it took and returns an error wrapping
// ErrLocked.
func (ml *MultiLock) TryAcquire(ctx context.Context) (context.Context, error) {
	return ml.acquire(ctx, Locker.TryAcquire)
}

func (ml *MultiLock) acquire(ctx context.Context, take func(Locker, context.Context) (context.Context, error)) (context.Context, error) {
	if ctx == nil {
		return nil, fmt.Errorf("zklock: multi-lock: nil context: %w", ErrInvalidArgument)
	}
	if h, _ := ctx.Value(multiKey{ml}).(*multiHold); h != nil {
		ml.mu.Lock()
		if _, live := ml.holds[h]; live {
			h.count++
			ml.mu.Unlock()
			return h.ctx, nil
		}
		ml.mu.Unlock()
	}
	h := &multiHold{count: 1}
	var carrier context.Context = ctx // ctx's cancellation, the holds' values
	for i, l := range ml.locks {
		mctx, err := take(l, carrier)
		if err != nil {
			ml.releaseMembers(h.member)
			return nil, fmt.Errorf("zklock: multi-lock: lock %d of %d: %w", i+1, len(ml.locks), err)
		}
		h.member = append(h.member, mctx)
		carrier = valuesFrom{ctx, mctx}
	}
	var last context.Context = context.Background()
	if n := len(h.member); n > 0 {
		last = h.member[n-1]
	}
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(valuesFrom{ctx, last}))
	h.cancel = cancel
	h.ctx = context.WithValue(hctx, multiKey{ml}, h)
	for _, mctx := range h.member {
		context.AfterFunc(mctx, func() { cancel(context.Cause(mctx)) })
	}
	ml.mu.Lock()
	ml.holds[h] = struct{}{}
	ml.mu.Unlock()
	return h.ctx, nil
}

// Release gives up one hold carried by ctx. The last Release cancels the
// hold's context with cause ErrReleased and releases every lock in reverse
// order, going on after failures; it returns them all joined (a lost
// member's error wraps ErrLockLost). It returns an error wrapping ErrNotHeld
// if ctx carries no hold of ml.
func (ml *MultiLock) Release(ctx context.Context) error {
	var h *multiHold
	if ctx != nil {
		h, _ = ctx.Value(multiKey{ml}).(*multiHold)
	}
	ml.mu.Lock()
	if _, live := ml.holds[h]; h == nil || !live {
		ml.mu.Unlock()
		return fmt.Errorf("zklock: multi-lock release: %w", ErrNotHeld)
	}
	if h.count--; h.count > 0 {
		ml.mu.Unlock()
		return nil
	}
	delete(ml.holds, h)
	ml.mu.Unlock()
	h.cancel(ErrReleased)
	return ml.releaseMembers(h.member)
}

// IsAcquiredInThisProcess reports whether any context holds ml.
func (ml *MultiLock) IsAcquiredInThisProcess() bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return len(ml.holds) > 0
}

// releaseMembers releases the member holds in reverse order and joins the
// failures.
func (ml *MultiLock) releaseMembers(member []context.Context) error {
	var errs []error
	for i := len(member) - 1; i >= 0; i-- {
		if err := ml.locks[i].Release(member[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// valuesFrom is a context with the cancellation and deadline of its
// embedded context and the values of another.
type valuesFrom struct {
	context.Context
	values context.Context
}

func (v valuesFrom) Value(key any) any { return v.values.Value(key) }
