package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// A late Release of a SemaphoreMutex hold that was lost must not end the
// hold that the same SemaphoreMutex acquired since.
func TestIntegration_SemaphoreMutexLateRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	m, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/late")
	require.NoError(t, err)
	leases := e.root + "/late/leases"

	h1, err := m.Acquire(bg)
	require.NoError(t, err)
	first := e.children(leases)
	require.Len(t, first, 1)
	require.NoError(t, e.admin.Delete(leases+"/"+first[0], -1))
	waitDone(t, h1, 10*time.Second)
	require.ErrorIs(t, context.Cause(h1), zklock.ErrLockLost)

	h2, err := m.Acquire(bg)
	require.NoError(t, err)
	second := e.children(leases)
	require.Len(t, second, 1)

	err = m.Release(h1)
	assert.True(t, errors.Is(err, zklock.ErrLockLost) || errors.Is(err, zklock.ErrNotHeld),
		"late Release of the lost hold: want ErrLockLost or ErrNotHeld, got %v", err)
	assert.NoError(t, h2.Err(), "the new hold must survive the late Release of the old one (cause %v)", context.Cause(h2))
	ok, _, err := e.admin.Exists(leases + "/" + second[0])
	require.NoError(t, err)
	assert.True(t, ok, "the new hold's lease node must still exist")

	other, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/late")
	require.NoError(t, err)
	oh, err := other.TryAcquire(bg)
	assert.ErrorIs(t, err, zklock.ErrLocked, "another client must find the lock taken")
	if err == nil {
		assert.NoError(t, other.Release(oh))
	}

	assert.NoError(t, m.Release(h2), "Release of the live hold")
}

func TestIntegration_SemaphoreMutex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/sm")
	require.NoError(t, err)
	other, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/sm")
	require.NoError(t, err)
	var _ zklock.Locker = m
	bg := context.Background()

	h, err := m.Acquire(bg)
	require.NoError(t, err)
	assert.True(t, m.IsAcquiredInThisProcess())
	_, err = m.Acquire(h)
	require.ErrorIs(t, err, zklock.ErrNotReentrant)
	_, err = m.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "another context is another participant")
	_, err = other.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	assert.ElementsMatch(t, []string{"leases", "locks"}, e.children(e.root+"/sm"), "Curator's semaphore layout")

	got := make(chan acquired, 1)
	go func() {
		c, err := other.Acquire(bg)
		got <- acquired{c, err, time.Now()}
	}()
	require.NoError(t, m.Release(bg), "any context may release")
	assert.ErrorIs(t, context.Cause(h), zklock.ErrReleased)
	require.ErrorIs(t, m.Release(bg), zklock.ErrNotHeld)
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, other.Release(a.ctx))
}

// SemaphoreMutex.Lock returns a Hold; a context that holds the lock
// through one SemaphoreMutex is refused by another of the same Client and
// path with ErrNotReentrant at once, instead of waiting for itself.
func TestIntegration_SemaphoreMutexHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m1, err := zklock.NewSemaphoreMutex(c, e.root+"/sm")
	require.NoError(t, err)
	m2, err := zklock.NewSemaphoreMutex(c, e.root+"/sm")
	require.NoError(t, err)
	hd, err := m1.Lock(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(hd.Context(), 5*time.Second)
	defer cancel()
	_, err = m2.Lock(ctx)
	require.ErrorIs(t, err, zklock.ErrNotReentrant)
	require.NoError(t, ctx.Err(), "refused at once")
	_, err = m2.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	tok, err := hd.Token()
	require.NoError(t, err)
	require.NotZero(t, tok)
	require.NoError(t, hd.Release())
	require.ErrorIs(t, hd.Release(), zklock.ErrNotHeld)
}
