package zklock

import (
	"context"
	"fmt"
	"sync"
)

// SemaphoreMutex is a non-re-entrant lock on a one-lease [Semaphore], in
// the layout of Curator's InterProcessSemaphoreMutex (so it interoperates
// with that, not with Curator's InterProcessMutex).
//
// A SemaphoreMutex is safe for concurrent use and implements [Locker].
// Acquire returns a context that carries the hold and is cancelled when the
// hold is released (cause ErrReleased) or lost (cause ErrLockLost). It is
// not re-entrant: Acquire with a context that already holds it returns
// ErrNotReentrant, where Curator deadlocks; any other context queues. As in
// Curator, Release accepts any context: the lock, not the context, is held.
type SemaphoreMutex struct {
	s *Semaphore

	mu     sync.Mutex              // protects the fields below
	lease  *Lease                  // the current hold's lease, nil when free
	cancel context.CancelCauseFunc // ends the current hold's context
	lost   error                   // why the last hold was lost, until a Release reports it
}

type semMutexKey struct{ m *SemaphoreMutex }

// NewSemaphoreMutex returns a SemaphoreMutex on path, relative to the
// Client's namespace. It takes the options NewSemaphore takes. It does no
// I/O.
func NewSemaphoreMutex(c *Client, path string, opts ...LockOption) (*SemaphoreMutex, error) {
	s, err := NewSemaphore(c, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	return &SemaphoreMutex{s: s}, nil
}

// Acquire blocks until the lock is held, ctx is done, or the Client is
// closed, and returns the hold's context. On failure it returns an error
// wrapping ctx.Err(), ErrClosed, ErrNotReentrant or the ZooKeeper error,
// and leaves no node behind.
func (m *SemaphoreMutex) Acquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, false)
}

// TryAcquire is Acquire without waiting: ErrLocked when another holds it.
func (m *SemaphoreMutex) TryAcquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, true)
}

func (m *SemaphoreMutex) acquire(ctx context.Context, try bool) (context.Context, error) {
	if ctx != nil {
		if l, _ := ctx.Value(semMutexKey{m}).(*Lease); l != nil {
			m.mu.Lock()
			held := m.lease == l
			m.mu.Unlock()
			if held {
				return nil, fmt.Errorf("zklock: acquire %s: %w", m.s.path, ErrNotReentrant)
			}
		}
	}
	leases, err := m.s.acquire(ctx, 1, try)
	if err != nil {
		return nil, err
	}
	l := leases[0]
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	hctx = context.WithValue(hctx, semMutexKey{m}, l)
	m.mu.Lock()
	m.lease, m.cancel, m.lost = l, cancel, nil
	m.mu.Unlock()
	watch := func() {
		<-l.Done()
		l.mu.Lock()
		lost := l.lost
		l.mu.Unlock()
		if lost == nil {
			return // released
		}
		cancel(lost)
		m.mu.Lock()
		if m.lease == l {
			m.lease, m.cancel, m.lost = nil, nil, lost
		}
		m.mu.Unlock()
	}
	if !m.s.c.goFunc(watch) {
		l.lose(fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
		watch()
	}
	return hctx, nil
}

// Release releases the lock, whichever context calls it. It returns an
// error wrapping ErrNotHeld if the lock is not held through m, and one
// wrapping ErrLockLost if the hold was lost (once; the lock is then free).
func (m *SemaphoreMutex) Release(context.Context) error {
	m.mu.Lock()
	l, cancel, lost := m.lease, m.cancel, m.lost
	m.lease, m.cancel, m.lost = nil, nil, nil
	m.mu.Unlock()
	if l == nil {
		if lost != nil {
			return lost
		}
		return fmt.Errorf("zklock: release %s: %w", m.s.path, ErrNotHeld)
	}
	cancel(ErrReleased)
	return l.Release()
}

// IsAcquiredInThisProcess reports whether the lock is held through m.
func (m *SemaphoreMutex) IsAcquiredInThisProcess() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease != nil
}
