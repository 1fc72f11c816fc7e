package zklock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

func TestIntegration_MultiLockAllOrNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	ml, err := zklock.NewMultiLockPaths(c, e.root+"/b", e.root+"/a", e.root+"/a")
	require.NoError(t, err)
	blocker := e.mutex(e.client(), "/b")
	bg := context.Background()
	bh, err := blocker.Acquire(bg)
	require.NoError(t, err)

	_, err = ml.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	assert.Empty(t, e.children(e.root+"/a"), "the lock already taken was given back")
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	_, err = ml.Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "one deadline for the whole acquire")
	assert.Empty(t, e.children(e.root+"/a"))
	assert.Len(t, e.children(e.root+"/b"), 1)
	assert.False(t, ml.IsAcquiredInThisProcess())

	require.NoError(t, blocker.Release(bh))
	h, err := ml.Acquire(bg)
	require.NoError(t, err)
	assert.True(t, ml.IsAcquiredInThisProcess())
	for _, p := range []string{"/a", "/b"} {
		_, err := e.mutex(e.client(), p).TryAcquire(bg)
		require.ErrorIs(t, err, zklock.ErrLocked, p)
	}
	h2, err := ml.Acquire(h)
	require.NoError(t, err, "re-entry")
	require.NoError(t, ml.Release(h2))
	require.NoError(t, h.Err())
	require.NoError(t, ml.Release(h))
	assert.ErrorIs(t, context.Cause(h), zklock.ErrReleased)
	require.ErrorIs(t, ml.Release(h), zklock.ErrNotHeld)
	assert.Empty(t, e.children(e.root+"/a"))
	assert.Empty(t, e.children(e.root+"/b"))
}

// Two sessions take the same paths, listed in opposite orders, in a loop:
// sorted acquisition order means no deadlock.
func TestIntegration_MultiLockNoDeadlock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	paths := [][]string{{e.root + "/x", e.root + "/y"}, {e.root + "/y", e.root + "/x"}}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, ps := range paths {
		ml, err := zklock.NewMultiLockPaths(e.client(), ps...)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				h, err := ml.Acquire(ctx)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				if err := ml.Release(h); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A member's hold is lost: the MultiLock's context is cancelled with
// ErrLockLost, and Release reports it after releasing the rest.
func TestIntegration_MultiLockMemberLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	ma, mb := e.mutex(c, "/ma"), e.mutex(c, "/mb")
	ml := zklock.NewMultiLock(ma, mb)
	h, err := ml.Acquire(context.Background())
	require.NoError(t, err)
	require.True(t, mb.IsOwnedBy(h), "the MultiLock's context carries the member holds")
	require.NoError(t, e.admin.Delete(mb.LockPath(h), -1))
	waitDone(t, h, 10*time.Second)
	require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
	require.ErrorIs(t, ml.Release(h), zklock.ErrLockLost)
	assert.False(t, ma.IsAcquiredInThisProcess(), "the other member was released")
	assert.Empty(t, e.children(e.root+"/ma"))

	_, err = zklock.NewMultiLockPaths(c)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	_, err = zklock.NewMultiLockPaths(c, "bad")
	require.ErrorIs(t, err, zklock.ErrInvalidPath)
}

// A cancel with a cause while the MultiLock waits for its second member:
// the error wraps both ctx.Err() and the cause.
func TestIntegration_MultiLockCauseOfLaterMembers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bg := context.Background()
	other := e.mutex(e.client(), "/b")
	oh, err := other.Acquire(bg)
	require.NoError(t, err)
	ml, err := zklock.NewMultiLockPaths(c, e.root+"/a", e.root+"/b")
	require.NoError(t, err)
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(bg)
	errs := make(chan error, 1)
	go func() {
		_, err := ml.Acquire(ctx)
		errs <- err
	}()
	waitParticipants(t, other, 2) // the MultiLock holds /a and waits for /b
	cancel(cause)
	select {
	case err = <-errs:
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return after its context was cancelled")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, cause, "context.Cause stays reachable")
	assert.False(t, ml.IsAcquiredInThisProcess())
	require.NoError(t, other.Release(oh))
}
