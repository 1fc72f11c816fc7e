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
// its loss before the waiter is granted, under either policy: under
// StandardPolicy at the suspension, T/3 before the server may expire the
// session; under SessionPolicy T/10 before. (When the read timeout
// counted any byte received, a SessionPolicy holder learnt of it 467 ms
// after the waiter's grant, a StandardPolicy one 1 ms before it.)
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
			margin := time.Duration(0) // SessionPolicy: T/10 by design, less the notice's delays
			if policy == zklock.StandardPolicy {
				margin = timeout / 4 // T/3 by design
			}
			assert.Greater(t, a.at.Sub(lostAt), margin,
				"the holder learnt of the loss (%v) at least %v before the waiter acquired (%v)",
				lostAt.Format("15:04:05.000"), margin, a.at.Format("15:04:05.000"))
			faults.Resume()
			require.NoError(t, waiter.Release(a.ctx))
			require.ErrorIs(t, holder.Release(h), zklock.ErrLockLost)
		})
	}
}
