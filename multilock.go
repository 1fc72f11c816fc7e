package zklock

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
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
// MultiLock is released or when any member's hold is lost; a member lost
// means the MultiLock lost, and the other members are released at once.
// To avoid deadlocks between MultiLocks over the same locks, every process
// must take them in the same order; [NewMultiLockPaths] sorts them.
// [MultiLock.Lock] returns the hold as a [Hold], whose [Hold.Multi] checks
// every member's node.
//
// A member never waits for a hold that the MultiLock took itself: a
// member that locks what an earlier member already holds (a Mutex of the
// same Client and path inside a nested MultiLock) re-enters it, and the
// read side of a [ReadWriteLock] after its write side is a downgrade. The
// write side after the read side is refused with ErrLockUpgrade.
type MultiLock struct {
	locks []Locker // immutable

	live atomic.Int32 // holds that stand
}

// NewMultiLock returns a MultiLock over locks, taken in the given order. A
// nil member, or two members of this package that lock the same thing (the
// same Mutex twice, or two on one path and Client, which would wait for
// each other for ever), make every Acquire fail with ErrInvalidArgument.
func NewMultiLock(locks ...Locker) *MultiLock {
	return &MultiLock{locks: slices.Clone(locks)}
}

// NewMultiLockPaths returns a MultiLock over Mutexes on paths, taken in
// sorted path order whatever the order given, so that two MultiLocks over
// the same paths cannot deadlock. A path given twice is locked once.
func NewMultiLockPaths(c *Client, paths ...string) (*MultiLock, error) {
	if len(paths) == 0 {
		return nil, wrapf(ErrInvalidArgument, "multi-lock: no paths")
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

// Lock is Acquire returning the hold as a [Hold], released with
// [Hold.Release]. Its errors are Acquire's.
func (ml *MultiLock) Lock(ctx context.Context) (*Hold, error) {
	hctx, err := ml.acquire(ctx, Locker.Acquire)
	return handleOf(ml, "multi-lock", hctx, err)
}

// TryLock is Lock without waiting: ErrLocked when another holds a member,
// ErrNotConnected when a member's Client has no connection (see
// [Mutex.TryLock]); it then releases what it took.
func (ml *MultiLock) TryLock(ctx context.Context) (*Hold, error) {
	hctx, err := ml.acquire(ctx, Locker.TryAcquire)
	return handleOf(ml, "multi-lock", hctx, err)
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
	if err := ml.usable(ctx); err != nil {
		return nil, err
	}
	if h := holdIn(ctx, ml); h != nil && h.enter() {
		return h.ctx, nil
	}
	st := beginStory(ml.eventsTo())
	var member []context.Context
	parts := make([]*hold, 0, len(ml.locks))
	// carrier has ctx's cancellation and values, and the holds of ctx and
	// of every member taken so far: a member that re-enters returns its
	// own hold's context, which carries no other member's. It marks the
	// members' new holds as the MultiLock's, not yet its caller's.
	carrier, mt := withMultiTake(ctx)
	for i, l := range ml.locks {
		before := memberHold(l, carrier)
		mctx, err := take(l, carrier)
		if err != nil {
			mt.finish(false)
			ml.releaseMembers(member)
			return nil, st.failed(wrapf(err, "multi-lock: lock %d of %d", i+1, len(ml.locks)))
		}
		member = append(member, mctx)
		mh := memberHold(l, mctx)
		if parts != nil {
			parts = append(parts, mh)
			if mh == nil { // not this package's: no node to check
				parts = nil
			}
		}
		if mh == nil || mh != before { // not a re-entry of a hold the carrier carries
			carrier = mergeHolds(carrier, mctx, mh)
		}
	}
	var stops []func() bool
	free := func() error {
		for _, stop := range stops {
			stop()
		}
		return ml.releaseMembers(member)
	}
	h := newHold(nil, carrier, holdSpec{key: holdKey{ml}, name: "multi-lock", parts: parts, live: &ml.live, free: free, story: st})
	for _, mctx := range member {
		// A member lost is the MultiLock lost: the other members are
		// released at once, so they block no one.
		stops = append(stops, context.AfterFunc(mctx, func() {
			if cause := context.Cause(mctx); errors.Is(cause, ErrLockLost) {
				h.lose(cause)
			}
		}))
	}
	st.granted(h)
	mt.finish(true)
	return h.ctx, nil
}

// eventsTo returns what a story of the MultiLock needs: the Client that
// hears its events, its first member's of this package (nil if none is),
// the recipe, and the members' paths joined with commas.
func (ml *MultiLock) eventsTo() (*Client, Recipe, string) {
	var c *Client
	var paths []string
	for _, l := range ml.locks {
		var lc *Client
		var p string
		switch m := l.(type) {
		case *Mutex:
			if m != nil {
				lc, p = m.c, m.path
			}
		case *SemaphoreMutex:
			if m != nil && m.s != nil {
				lc, p = m.s.c, m.s.path
			}
		case *MultiLock:
			if m != nil {
				lc, _, p = m.eventsTo()
			}
		}
		if c == nil {
			c = lc
		}
		if p != "" {
			paths = append(paths, p)
		}
	}
	return c, RecipeMulti, strings.Join(paths, ",")
}

// usable returns an error wrapping ErrInvalidArgument for a nil ctx, a
// MultiLock with no members, one with a nil member, or one with two
// members that lock the same thing.
func (ml *MultiLock) usable(ctx context.Context) error {
	switch {
	case ctx == nil:
		return wrapf(ErrInvalidArgument, "multi-lock: nil context")
	case ml == nil || len(ml.locks) == 0:
		return wrapf(ErrInvalidArgument, "multi-lock: no members")
	}
	seen := make(map[any]int, len(ml.locks))
	for i, l := range ml.locks {
		if l == nil {
			return wrapf(ErrInvalidArgument, "multi-lock: lock %d of %d is nil", i+1, len(ml.locks))
		}
		key, name := memberKey(l)
		if key == nil {
			continue
		}
		if j, dup := seen[key]; dup {
			return wrapf(ErrInvalidArgument, "multi-lock: locks %d and %d of %d both lock %s", j+1, i+1, len(ml.locks), name)
		}
		seen[key] = i
	}
	return nil
}

// memberKey identifies what a member of this package locks (see keyOf),
// and names it; nil for another kind of Locker, or one not made by a
// constructor.
func memberKey(l Locker) (any, string) {
	if k, ok := l.(lockKeyer); ok {
		return k.lockKey()
	}
	return nil, ""
}

// lockKey implements lockKeyer: a MultiLock's holds are its own.
func (ml *MultiLock) lockKey() (any, string) {
	if ml == nil {
		return nil, ""
	}
	return ml, "a multi-lock"
}

// memberHold returns the hold that mctx carries of member l, or nil if l
// is not a lock of this package.
func memberHold(l Locker, mctx context.Context) *hold {
	if key, _ := memberKey(l); key != nil {
		return holdIn(mctx, l)
	}
	return nil
}

// Release gives up one hold carried by ctx. The last Release cancels the
// hold's context with cause ErrReleased and releases every lock in reverse
// order, going on after failures; it returns them all joined (a lost
// member's error wraps ErrLockLost). It returns an error wrapping ErrNotHeld
// if ctx carries no hold of ml.
func (ml *MultiLock) Release(ctx context.Context) error {
	h := holdIn(ctx, ml)
	if ml == nil || h == nil {
		var live int32
		if ml != nil {
			live = ml.live.Load()
		}
		return notHeld(nil, "multi-lock", live)
	}
	err := h.release("multi-lock")
	if errors.Is(err, ErrLockLost) {
		// Lost: the members were released then; report how that went.
		return joinErrs(err, h.freed())
	}
	return err
}

// IsAcquiredInThisProcess reports whether any context holds ml.
func (ml *MultiLock) IsAcquiredInThisProcess() bool {
	return ml != nil && ml.live.Load() > 0
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

// mergeHolds returns a context with ctx's cancellation, deadline and
// values that carries both ctx's holds and h's, whose context is hctx
// (h is nil for a foreign Locker's context).
func mergeHolds(ctx, hctx context.Context, h *hold) context.Context {
	// A hold taken with ctx has a context that carries ctx's holds
	// already: asking hctx alone keeps a lookup's cost that of one chain.
	// Asking both sides of every merge in a chain of merges would double
	// the cost with each.
	return &valuesFrom{Context: ctx, values: hctx, inherits: h != nil && sameContext(h.parent, ctx)}
}

// sameContext reports whether a and b are the same context, as a pointer
// (the context package's own contexts are pointers). Contexts of other
// kinds are taken for different: == could panic on them.
func sameContext(a, b context.Context) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// valuesFrom is a context with the cancellation and deadline of its
// embedded context, and the holds of both: it is the one type that merges
// two contexts (a hold's and a caller's in Bind, a MultiLock's members'),
// made by mergeHolds. A pointer, so that a hold taken with it can tell
// (sameContext).
type valuesFrom struct {
	context.Context
	values   context.Context
	inherits bool // values carries every hold of the embedded context
}

// Value answers a hold's key from both contexts: a live hold, from values
// first, then from the embedded context; else an ended hold, in the same
// order (which a lookup reports as ended); else nil. So neither side's
// holds are dropped, and a live hold is never hidden by an ended one of
// the same lock. When values inherits the embedded context's holds, it
// alone is asked. Every other key (the caller's values, and the context
// package's own, which context.Cause uses) is answered by the embedded
// context.
func (v *valuesFrom) Value(key any) any {
	if _, ok := key.(holdKey); !ok {
		return v.Context.Value(key)
	}
	first := v.values.Value(key)
	if v.inherits {
		return first
	}
	if h, _ := first.(*hold); first != nil && h.isLive() {
		return first
	}
	second := v.Context.Value(key)
	if h, _ := second.(*hold); first == nil || second != nil && h.isLive() {
		return second
	}
	return first
}
