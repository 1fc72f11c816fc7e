package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// A waiter's node deleted by someone else: the waiter queues again with a
// new node and still gets the lock.
func TestIntegration_WaiterNodeDeletedRequeues(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/requeue")
	waiter := e.mutex(e.client(), "/requeue")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter)
	first := waitParticipants(t, holder, 2)[1]
	require.NoError(t, e.admin.Delete(first, -1))
	require.Eventually(t, func() bool {
		p, err := holder.Participants(context.Background())
		return err == nil && len(p) == 2 && p[1] != first
	}, 10*time.Second, 5*time.Millisecond, "the waiter queued a new node")
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.NotEqual(t, first, waiter.LockPath(a.ctx))
	require.NoError(t, waiter.Release(a.ctx))
}

// The waiter's session expires while it waits: its node goes with the
// session, and it queues again in the new session.
func TestIntegration_WaiterSessionExpiresRequeues(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := zktest.NewFaultsT(t, e.servers)
	wc := e.client(
		zklock.WithSessionTimeout(1500*time.Millisecond),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: time.Minute, Sleep: 50 * time.Millisecond}),
		zklock.WithZKOptions(zk.WithDialer(faults.Dial)),
	)
	holder := e.mutex(e.client(), "/waiter-expires")
	waiter := e.mutex(wc, "/waiter-expires")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter)
	first := waitParticipants(t, holder, 2)[1]
	oldSession := wc.Conn().SessionID()

	faults.Pause()
	require.Eventually(t, func() bool { return len(e.children(e.root+"/waiter-expires")) == 1 },
		20*time.Second, 20*time.Millisecond, "the server expires the waiter's session")
	faults.Resume()
	require.Eventually(t, func() bool {
		p, err := holder.Participants(context.Background())
		return err == nil && len(p) == 2 && p[1] != first
	}, 20*time.Second, 10*time.Millisecond, "the waiter queued again")
	assert.NotEqual(t, oldSession, wc.Conn().SessionID())
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}

// Waiters that give up leave their watches behind (go-zookeeper cannot
// remove one), but waiters share one watch per node and fired watches are
// swept, so the number tracked stays bounded by the live nodes watched.
func TestIntegration_AbandonedWatchesStayBounded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	hc := e.client()
	c := e.client()
	bg := context.Background()
	type held struct {
		m *zklock.Mutex
		h context.Context
	}
	var holds []held
	for i := range 40 {
		name := fmt.Sprintf("/bounded-%d", i)
		hm := e.mutex(hc, name)
		h, err := hm.Acquire(bg)
		require.NoError(t, err)
		holds = append(holds, held{hm, h})
		wm := e.mutex(c, name)
		for range 3 { // three give-ups on the same holder share one watch
			ctx, cancel := context.WithTimeout(bg, 2*time.Millisecond)
			_, err := wm.Acquire(ctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	}
	assert.LessOrEqual(t, zklock.WatchedNodes(c), 40, "one watch per watched node")
	for _, h := range holds {
		require.NoError(t, h.m.Release(h.h)) // fires every watch, with nobody waiting
	}
	// Later waits on new nodes sweep the fired entries away.
	for round := range 1 {
		var more []held
		for i := range 40 {
			name := fmt.Sprintf("/bounded-next-%d-%d", round, i)
			hm := e.mutex(hc, name)
			h, err := hm.Acquire(bg)
			require.NoError(t, err)
			more = append(more, held{hm, h})
			ctx, cancel := context.WithTimeout(bg, 2*time.Millisecond)
			_, err = e.mutex(c, name).Acquire(ctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
		for _, h := range more {
			require.NoError(t, h.m.Release(h.h))
		}
	}
	assert.LessOrEqual(t, zklock.WatchedNodes(c), 2*40+64, "fired watches are swept")
}

// The server stops while a goroutine waits and starts again: the waiter
// rides out the outage and eventually acquires.
func TestIntegration_MutexServerRestartWhileWaiting(t *testing.T) {
	t.Parallel()
	cluster := zktest.StartT(t, zktest.Config{})
	e := setupOn(t, cluster)
	hc := e.client(zklock.WithErrorPolicy(zklock.SessionPolicy))
	wc := e.client()
	holder := e.mutex(hc, "/restart")
	waiter := e.mutex(wc, "/restart")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)
	got := acquireAsync(bg, waiter)
	waitParticipants(t, holder, 2)

	require.NoError(t, cluster.Stop(0))
	waitState(t, wc, 10*time.Second, zklock.StateSuspended)
	require.NoError(t, cluster.Start(0))
	waitState(t, hc, 20*time.Second, zklock.StateReconnected)
	require.NoError(t, h.Err(), "SessionPolicy: the session survived the restart")
	require.NoError(t, holder.Release(h))

	a := await(t, got, 30*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}

func TestIntegration_MutexCancelledAcquireLeavesNoNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/cancel")
	waiter := e.mutex(e.client(), "/cancel")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)

	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		_, err := waiter.Acquire(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Len(t, e.children(e.root+"/cancel"), 1)
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(bg)
		got := acquireAsync(ctx, waiter)
		waitParticipants(t, holder, 2)
		cancel(errors.New("caller gave up"))
		a := await(t, got, 10*time.Second)
		require.ErrorIs(t, a.err, context.Canceled)
		assert.ErrorContains(t, a.err, "caller gave up")
		assert.Len(t, e.children(e.root+"/cancel"), 1)
	})
	t.Run("try", func(t *testing.T) {
		_, err := waiter.TryAcquire(bg)
		require.ErrorIs(t, err, zklock.ErrLocked)
		assert.Len(t, e.children(e.root+"/cancel"), 1)
	})
	t.Run("done before start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(bg)
		cancel()
		_, err := waiter.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled)
	})
	require.NoError(t, holder.Release(h))
	// The queue is not blocked by anything the waiters left.
	h2, err := waiter.TryAcquire(bg)
	require.NoError(t, err)
	require.NoError(t, waiter.Release(h2))
}

// Many waiters give up on one long-held lock; the one ZooKeeper watch
// they share is enough, and the lock is still handed over in order.
func TestIntegration_MutexManyAbandonedWaits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/abandon")
	c := e.client()
	waiter := e.mutex(c, "/abandon")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)
	for range 50 {
		ctx, cancel := context.WithTimeout(bg, 5*time.Millisecond)
		_, err := waiter.Acquire(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	assert.Len(t, e.children(e.root+"/abandon"), 1, "no node left by the abandoned waits")
	got := acquireAsync(bg, waiter)
	waitParticipants(t, holder, 2)
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}
