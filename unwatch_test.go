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

// A wait that gives up leaves no watch on the server (on zklock's own
// session): the watches on the node it waited for and on the one before
// it are removed, though neither node changed. The removals are queued
// before Acquire returns its error: a request sent after them (here an
// exists) is answered after them, and the server's own account of the
// session's watches (wchc) then lists none.
func TestIntegration_AbandonedWaitLeavesNoWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	_, finish := twoInLine(t, e, "/m")
	defer finish()

	c := e.client()
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	_, err := e.mutex(c, "/m").Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Zero(t, watchesLeft(t, e, c), "watches the gone wait left")
}

// A watch two waits of one Client share stays while one of them waits:
// the readers waiting for a writer both watch its node; the one that
// gives up leaves the watch to the other, which the writer's release
// grants. And a hold of that Client still learns of its loss after a
// wait for its node gave up.
func TestIntegration_AbandonedWaitLeavesSharedWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	rw, err := zklock.NewReadWriteLock(e.client(), e.root+"/rw")
	require.NoError(t, err)
	writer, err := rw.WriteLock().Lock(bg)
	require.NoError(t, err)

	c := e.client()
	readers, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	reader := readers.ReadLock()
	staying := acquireAsync(bg, reader)
	waitChildren(t, e, e.root+"/rw", 2)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	_, err = readers.ReadLock().Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, writer.Release())
	r := await(t, staying, 10*time.Second)
	require.NoError(t, r.err)
	defer reader.Release(r.ctx)

	h, err := e.mutex(c, "/held").Lock(bg)
	require.NoError(t, err)
	ctx, cancel = context.WithTimeout(bg, 300*time.Millisecond)
	_, err = e.mutex(c, "/held").Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, e.admin.Delete(h.Path(), -1))
	waitDone(t, h.Context(), 10*time.Second)
	require.ErrorIs(t, context.Cause(h.Context()), zklock.ErrLockLost)
}

// An Observe that ends leaves no watch behind (on zklock's own session),
// however long the leader stays: none on the server, and none that the
// session keeps for a next connection. The leader's node is made by hand
// (as a Curator LeaderLatch names it), so that no other session watches
// the election's children (see HasChildWatch).
func TestIntegration_ObserveEndedLeavesNoWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	e.create(e.root + "/elect")
	node, err := e.admin.Create(e.root+"/elect/_c_5f8a1c2e-0b7d-4e7a-9c1b-2d3e4f5a6b7c-latch-", []byte("leader"),
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.admin.Delete(node, -1)) }()

	c := e.client()
	watcher, err := zklock.NewElection(c, e.root+"/elect", "watcher")
	require.NoError(t, err)
	for range 3 {
		ctx, cancel := context.WithCancel(bg)
		obs := watcher.Observe(ctx)
		l := await(t, obs, 10*time.Second)
		require.NoError(t, l.Err)
		require.Equal(t, "leader", l.ID)
		cancel()
		for range obs { // closed once the observer is done
		}
	}
	watched, err := zklock.HasChildWatch(bg, c, e.root+"/elect") // sent after the removals
	require.NoError(t, err)
	assert.False(t, watched, "the ended Observes left their watch")
}

// A kazoo-layout Semaphore's acquirer waits at the head of the queue with
// a watch on the pool's children, before it has a lease there whose
// deletion would fire it: giving up removes that watch. The lease that
// fills the pool is made by hand, so that no other session watches the
// pool (see HasChildWatch).
func TestIntegration_KazooSemaphoreAbandonedWaitLeavesNoWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	p := e.root + "/sem"
	full := kazooLease(t, e, pool(t, e, p, "1"), "py")
	defer func() { require.NoError(t, e.admin.Delete(full, -1)) }()

	c := e.client()
	s := e.kazooSemaphore(c, "/sem", 1)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	_, err := s.Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	watched, err := zklock.HasChildWatch(bg, c, p) // sent after the removal
	require.NoError(t, err)
	assert.False(t, watched, "the gone acquire left its watch on the pool")
}

// A kazoo-layout acquire whose leases cannot be made after the pool had
// room gives its watch on the pool back: no lease of its own changes the
// pool, so nothing else would fire it.
func TestIntegration_KazooSemaphoreFailedLeaseLeavesNoWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	c, f := e.faultClient()
	s := e.kazooSemaphore(c, "/sem", 2)
	refused := errors.New("lease refused")
	f.mu.Lock()
	f.multi = func(ctx context.Context, real zklock.ZKConn, ops ...any) ([]zk.MultiResponse, error) {
		return nil, refused // the guarded create of a lease
	}
	f.mu.Unlock()
	_, err := s.Acquire(bg)
	require.ErrorIs(t, err, refused)
	watched, err := zklock.HasChildWatch(bg, c, e.root+"/sem") // sent after the removal
	require.NoError(t, err)
	assert.False(t, watched, "the failed acquire left its watch on the pool")
	f.mu.Lock()
	f.multi = nil
	f.mu.Unlock()
	l, err := s.Acquire(bg)
	require.NoError(t, err, "an acquire after the failed one")
	require.NoError(t, l.Release())
}

// Many waits of one Client that set their shared watch on one node at
// once, then all give up, leave no watch: a watch set by a wait that
// raced another's is not left out of the count.
func TestIntegration_AbandonedWaitsAtOnceLeaveNoWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	rw, err := zklock.NewReadWriteLock(e.client(), e.root+"/rw")
	require.NoError(t, err)
	writer, err := rw.WriteLock().Lock(bg)
	require.NoError(t, err)
	defer writer.Release()

	c := e.client()
	readers, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	for round := range 3 {
		ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := readers.ReadLock().Acquire(ctx)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}()
		}
		wg.Wait()
		cancel()
		require.Zero(t, watchesLeft(t, e, c), "round %d: watches the gone waits left", round)
	}
}

// A wait whose next decision fails gives up the watches of the decision
// before: here the node before the one it waits for goes, so it decides
// again, and that listing fails (a permission taken away, say).
func TestIntegration_WaitFailingOnItsNextDecisionLeavesNoWatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	holder, finish := twoInLine(t, e, "/m")
	defer finish()

	c, f := e.faultClient()
	got := acquireAsync(bg, e.mutex(c, "/m"))
	waitChildren(t, e, e.root+"/m", 3)
	f.mu.Lock()
	f.listFails, f.listFailErr = 1, zk.ErrNoAuth
	f.mu.Unlock()
	require.NoError(t, holder.Release()) // the node ahead goes: the third decides again
	a := await(t, got, 10*time.Second)
	require.ErrorIs(t, a.err, zk.ErrNoAuth)
	assert.Zero(t, watchesLeft(t, e, c), "watches the failed wait left")
}

// twoInLine has two other Clients line up on the Mutex at name: one
// holds it (returned), the other waits. finish releases the holder (if it
// still holds) and has the waiter take the lock and release it.
func twoInLine(t *testing.T, e *env, name string) (*zklock.Hold, func()) {
	t.Helper()
	bg := context.Background()
	holder, err := e.mutex(e.client(), name).Lock(bg)
	require.NoError(t, err)
	m := e.mutex(e.client(), name)
	second := acquireAsync(bg, m)
	waitChildren(t, e, e.root+name, 2)
	return holder, func() {
		_ = holder.Release() // released already, it says so
		a := await(t, second, 10*time.Second)
		require.NoError(t, a.err)
		require.NoError(t, m.Release(a.ctx))
	}
}

// watchesLeft returns how many data watches the server holds for c's
// session (wchc), once a request sent after anything c queued before
// (an exists) is answered.
func watchesLeft(t *testing.T, e *env, c *zklock.Client) int {
	t.Helper()
	_, _, err := zklock.ConnOf(c).Exists(context.Background(), e.root)
	require.NoError(t, err)
	return sessionWatches(t, e, zklock.ConnOf(c).SessionID())
}
