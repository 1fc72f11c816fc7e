package zklock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// When go-zookeeper takes a session up again on a new connection, it
// reads its last zxid for the request that sets the session's watches
// again, while answers to the requests queued during the cut may already
// be recording theirs (go-zookeeper/zk#35): unordered, which the race
// detector reports, and a watch set again from a zxid too new misses a
// change made during the cut. The Client's socket holds those requests
// back until the set-watches request is written, whichever dialer opened
// it (here the Link's). Under -race: 20 cuts, with requests issued
// throughout; then a revocation requested while the connection is down
// reaches the holder once it is back.
func TestIntegration_ReconnectSetsWatchesBeforeAnswers(t *testing.T) {
	const manyWatches = 5000
	e := setup(t)
	link := e.link()
	c := e.client(zklock.WithErrorPolicy(zklock.SessionPolicy), zklock.WithDialer(link.Dial))
	states := make(chan zklock.ConnectionState, 64)
	defer c.Listen(func(s zklock.ConnectionState) { states <- s })()

	m := e.mutex(c, "/storm")
	revoked := make(chan struct{}, 1)
	m.MakeRevocable(func(*zklock.Mutex) { revoked <- struct{}{} })
	hd, err := m.Lock(context.Background())
	require.NoError(t, err)
	defer hd.Release()
	node := m.LockPath(hd.Context())
	// Many watches, as of many holds: go-zookeeper then takes a while to
	// build its set-watches requests after reading the zxid.
	for i := range manyWatches {
		_, _, _, err := c.Conn().ExistsW(fmt.Sprintf("%s/absent-%d", e.root, i))
		require.NoError(t, err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _, _ = c.Conn().Exists(e.root)
			}
		}()
	}
	for range 20 {
		link.Cut()
		waitStates(t, states, 15*time.Second, zklock.StateSuspended, zklock.StateReconnected)
	}

	other := e.client()
	link.Blackhole()
	require.NoError(t, zklock.Revoke(context.Background(), other, node))
	link.Restore()
	waitStates(t, states, 15*time.Second, zklock.StateSuspended, zklock.StateReconnected)
	close(stop)
	wg.Wait()
	await(t, revoked, 10*time.Second)
	require.NoError(t, hd.Err(), "a short cut loses nothing under SessionPolicy")
}
