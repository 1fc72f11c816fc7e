package zklock_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// manyLocks is how many distinct locks one Client holds at once in the
// tests below: the scale at which a goroutine or a log record per hold
// shows.
const manyLocks = 10000

// holdMany takes n distinct locks on c (under e's root, in dir), from 16
// goroutines, and returns their Holds and Mutexes, in lock order. The
// locks' parents are made first, as a service that takes a lock per job
// finds them after the first time.
func holdMany(t *testing.T, e *env, c *zklock.Client, dir string, n int) ([]*zklock.Hold, []*zklock.Mutex) {
	t.Helper()
	e.create(e.root + "/" + dir)
	paths := make([]string, n)
	var ops []any
	for i := range n {
		paths[i] = fmt.Sprintf("%s/%s/lock-%d", e.root, dir, i)
		ops = append(ops, &zk.CreateRequest{Path: paths[i], Acl: zk.WorldACL(zk.PermAll)})
		if len(ops) == 500 || i == n-1 {
			_, err := e.admin.Multi(ops...)
			require.NoError(t, err)
			ops = nil
		}
	}
	holds, mutexes := make([]*zklock.Hold, n), make([]*zklock.Mutex, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	// 16 at once: enough to keep requests in flight, few enough not to
	// starve the other test binaries that share the machine with -race.
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				m, err := zklock.NewMutex(c, paths[i])
				if err == nil {
					mutexes[i] = m
					holds[i], err = m.Lock(context.Background())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	// A hold whose listing did not show its node (none, on the Client's
	// own socket) watches its own node: wait until such watches are set,
	// so that no request is left to send.
	require.Eventually(t, func() bool { return zklock.WatchesSettled(c) }, 10*time.Second, time.Millisecond)
	return holds, mutexes
}

// lockAtOnce takes a new lock on c, named after name, whose hold relies
// on its parent's watch: its listing, sent once its create was written to
// the Client's socket, shows its node. A listing that failed (a
// connection lost on a loaded machine) does not, and its hold watches its
// own node: lockAtOnce then tries again on another lock, at most three
// times. It returns the Mutex, the hold, and the requests cc counted
// before the acquire that did.
func lockAtOnce(t *testing.T, e *env, c *zklock.Client, cc *countConn, name string) (*zklock.Mutex, *zklock.Hold, int) {
	t.Helper()
	for i := range 3 {
		p := fmt.Sprintf("/%s-%d", name, i)
		e.create(e.root + p) // made before, as a lock taken again finds it
		m := e.mutex(c, p)
		before := requests(cc)
		_, parents := zklock.FollowedNodes(c)
		hd, err := m.Lock(context.Background())
		require.NoError(t, err)
		if _, now := zklock.FollowedNodes(c); now == parents+1 {
			return m, hd, before
		}
		require.NoError(t, hd.Release())
		require.Eventually(t, func() bool { return zklock.WatchesSettled(c) }, 10*time.Second, time.Millisecond)
	}
	t.Fatal("in three acquires, no hold relied on its parent's watch")
	return nil, nil, 0
}

// followed returns how many nodes and parents c's holdWatch follows.
func followed(c *zklock.Client) int {
	nodes, parents := zklock.FollowedNodes(c)
	return nodes + parents
}

// requests returns how many requests cc has counted.
func requests(cc *countConn) int {
	n, _ := cc.total()
	return n
}

// heapInUse returns the bytes of live heap, after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// releaseAll releases every hold that still stands.
func releaseAll(holds []*zklock.Hold) {
	for _, hd := range holds {
		if hd.Err() == nil {
			_ = hd.Release()
		}
	}
}

// standing counts the holds that stand.
func standing(holds []*zklock.Hold) int {
	n := 0
	for _, hd := range holds {
		if hd.Err() == nil {
			n++
		}
	}
	return n
}

// maxHeapPerHold bounds the live heap of one hold of a Mutex of its own,
// the Mutex and everything the Client keeps for the hold included, and
// this test's own slices and path (about 80 bytes). The bench tool's
// target, at most 2 KiB of heap in use per hold, leaves room for the
// heap's slack on top of this (about 250 bytes). Measured here: about
// 1,960 bytes per hold before the records were made smaller
// (2026-11-29), about 1,700 after.
const maxHeapPerHold = 1800

// A hold is small: 10,000 distinct locks held at once, each through a
// Mutex of its own, take at most maxHeapPerHold bytes of live heap each.
// What a hold keeps is packed: the hold, its node, its watch in the
// session and in the Client's holdWatch, its lock's count of holds. (Not
// parallel: it reads the process's heap.)
func TestIntegration_HeapPerHold(t *testing.T) {
	e := setup(t)
	c := e.client()
	heap := heapInUse()
	holds, mutexes := holdMany(t, e, c, "heap", manyLocks)
	perHold := (heapInUse() - heap) / manyLocks
	runtime.KeepAlive(mutexes)
	t.Logf("%d bytes of live heap per hold, its Mutex included", perHold)
	assert.LessOrEqual(t, perHold, int64(maxHeapPerHold), "live heap per hold")
	releaseAll(holds)
	assert.Zero(t, standing(holds))
}

// A Client keeps no goroutine per hold: 10,000 distinct locks held at
// once add a handful of goroutines, not 10,000, and following them sends
// no request. The Client forgets each node when its hold ends. (Not
// parallel: it counts the process's goroutines.)
func TestIntegration_ManyHoldsNoGoroutineEach(t *testing.T) {
	e := setup(t)
	c, cc := e.countingClient()
	before, heap := runtime.NumGoroutine(), heapInUse()
	holds, mutexes := holdMany(t, e, c, "many", manyLocks)
	added, perHold := runtime.NumGoroutine()-before, (heapInUse()-heap)/manyLocks
	runtime.KeepAlive(mutexes)
	t.Logf("%d holds: %d goroutines more, %.2f requests and %d bytes of heap per hold (its Mutex included)",
		manyLocks, added, float64(requests(cc))/manyLocks, perHold)
	assert.Less(t, added, 50, "no goroutine per hold")
	nodes, parents := zklock.FollowedNodes(c)
	assert.Equal(t, manyLocks, nodes)
	// Each hold, granted at once, relies on its parent's watch: its listing,
	// sent once its create was written, never overtook the create (a
	// listing that did would list again and watch its own node: two
	// requests more).
	// (A few more, for an acquire retried after a connection loss on a
	// loaded machine; the listing that overtook its create did so 59
	// times in 10,000, 118 requests more.)
	assert.InDelta(t, manyLocks, parents, 10, "each hold granted at once relies on its parent's watch")
	assert.InDelta(t, 2*manyLocks, requests(cc), 20, "a lock taken at once costs its create and its listing")
	sent := requests(cc)
	require.NoError(t, c.Ping(context.Background())) // a round trip: anything queued before it has been sent
	assert.Equal(t, sent+1, requests(cc), "holding sends nothing")
	releaseAll(holds)
	assert.Zero(t, followed(c), "every node forgotten once its hold ended")
	assert.Zero(t, standing(holds))
}

// One hold among 10,000 on one Client learns of its loss: its node
// deleted (by an operator, say), or a revocation request written to it.
// No other hold is touched. (Not parallel, as the tests below: their load
// would slow the other tests' sessions.)
func TestIntegration_ManyHoldsOneLost(t *testing.T) {
	e := setup(t)
	c := e.client()
	holds, mutexes := holdMany(t, e, c, "one", manyLocks)
	defer releaseAll(holds)

	revoked := make(chan *zklock.Mutex, 1)
	const asked = manyLocks / 3
	mutexes[asked].MakeRevocable(func(m *zklock.Mutex) { revoked <- m }) // for its next hold
	require.NoError(t, holds[asked].Release())
	var err error
	holds[asked], err = mutexes[asked].Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, zklock.Revoke(context.Background(), c, mutexes[asked].LockPath(holds[asked].Context())))
	assert.Same(t, mutexes[asked], await(t, revoked, 10*time.Second), "the revocation request reached its holder")

	const deleted = manyLocks / 2
	require.NoError(t, e.admin.Delete(mutexes[deleted].LockPath(holds[deleted].Context()), -1))
	waitDone(t, holds[deleted].Context(), 10*time.Second)
	require.ErrorIs(t, holds[deleted].Err(), zklock.ErrLockLost)
	assert.Contains(t, holds[deleted].Err().Error(), "deleted")
	assert.Equal(t, manyLocks-1, standing(holds), "the other holds stand, the revoked one too (its owner decides)")
}

// A connection event that ends 10,000 holds ends every one promptly, and
// the Client logs it in one record per cause, not one per hold: under
// StandardPolicy a suspension; under either policy a lost session. Under
// SessionPolicy a short cut loses nothing, and the reconnect sends no
// request: the session itself sets the watches again, in a few
// SetWatches batches.
func TestIntegration_ManyHoldsConnectionEvent(t *testing.T) {
	cases := []struct {
		name   string
		policy zklock.ErrorPolicy
		fault  func(t *testing.T, l *kit.Link)
		cause  string // "" for none lost
	}{
		{"suspended/standard", zklock.StandardPolicy, func(_ *testing.T, l *kit.Link) {
			l.Cut()
		}, "connection"},
		{"session-lost/session", zklock.SessionPolicy, func(t *testing.T, l *kit.Link) {
			require.NoError(t, l.ExpireSession(context.Background()))
		}, "session"},
		{"cut/session", zklock.SessionPolicy, func(_ *testing.T, l *kit.Link) {
			l.Cut()
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			link := e.link()
			rec := newLogRecorder(slog.LevelWarn)
			c, cc := e.countingClient(zklock.WithErrorPolicy(tc.policy), zklock.WithLogger(slog.New(rec)),
				zklock.WithDialer(link.Dial))
			holds, _ := holdMany(t, e, c, "conn", manyLocks/2)
			defer releaseAll(holds)
			sent := requests(cc)
			watches := sessionWatches(t, e, zklock.ConnOf(c).SessionID())
			if tc.cause == "" {
				require.Positive(t, watches, "the holds watch their own nodes")
			}
			tc.fault(t, link)
			waitState(t, c, 15*time.Second, zklock.StateReconnected)
			if tc.cause == "" {
				// The session sets the watches again on the new connection,
				// before any request queued during the cut. Wait until the
				// server has every watch again.
				require.Eventually(t, func() bool { return sessionWatches(t, e, zklock.ConnOf(c).SessionID()) >= watches },
					15*time.Second, 10*time.Millisecond, "the session's %d watches set again", watches)
				require.NoError(t, c.Ping(context.Background()))
				assert.Equal(t, manyLocks/2, standing(holds), "a short cut loses nothing under SessionPolicy")
				assert.Equal(t, sent+1, requests(cc), "the reconnect sends no request but the Ping")
				return
			}
			for _, hd := range holds {
				waitDone(t, hd.Context(), 10*time.Second)
				require.ErrorIs(t, hd.Err(), zklock.ErrLockLost)
			}
			start := time.Now()
			// Their nodes are deleted, the session alive: 5,000 deletes, one
			// request each, which under -race beside the rest of the suite on
			// two cores took 11 to 14 s (CI, a helper's run); the time is logged.
			zktest.WaitNoEphemerals(t, e.admin, e.root, 30*time.Second)
			t.Logf("nodes of %d lost holds gone %v after the last loss", manyLocks/2, time.Since(start).Round(time.Millisecond))
			attrs, level := rec.await(t, "zklock: holds lost", 5*time.Second)
			assert.Equal(t, slog.LevelWarn, level)
			assert.Equal(t, fmt.Sprint(manyLocks/2), attrs["holds"])
			assert.Equal(t, tc.cause, attrs["cause"])
			warns := 0
			for _, m := range rec.messages() {
				if m != "zklock: connection state" {
					warns++
				}
			}
			assert.Less(t, warns, 5, "one record for the loss, not one per hold: %v", firstMessages(rec, 10))
		})
	}
}

// sessionWatches returns how many watches the servers hold for session
// sid, from their wchc.
func sessionWatches(t *testing.T, e *env, sid int64) int {
	t.Helper()
	id := fmt.Sprintf("0x%x", sid)
	n := 0
	for _, srv := range e.servers {
		reply, err := zktest.FourLetterWord(context.Background(), srv, "wchc")
		require.NoError(t, err)
		mine := false
		for _, line := range strings.Split(reply, "\n") {
			switch {
			case strings.HasPrefix(line, "0x"):
				mine = strings.TrimSpace(line) == id
			case mine && strings.HasPrefix(line, "\t"):
				n++
			}
		}
	}
	return n
}

// firstMessages returns the first n messages rec kept.
func firstMessages(rec *logRecorder, n int) []string {
	m := rec.messages()
	return m[:min(n, len(m))]
}

// A held node deleted right after a data change (whose watch is set
// again meanwhile) ends its hold, for a hold granted at once and for one
// granted after waiting (whose node's watch was set while it waited), on
// a Client of Connect (its node events come through the callback) and on
// one of NewClient (no callback: a goroutine follows each held node's
// watch); the Client then follows no node.
func TestIntegration_HoldsLearnOfDeletion(t *testing.T) {
	t.Parallel()
	for _, wrapped := range []bool{false, true} {
		t.Run(map[bool]string{false: "Connect", true: "NewClient"}[wrapped], func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			c := e.client()
			if wrapped {
				conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
				require.NoError(t, err)
				defer conn.Close()
				c = zklock.NewClient(conn, events)
				defer c.Close()
			}
			holdThenDelete(t, e, c)
		})
	}
}

// holdThenDelete takes two holds on c, one at once and one after waiting,
// writes to each one's node and deletes it, and checks each hold learns
// of it.
func holdThenDelete(t *testing.T, e *env, c *zklock.Client) {
	bg := context.Background()
	first := e.mutex(c, "/at-once")
	atOnce, err := first.Lock(bg)
	require.NoError(t, err)
	other, err := e.mutex(e.client(), "/waited").Lock(bg)
	require.NoError(t, err)
	waited := e.mutex(c, "/waited")
	got := acquireAsync(bg, waited)
	waitChildren(t, e, e.root+"/waited", 2)
	require.NoError(t, other.Release())
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)

	for _, h := range []struct {
		name string
		m    *zklock.Mutex
		ctx  context.Context
	}{{"at once", first, atOnce.Context()}, {"after waiting", waited, a.ctx}} {
		node := h.m.LockPath(h.ctx)
		require.NotEmpty(t, node, h.name)
		// A write fires the watch, which is set again; the delete right
		// behind it is seen either way: by that read, or by the new watch.
		_, err := e.admin.Set(node, []byte("a write"), -1)
		require.NoError(t, err)
		require.NoError(t, e.admin.Delete(node, -1))
		waitDone(t, h.ctx, 10*time.Second)
		require.ErrorIs(t, context.Cause(h.ctx), zklock.ErrLockLost, h.name)
		assert.Contains(t, context.Cause(h.ctx).Error(), "deleted", h.name)
	}
	require.Eventually(t, func() bool { return followed(c) == 0 }, 10*time.Second, 5*time.Millisecond)
}

// A hold granted at once relies on the child watch that its listing, sent
// behind its create, set on the lock's parent, not on a watch of its own:
// taking it costs two requests, as zk.Lock's does. It still learns of its
// loss, in either order of events: its node deleted while nothing else
// changed; deleted after a waiter came (whose create fired the parent's
// watch, so the hold now watches its own node). (Under StandardPolicy, the
// default: a suspension ends it, so it never relies on the watch across a
// reconnect.)
func TestIntegration_HeldAtOnceFollowsParent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		fault func(t *testing.T, e *env, node string, m *zklock.Mutex)
	}{
		{"deleted", func(t *testing.T, e *env, node string, _ *zklock.Mutex) {
			require.NoError(t, e.admin.Delete(node, -1))
		}},
		{"after a waiter", func(t *testing.T, e *env, node string, m *zklock.Mutex) {
			w := e.mutex(e.client(), strings.TrimPrefix(m.Path(), e.root))
			waiter := acquireAsync(context.Background(), w)
			waitChildren(t, e, m.Path(), 2)
			require.NoError(t, e.admin.Delete(node, -1))
			a := await(t, waiter, 10*time.Second)
			require.NoError(t, a.err)
			require.NoError(t, w.Release(a.ctx))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			c, cc := e.countingClient()
			m, hd, before := lockAtOnce(t, e, c, cc, "lock")
			_, ops := cc.total()
			deletes := ops["delete"]
			assert.Equal(t, 2, requests(cc)-before, "a create and its listing: %v", ops)
			tc.fault(t, e, m.LockPath(hd.Context()), m)
			waitDone(t, hd.Context(), 15*time.Second)
			require.ErrorIs(t, hd.Err(), zklock.ErrLockLost)
			assert.Contains(t, hd.Err().Error(), "deleted")
			_, ops = cc.total()
			assert.Equal(t, 3, requests(cc)-before-(ops["delete"]-deletes), "and one read of its own node once the parent changed: %v", ops)
			require.Eventually(t, func() bool { return followed(c) == 0 }, 10*time.Second, 5*time.Millisecond)
		})
	}
}

// Under SessionPolicy a hold may outlive a reconnect, and go-zookeeper
// sets the watches again relative to the last zxid it has seen, which can
// be past a deletion made during the outage: a child watch on the parent
// would then be set again without firing. So such a hold watches its own
// node, as a hold granted at once always did (three requests), and a
// deletion while its connection swallowed every reply is seen at the
// reconnect: a data watch fires for a missing node whatever the zxid.
func TestIntegration_HeldAtOnceUnderSessionPolicyWatchesOwnNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	link := e.link()
	c, cc := e.countingClient(zklock.WithErrorPolicy(zklock.SessionPolicy), zklock.WithDialer(link.Dial))
	e.create(e.root + "/lock")
	m := e.mutex(c, "/lock")
	hd, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return zklock.WatchesSettled(c) }, 10*time.Second, time.Millisecond)
	_, parents := zklock.FollowedNodes(c)
	assert.Zero(t, parents, "the hold watches its own node")
	_, ops := cc.total()
	assert.Equal(t, 1, ops["getData"], "its own node's watch: %v", ops)

	link.Blackhole()
	require.NoError(t, e.admin.Delete(m.LockPath(hd.Context()), -1)) // its event is swallowed
	link.Restore()
	waitDone(t, hd.Context(), 15*time.Second)
	require.ErrorIs(t, hd.Err(), zklock.ErrLockLost)
	assert.Contains(t, hd.Err().Error(), "deleted")
}

// A data change on the node of a hold that relies on its parent's watch
// (seen through another watch of the same session on that node) makes the
// hold watch its own node, and only once: a Token asked afterwards sends
// nothing more, and the Client no longer counts the hold on the parent.
func TestIntegration_HeldAtOnceDataChange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	m, hd, _ := lockAtOnce(t, e, c, cc, "lock")
	_, ops := cc.total()
	reads := ops["getData"]
	node := m.LockPath(hd.Context())
	_, _, _, err := cc.ZKConn.GetW(context.Background(), node) // a watch of the same session, outside the Client's count
	require.NoError(t, err)
	_, err = e.admin.Set(node, []byte("a write"), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, parents := zklock.FollowedNodes(c)
		return parents == 0 && zklock.WatchesSettled(c)
	}, 10*time.Second, time.Millisecond, "the hold watches its own node after the data change")
	token, err := hd.Token()
	require.NoError(t, err)
	_, st, err := e.admin.Get(node)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, token)
	_, ops = cc.total()
	assert.Equal(t, 1, ops["getData"]-reads, "one watch setter for the node: %v", ops)
	require.NoError(t, hd.Release())
}

// The token of a hold that relies on its parent's watch is read when
// asked, and is its node's creation zxid; from then on the Client reads
// each new hold's token as it is granted, as a fencing user wants.
func TestIntegration_HeldAtOnceTokenWhenAsked(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	e.create(e.root + "/other")
	m, hd, before := lockAtOnce(t, e, c, cc, "lock")
	require.Equal(t, 2, requests(cc)-before)
	token, err := hd.Token()
	require.NoError(t, err)
	_, st, err := e.admin.Get(m.LockPath(hd.Context()))
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, token)
	assert.Equal(t, 3, requests(cc)-before, "the token costs one read")
	_, parents := zklock.FollowedNodes(c)
	assert.Zero(t, parents, "the hold watches its own node now")

	other := e.mutex(c, "/other")
	hd2, err := other.Lock(context.Background())
	require.NoError(t, err)
	_, parents = zklock.FollowedNodes(c)
	assert.Zero(t, parents, "a fencing Client's hold reads its token at once")
	token2, err := hd2.Token()
	require.NoError(t, err)
	assert.Greater(t, token2, token)
	require.NoError(t, hd.Release())
	require.NoError(t, hd2.Release())
	assert.Zero(t, followed(c))
}
