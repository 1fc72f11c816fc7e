package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// nextEvent returns the next event of kind, skipping others, failing the
// test after d.
func nextEvent(t *testing.T, events <-chan zklock.Event, kind zklock.EventKind, d time.Duration) zklock.Event {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", kind, d)
			return zklock.Event{}
		}
	}
}

func TestIntegration_ObserverSeesTheLifeOfAHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	events := make(chan zklock.Event, 100)
	c, f := e.faultClient(zklock.WithObserver(func(ev zklock.Event) { events <- ev }))
	m := e.mutex(c, "/obs")
	bg := context.Background()

	h, err := m.Acquire(bg)
	require.NoError(t, err)
	started := nextEvent(t, events, zklock.EventAcquireStarted, 5*time.Second)
	assert.Equal(t, e.root+"/obs", started.Path)
	got := nextEvent(t, events, zklock.EventAcquired, 5*time.Second)
	assert.Equal(t, m.LockPath(h), got.Node)
	assert.Zero(t, got.Position, "first in the queue")
	assert.Positive(t, got.Wait)

	w := acquireAsync(bg, m)
	waitParticipants(t, m, 2)
	require.NoError(t, m.Release(h))
	rel := nextEvent(t, events, zklock.EventReleased, 5*time.Second)
	assert.Positive(t, rel.Held)
	a := await(t, w, 10*time.Second)
	require.NoError(t, a.err)
	assert.Equal(t, 1, nextEvent(t, events, zklock.EventAcquired, 5*time.Second).Position, "one node ahead when it queued")

	m.MakeRevocable(func(*zklock.Mutex) {})
	require.NoError(t, m.Release(a.ctx))
	h, err = m.Acquire(bg)
	require.NoError(t, err)
	require.NoError(t, zklock.Revoke(bg, c, m.LockPath(h)))
	assert.Equal(t, m.LockPath(h), nextEvent(t, events, zklock.EventRevocationRequested, 5*time.Second).Node)

	require.NoError(t, e.admin.Delete(m.LockPath(h), -1))
	lost := nextEvent(t, events, zklock.EventLost, 5*time.Second)
	require.ErrorIs(t, lost.Err, zklock.ErrLockLost)
	require.ErrorIs(t, m.Release(h), zklock.ErrLockLost)

	h, err = m.Acquire(bg)
	require.NoError(t, err)
	f.mu.Lock()
	f.deleteFails = 1
	f.mu.Unlock()
	node := m.LockPath(h)
	require.NoError(t, m.Release(h), "the delete goes on in the background")
	retried := nextEvent(t, events, zklock.EventDeleteRetried, 5*time.Second)
	assert.Equal(t, node, retried.Node)
	assert.Error(t, retried.Err)
	waitParticipants(t, m, 0)
}

// An Observer that does not return stalls nothing: events beyond the
// queue are dropped and counted.
func TestIntegration_ObserverCannotStallLocks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	unblock := make(chan struct{})
	dropped := make(chan int, 1)
	first := true
	c := e.client(zklock.WithObserver(func(ev zklock.Event) {
		if first {
			first = false
			<-unblock
			return
		}
		if ev.Dropped > 0 {
			select {
			case dropped <- ev.Dropped:
			default:
			}
		}
	}))
	m := e.mutex(c, "/stall")
	bg := context.Background()
	for range 400 { // 1,200 events, beyond the queue of 1,024
		h, err := m.Acquire(bg)
		require.NoError(t, err)
		require.NoError(t, m.Release(h))
	}
	close(unblock)
	h, err := m.Acquire(bg)
	require.NoError(t, err)
	require.NoError(t, m.Release(h))
	select {
	case n := <-dropped:
		assert.Positive(t, n)
	case <-time.After(10 * time.Second):
		t.Fatal("no event reported the dropped ones")
	}
}

func TestObserverOptionAndKinds(t *testing.T) {
	t.Parallel()
	_, err := zklock.Connect([]string{"127.0.0.1:1"}, zklock.WithObserver(nil))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Equal(t, "Acquired", zklock.EventAcquired.String())
	assert.Equal(t, "DeleteRetried", zklock.EventDeleteRetried.String())
	assert.Equal(t, "EventKind(99)", zklock.EventKind(99).String())
}
