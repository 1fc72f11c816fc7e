package zklock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// A revocation request reaches the holder, and the hold stands until the
// holder releases.
func TestIntegration_RevokeHolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/revoke")
	revoked := make(chan *zklock.Mutex, 1)
	m.MakeRevocable(func(m *zklock.Mutex) { revoked <- m })
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, zklock.Revoke(context.Background(), e.client(), m.LockPath(h)))
	select {
	case got := <-revoked:
		assert.Same(t, m, got)
	case <-time.After(10 * time.Second):
		t.Fatal("revocation not delivered")
	}
	assert.NoError(t, h.Err(), "revocation is cooperative: the hold stands")
	assert.True(t, m.IsOwnedBy(h))
	require.NoError(t, m.Release(h))
}

// One revocation request runs a waiter's callback once, though the waiter
// is granted after it: Curator's callback runs once per request. Many
// waiters of one Client are asked at once, so that the Client's event
// loop lags behind their own watches.
func TestIntegration_RevokeWaiterCallbackOncePerRequest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	holder := e.mutex(c, "/revoke-once")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	const waiters = 24
	var mu sync.Mutex
	calls := make(map[*zklock.Mutex]int)
	asked := make(chan struct{}, 10*waiters)
	var wg sync.WaitGroup
	for range waiters {
		m := e.mutex(c, "/revoke-once")
		m.MakeRevocable(func(m *zklock.Mutex) {
			mu.Lock()
			calls[m]++
			mu.Unlock()
			asked <- struct{}{}
		})
		wg.Add(1)
		go func() { // granted in turn, it releases at once
			defer wg.Done()
			ctx, err := m.Acquire(context.Background())
			if assert.NoError(t, err) {
				assert.NoError(t, m.Release(ctx))
			}
		}()
	}
	parts := waitParticipants(t, holder, waiters+1)
	var asks sync.WaitGroup
	for _, p := range parts[1:] {
		asks.Add(1)
		go func() {
			defer asks.Done()
			assert.NoError(t, zklock.Revoke(context.Background(), c, p))
		}()
	}
	asks.Wait()
	for range waiters {
		await(t, asked, 10*time.Second)
	}
	require.NoError(t, holder.Release(h))
	wg.Wait()
	require.NoError(t, c.Close()) // its callbacks have all run
	mu.Lock()
	defer mu.Unlock()
	for m, n := range calls {
		assert.Equal(t, 1, n, "callbacks of %p for one request", m)
	}
	assert.Len(t, calls, waiters)
}
