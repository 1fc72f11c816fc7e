package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// NewSyncLocker returns a [sync.Locker] over l, for code that takes one,
// as etcd's concurrency.NewLocker does. Each Lock is a new participant:
// it blocks until l is held (through l.Acquire with a background context),
// and Unlock releases a hold that Lock took.
//
// A sync.Locker cannot return errors, so the adapter cannot promise what
// the rest of the package does:
//   - Lock has no deadline and no cancellation. It waits out connection
//     losses, and panics if acquiring fails otherwise (the Client is
//     closed, a bad path, an ACL refusal).
//   - Nothing tells the holder that its hold was lost (a suspension under
//     StandardPolicy, an expired session, a deleted node): the code
//     between Lock and Unlock runs on regardless. Use it only where that
//     is acceptable, or guard writes with a fencing token from a [Hold].
//   - Unlock cannot say which Lock it ends, since a sync.Locker has no
//     owner. It releases a hold that has already ended (lost) if there is
//     one, else the oldest hold taken: so a late Unlock from a goroutine
//     whose hold was lost, while another goroutine has been granted the
//     lock since, never ends that live hold. The price is on the other
//     side: if that goroutine's own Unlock comes first, it releases the
//     lost hold, and its live one stands until the late Unlock comes.
//     Unlock of a lost hold reports nothing (the loss is logged at Warn,
//     as every loss is).
//     Unlock with no hold taken panics, as sync.Mutex's does.
//
// The Locker is safe for concurrent use. Over the read side of a
// [ReadWriteLock] several Locks may hold at once; each Unlock releases
// one of them, by the same rule.
func NewSyncLocker(l Locker) sync.Locker {
	return &syncLocker{l: l}
}

// syncLocker is the sync.Locker that NewSyncLocker returns.
type syncLocker struct {
	l Locker // written once

	mu    sync.Mutex        // protects holds
	holds []context.Context // the holds Lock took and Unlock has not released
}

// Lock acquires l, waiting out connection losses; see NewSyncLocker.
func (s *syncLocker) Lock() {
	if s.l == nil {
		panic(fmt.Sprintf("zklock: sync locker lock: nil Locker: %v", ErrInvalidArgument))
	}
	wait := 50 * time.Millisecond
	for {
		hctx, err := s.l.Acquire(context.Background())
		if err == nil {
			s.mu.Lock()
			s.holds = append(s.holds, hctx)
			s.mu.Unlock()
			return
		}
		if !retryable(err) || errors.Is(err, ErrClosed) {
			panic(fmt.Sprintf("zklock: sync locker lock: %v", err))
		}
		time.Sleep(wait) // a connection loss the engine did not ride out: try again
		wait = min(2*wait, time.Second)
	}
}

// Unlock releases a hold that Lock took: an ended one first, else the
// oldest; see NewSyncLocker.
func (s *syncLocker) Unlock() {
	s.mu.Lock()
	if len(s.holds) == 0 {
		s.mu.Unlock()
		panic("zklock: sync locker: unlock of unlocked lock")
	}
	i := slices.IndexFunc(s.holds, func(hctx context.Context) bool { return hctx.Err() != nil })
	i = max(i, 0) // none ended: the oldest
	hctx := s.holds[i]
	s.holds = slices.Delete(s.holds, i, i+1)
	s.mu.Unlock()
	_ = s.l.Release(hctx) // a loss was logged when it happened
}
