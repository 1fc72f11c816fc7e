package zklock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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

// A MultiLock never waits for a hold it took itself. A Mutex inside a
// nested MultiLock, on the path and Client of an outer member, re-enters;
// the read side of a ReadWriteLock after the write side of another
// ReadWriteLock of the same path and Client is a downgrade; the write
// side after the read side is refused at once. (Each used to wait until
// its deadline.)
func TestIntegration_MultiLockNeverWaitsOnItself(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	quick := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 5*time.Second)
	}

	t.Run("nested", func(t *testing.T) {
		ml := zklock.NewMultiLock(e.mutex(c, "/n"), zklock.NewMultiLock(e.mutex(c, "/n")))
		ctx, cancel := quick()
		defer cancel()
		hd, err := ml.Lock(ctx)
		require.NoError(t, err)
		assert.Len(t, e.children(e.root+"/n"), 1)
		require.NoError(t, hd.Release())
		assert.Empty(t, e.children(e.root+"/n"))
	})
	t.Run("write-then-read", func(t *testing.T) {
		rw1, err := zklock.NewReadWriteLock(c, e.root+"/rw")
		require.NoError(t, err)
		rw2, err := zklock.NewReadWriteLock(c, e.root+"/rw")
		require.NoError(t, err)
		ctx, cancel := quick()
		defer cancel()
		hd, err := zklock.NewMultiLock(rw1.WriteLock(), rw2.ReadLock()).Lock(ctx)
		require.NoError(t, err, "a downgrade, not a wait")
		other, err := zklock.NewReadWriteLock(e.client(), e.root+"/rw")
		require.NoError(t, err)
		_, err = other.WriteLock().TryAcquire(context.Background())
		require.ErrorIs(t, err, zklock.ErrLocked, "the downgraded hold still excludes writers")
		require.NoError(t, hd.Release())
		assert.Empty(t, e.children(e.root+"/rw"))
	})
	t.Run("read-then-write", func(t *testing.T) {
		rw1, err := zklock.NewReadWriteLock(c, e.root+"/rw2")
		require.NoError(t, err)
		rw2, err := zklock.NewReadWriteLock(c, e.root+"/rw2")
		require.NoError(t, err)
		ctx, cancel := quick()
		defer cancel()
		_, err = zklock.NewMultiLock(rw1.ReadLock(), rw2.WriteLock()).Lock(ctx)
		require.ErrorIs(t, err, zklock.ErrLockUpgrade)
		require.NoError(t, ctx.Err(), "refused at once, not at the deadline")
		assert.Empty(t, e.children(e.root+"/rw2"))
	})
}

// A MultiLock's Hold guards a transaction with every member's node.
func TestIntegration_MultiLockHoldGuardsEveryMember(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	e.create(e.root + "/data")
	ma, mb := e.mutex(c, "/ga"), e.mutex(c, "/gb")
	hd, err := zklock.NewMultiLock(ma, mb).Lock(context.Background())
	require.NoError(t, err)
	_, err = hd.Token()
	require.ErrorIs(t, err, zklock.ErrInvalidArgument, "one token per member, not one")
	_, err = hd.Multi(context.Background(), &zk.SetDataRequest{Path: e.root + "/data", Data: []byte("1"), Version: -1})
	require.NoError(t, err)

	require.NoError(t, e.admin.Delete(mb.LockPath(hd.Context()), -1))
	_, err = hd.Multi(context.Background(), &zk.SetDataRequest{Path: e.root + "/data", Data: []byte("2"), Version: -1})
	require.ErrorIs(t, err, zklock.ErrLockLost)
	data, _, err := e.admin.Get(e.root + "/data")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data), "the guarded write did not commit")
	require.ErrorIs(t, hd.Release(), zklock.ErrLockLost)
}
