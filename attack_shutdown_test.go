package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

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
