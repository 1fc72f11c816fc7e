package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// The server stops hearing the holder while it keeps sending to it
// (notifications of a persistent watch on a busy path): the connection
// looks alive by the bytes it receives, but the server expires the
// session T after it last heard the holder. The holder must be told of
// its loss well before the server may expire it, so before the waiter is
// granted, under either policy. (When the read timeout counted any byte
// received, the holder learnt of it only as the server closed the expired
// session's connection, about when the waiter was granted.)
func TestIntegration_MutexHolderServerStopsHearing(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	for _, policy := range []zklock.ErrorPolicy{zklock.StandardPolicy, zklock.SessionPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			e := setup(t)
			faults := zktest.NewFaultsT(t, e.servers)
			t.Cleanup(func() { zktest.WaitNoEphemerals(t, e.admin, e.root, 10*time.Second) })
			hc := e.client(zklock.WithSessionTimeout(timeout), zklock.WithErrorPolicy(policy), zklock.WithDialer(faults.Dial))
			holder := e.mutex(hc, "/deaf")
			waiter := e.mutex(e.client(), "/deaf")
			bg := context.Background()

			h, err := holder.Acquire(bg)
			require.NoError(t, err)
			busy := e.root + "/busy"
			_, err = e.admin.Create(busy, nil, 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			require.NoError(t, zklock.AddRecursiveWatch(bg, hc, busy))
			stop := make(chan struct{})
			defer close(stop)
			go func() { // the server's traffic to the holder: a notification every 20 ms
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := e.admin.Set(busy, nil, -1); err != nil {
							return
						}
					}
				}
			}()

			lost := make(chan time.Time, 1)
			context.AfterFunc(h, func() { lost <- time.Now() })
			got := acquireAsync(bg, waiter)
			waitParticipants(t, waiter, 2)

			faults.Deafen()
			a := await(t, got, 20*time.Second)
			require.NoError(t, a.err, "the waiter acquires once the holder's session expired")
			waitDone(t, h, 15*time.Second)
			require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
			lostAt := <-lost
			assert.Greater(t, a.at.Sub(lostAt), timeout/6,
				"the holder learnt of the loss (%v) at least T/6 before the waiter acquired (%v)",
				lostAt.Format("15:04:05.000"), a.at.Format("15:04:05.000"))
			faults.Resume()
			require.NoError(t, waiter.Release(a.ctx))
			require.ErrorIs(t, holder.Release(h), zklock.ErrLockLost)
		})
	}
}
