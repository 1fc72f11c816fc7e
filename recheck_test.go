package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// ZooKeeper acknowledges a delete that a change of leader then undoes (the
// chaos suite saw it when a leader was cut off just as it answered; here
// the fault seam reports the delete done without sending it). After the
// reconnect that follows, the Client finds the node again and deletes it,
// so it does not block the queue.
func TestIntegration_UndoneDeleteIsRedone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	hc, f := e.faultClient(zklock.WithSessionTimeout(8*time.Second), zklock.WithDialer(faults.Dial))
	holder := e.mutex(hc, "/undone")
	waiter := e.mutex(e.client(), "/undone")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	node := holder.LockPath(h)

	f.mu.Lock()
	f.deleteLies = 1
	f.mu.Unlock()
	require.NoError(t, holder.Release(h))
	ok, _, err := e.admin.Exists(node)
	require.NoError(t, err)
	require.True(t, ok, "the delete was acknowledged but not done")

	faults.Cut()
	waitState(t, hc, 10*time.Second, zklock.StateReconnected)
	require.Eventually(t, func() bool {
		ok, _, err := e.admin.Exists(node)
		return err == nil && !ok
	}, 10*time.Second, 20*time.Millisecond, "the node is deleted again after the reconnect")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := waiter.Acquire(ctx)
	require.NoError(t, err, "the queue is not blocked")
	require.NoError(t, waiter.Release(w))
}
