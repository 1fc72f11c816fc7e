package zklock_test

import (
	"context"
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
