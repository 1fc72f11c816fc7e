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
