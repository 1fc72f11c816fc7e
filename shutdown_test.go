package zklock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// Shutdown refuses new acquires at once, ends the waiting ones without a
// node, and waits for the holds that stand, whose contexts stay live,
// until their owners release them; then the Client is closed.
func TestIntegration_ShutdownWaitsForRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	other := e.client()
	busy, err := e.mutex(other, "/busy").Lock(context.Background())
	require.NoError(t, err)
	waiting := e.mutex(c, "/busy")
	w := acquireAsync(context.Background(), waiting)
	waitParticipants(t, waiting, 2)
	held, err := e.mutex(c, "/held").Lock(context.Background())
	require.NoError(t, err)

	var returned atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- c.Shutdown(context.Background())
		returned.Store(true)
	}()
	a := await(t, w, 10*time.Second)
	require.ErrorIs(t, a.err, zklock.ErrClosed, "a waiter ends")
	waitParticipants(t, waiting, 1) // its node is gone: only other's holder stands
	_, err = e.mutex(c, "/new").Lock(context.Background())
	require.ErrorIs(t, err, zklock.ErrClosed, "a new acquire fails at once")

	assert.NoError(t, held.Err(), "a hold that stands is left to its owner")
	assert.False(t, returned.Load(), "Shutdown waits for it")
	_, err = held.Token()
	require.NoError(t, err, "and it still works")
	require.NoError(t, held.Release())
	require.NoError(t, await(t, done, 10*time.Second))
	assert.Equal(t, zklock.StateClosed, c.State())
	require.NoError(t, busy.Release())
}

// A hold that outlives Shutdown's context is cut short: lost, its node
// gone, and Shutdown's error says so, naming the lock.
func TestIntegration_ShutdownCutsShort(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	stuck, err := e.mutex(c, "/stuck").Lock(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = c.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "1 hold(s) cut short, of "+e.root+"/stuck")
	require.ErrorIs(t, stuck.Err(), zklock.ErrLockLost)
	require.ErrorIs(t, stuck.Err(), zklock.ErrClosed)
	m := e.mutex(e.client(), "/stuck")
	waitParticipants(t, m, 0)
	assert.NoError(t, c.Shutdown(context.Background()), "a second Shutdown has nothing to wait for")
}

// Shutdown with no hold closes at once; bad input is refused.
func TestShutdownInput(t *testing.T) {
	t.Parallel()
	var zero zklock.Client
	assert.NoError(t, zero.Shutdown(context.Background()))
	var nilClient *zklock.Client
	assert.NoError(t, nilClient.Shutdown(context.Background()))
}

func TestIntegration_ShutdownNilContext(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	//lint:ignore SA1012 on purpose
	require.ErrorIs(t, c.Shutdown(nil), zklock.ErrInvalidArgument) //nolint:staticcheck
	require.NoError(t, c.Shutdown(context.Background()))
}

// Shutdown ends the waits of a Semaphore, an Election and a Selector's Run
// with ErrClosed, and they leave no node (the env's clean-up checks).
func TestIntegration_ShutdownEndsOtherRecipesWaits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	other := e.client()
	bg := context.Background()

	sem, err := zklock.NewSemaphore(other, e.root+"/sem", 1)
	require.NoError(t, err)
	lease, err := sem.Acquire(bg)
	require.NoError(t, err)
	el, err := zklock.NewElection(other, e.root+"/el", "other")
	require.NoError(t, err)
	leader, err := el.Campaign(bg)
	require.NoError(t, err)
	sel, err := zklock.NewSelector(other, e.root+"/sel", "other")
	require.NoError(t, err)
	term, err := e.mutex(other, "/sel").Lock(bg) // the Selector's lock, held
	require.NoError(t, err)
	_ = sel

	errs := make(chan error, 3)
	mySem, err := zklock.NewSemaphore(c, e.root+"/sem", 1)
	require.NoError(t, err)
	go func() { _, err := mySem.Acquire(bg); errs <- err }()
	myEl, err := zklock.NewElection(c, e.root+"/el", "me")
	require.NoError(t, err)
	go func() { _, err := myEl.Campaign(bg); errs <- err }()
	mySel, err := zklock.NewSelector(c, e.root+"/sel", "me")
	require.NoError(t, err)
	go func() {
		errs <- mySel.Run(bg, func(context.Context) error { return nil })
	}()
	require.Eventually(t, func() bool {
		p1, _ := sem.Participants(bg)
		p2, _ := el.Participants(bg)
		p3, _ := sel.Participants(bg)
		return len(p1) == 2 && len(p2) == 2 && len(p3) == 2
	}, 10*time.Second, 5*time.Millisecond)

	require.NoError(t, c.Shutdown(bg))
	for range 3 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, zklock.ErrClosed)
		case <-time.After(10 * time.Second):
			t.Fatal("a wait did not end")
		}
	}
	require.NoError(t, lease.Release())
	require.NoError(t, leader.Release())
	require.NoError(t, term.Release())
}
