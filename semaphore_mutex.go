package zklock

import (
	"context"
	"sync"
)

// SemaphoreMutex is a non-re-entrant lock on a one-lease [Semaphore], in
// the layout of Curator's InterProcessSemaphoreMutex (so it interoperates
// with that, not with Curator's InterProcessMutex).
//
// A SemaphoreMutex is safe for concurrent use and implements [Locker].
// Acquire returns a context that carries the hold and is cancelled when the
// hold is released (cause ErrReleased) or lost (cause ErrLockLost). It is
// not re-entrant: Acquire with a context that already holds it (through
// this SemaphoreMutex or another of the same Client and path) returns
// ErrNotReentrant, where Curator deadlocks; any other context queues.
// [SemaphoreMutex.Lock] returns the hold as a [Hold]. As in
// Curator, Release accepts any context: one that carries no hold releases
// the newest hold taken through the SemaphoreMutex. A context that carries
// a hold only ever releases that hold, so a late Release of a lost hold
// never frees the next one.
type SemaphoreMutex struct {
	s *Semaphore // written once by NewSemaphoreMutex

	mu  sync.Mutex // protects cur
	cur *hold      // the newest hold taken through m, until released
}

// NewSemaphoreMutex returns a SemaphoreMutex on path, relative to the
// Client's namespace. It takes the options NewSemaphore takes. It does no
// I/O.
func NewSemaphoreMutex(c *Client, path string, opts ...LockOption) (*SemaphoreMutex, error) {
	s, err := NewSemaphore(c, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	s.live = c.lives.count(s.mutexID()) // holds belong to the lock
	s.kind = RecipeSemaphoreMutex
	return &SemaphoreMutex{s: s}, nil
}

// Acquire blocks until the lock is held, ctx is done, or the Client is
// closed, and returns the hold's context. On failure it returns an error
// wrapping ctx.Err() (and its cause), ErrClosed, ErrNotReentrant or the
// ZooKeeper error, and leaves no node behind.
func (m *SemaphoreMutex) Acquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, false)
}

// TryAcquire is Acquire without waiting: ErrLocked when another holds it,
// ErrNotConnected without a connection (see [Mutex.TryLock]).
func (m *SemaphoreMutex) TryAcquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, true)
}

func (m *SemaphoreMutex) acquire(ctx context.Context, try bool) (context.Context, error) {
	if m == nil || m.s == nil {
		return nil, wrapf(ErrInvalidArgument, "acquire: SemaphoreMutex not made by NewSemaphoreMutex")
	}
	var refused error
	if holdIn(ctx, m).isLive() {
		refused = ErrNotReentrant
	}
	leases, err := m.s.acquire(ctx, 1, try, refused)
	if err != nil {
		return nil, err
	}
	h := leases[0].h
	m.mu.Lock()
	m.cur = h
	m.mu.Unlock()
	return context.WithValue(h.ctx, holdKey{keyOf(m)}, h), nil
}

// Lock is Acquire returning the hold as a [Hold], released with
// [Hold.Release]. Its errors are Acquire's.
func (m *SemaphoreMutex) Lock(ctx context.Context) (*Hold, error) {
	hctx, err := m.acquire(ctx, false)
	return handleOf(m, m.path(), hctx, err)
}

// TryLock is Lock without waiting: ErrLocked when another holds it,
// ErrNotConnected without a connection (see [Mutex.TryLock]).
func (m *SemaphoreMutex) TryLock(ctx context.Context) (*Hold, error) {
	hctx, err := m.acquire(ctx, true)
	return handleOf(m, m.path(), hctx, err)
}

// Release ends the hold that ctx carries. As in Curator, any context may
// release: one that carries no hold of m releases the newest hold taken
// through m. A context that carries an older hold only ever ends that one.
// Release returns an error wrapping ErrNotHeld if there is nothing to
// release, and one wrapping ErrLockLost if the hold was lost (once; the
// lock is then free).
func (m *SemaphoreMutex) Release(ctx context.Context) error {
	if m == nil || m.s == nil {
		return wrapf(ErrInvalidArgument, "release: SemaphoreMutex not made by NewSemaphoreMutex")
	}
	h := holdIn(ctx, m)
	m.mu.Lock()
	if h == nil {
		h = m.cur
	}
	if h != nil && h == m.cur {
		m.cur = nil
	}
	m.mu.Unlock()
	if h == nil {
		return wrapf(ErrNotHeld, "release %s", m.s.path)
	}
	return h.release(m.s.path)
}

// IsAcquiredInThisProcess reports whether the lock is held, through m or
// through another SemaphoreMutex of the same Client and path.
func (m *SemaphoreMutex) IsAcquiredInThisProcess() bool {
	return m != nil && m.s != nil && m.s.live.Load() > 0
}

// lockKey implements lockKeyer: a SemaphoreMutex's holds belong to its
// lock.
func (m *SemaphoreMutex) lockKey() (any, string) {
	if m == nil || m.s == nil {
		return nil, ""
	}
	return m.s.mutexID(), m.s.path
}

// mutexID identifies the lock of a SemaphoreMutex on s (see lockID).
func (s *Semaphore) mutexID() lockID {
	return lockID{c: s.c, path: s.leases}
}

// path returns the lock's path, "" for a SemaphoreMutex not made by
// NewSemaphoreMutex.
func (m *SemaphoreMutex) path() string {
	if m == nil || m.s == nil {
		return ""
	}
	return m.s.path
}
