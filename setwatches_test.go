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

// When zklock's session takes itself up again on a new connection, it
// sets its watches again (SetWatches, relative to the last zxid it has
// seen) before it sends the requests queued during the cut, so no answer
// to those can move that zxid past a change made during the cut: a watch
// set again from a zxid too new would miss the change. Many watches make
// SetWatches go in several batches, all of which must come first. Under
// -race: 20 cuts, with requests issued throughout, each reconnect taking
// the session up again; then a revocation requested while the connection
// is down, with requests queued behind it, reaches the holder once the
// connection is back.
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
	sid := zklock.ConnOf(c).SessionID()
	// Many watches of the session, as of many holds: several SetWatches
	// batches at each reconnect.
	for i := range manyWatches {
		_, _, _, err := zklock.ConnOf(c).ExistsW(context.Background(), fmt.Sprintf("%s/absent-%d", e.root, i))
		require.NoError(t, err)
	}

	// Requests on the session itself, which queue while it is down (the
	// Client's own reads would wait for it to be back before they retry).
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _, _ = zklock.ConnOf(c).Exists(ctx, e.root)
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
	stop()
	wg.Wait()
	await(t, revoked, 10*time.Second)
	require.NoError(t, hd.Err(), "a short cut loses nothing under SessionPolicy")
	require.Equal(t, sid, zklock.ConnOf(c).SessionID(), "one session throughout")
}
