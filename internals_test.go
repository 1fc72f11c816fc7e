package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	kit "github.com/zklock/zklock/zktest"
)

// A waiter's node deleted by someone else: the waiter queues again with a
// new node and still gets the lock.
func TestIntegration_WaiterNodeDeletedRequeues(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/requeue")
	waiter := e.mutex(e.client(), "/requeue")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter)
	first := waitParticipants(t, holder, 2)[1]
	require.NoError(t, e.admin.Delete(first, -1))
	require.Eventually(t, func() bool {
		p, err := holder.Participants(context.Background())
		return err == nil && len(p) == 2 && p[1] != first
	}, 10*time.Second, 5*time.Millisecond, "the waiter queued a new node")
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.NotEqual(t, first, waiter.LockPath(a.ctx))
	require.NoError(t, waiter.Release(a.ctx))
}

// The waiter's session expires while it waits: its node goes with the
// session, and it queues again in the new session.
func TestIntegration_WaiterSessionExpiresRequeues(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	wc := e.client(
		zklock.WithSessionTimeout(1500*time.Millisecond),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: time.Minute, Sleep: 50 * time.Millisecond}),
		zklock.WithDialer(faults.Dial),
	)
	holder := e.mutex(e.client(), "/waiter-expires")
	waiter := e.mutex(wc, "/waiter-expires")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter)
	first := waitParticipants(t, holder, 2)[1]
	oldSession := zklock.ConnOf(wc).SessionID()

	faults.Pause()
	require.Eventually(t, func() bool { return len(e.children(e.root+"/waiter-expires")) == 1 },
		20*time.Second, 20*time.Millisecond, "the server expires the waiter's session")
	faults.Resume()
	require.Eventually(t, func() bool {
		p, err := holder.Participants(context.Background())
		return err == nil && len(p) == 2 && p[1] != first
	}, 20*time.Second, 10*time.Millisecond, "the waiter queued again")
	assert.NotEqual(t, oldSession, zklock.ConnOf(wc).SessionID())
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}

// Waiters that give up leave their watches behind (go-zookeeper cannot
// remove one), but waiters share one watch per node and fired watches are
// swept, so the number tracked stays bounded by the live nodes watched.
func TestIntegration_AbandonedWatchesStayBounded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	hc := e.client()
	c := e.client()
	bg := context.Background()
	type held struct {
		m *zklock.Mutex
		h context.Context
	}
	var holds []held
	for i := range 40 {
		name := fmt.Sprintf("/bounded-%d", i)
		hm := e.mutex(hc, name)
		h, err := hm.Acquire(bg)
		require.NoError(t, err)
		holds = append(holds, held{hm, h})
		wm := e.mutex(c, name)
		for range 3 { // three give-ups on the same holder share one watch
			ctx, cancel := context.WithTimeout(bg, 2*time.Millisecond)
			_, err := wm.Acquire(ctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	}
	assert.LessOrEqual(t, zklock.WatchedNodes(c), 40, "one watch per watched node")
	for _, h := range holds {
		require.NoError(t, h.m.Release(h.h)) // fires every watch, with nobody waiting
	}
	// Later waits on new nodes sweep the fired entries away.
	for round := range 1 {
		var more []held
		for i := range 40 {
			name := fmt.Sprintf("/bounded-next-%d-%d", round, i)
			hm := e.mutex(hc, name)
			h, err := hm.Acquire(bg)
			require.NoError(t, err)
			more = append(more, held{hm, h})
			ctx, cancel := context.WithTimeout(bg, 2*time.Millisecond)
			_, err = e.mutex(c, name).Acquire(ctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
		for _, h := range more {
			require.NoError(t, h.m.Release(h.h))
		}
	}
	assert.LessOrEqual(t, zklock.WatchedNodes(c), 2*40+64, "fired watches are swept")
}

// The server stops while a goroutine waits and starts again: the waiter
// rides out the outage and eventually acquires.
func TestIntegration_MutexServerRestartWhileWaiting(t *testing.T) {
	t.Parallel()
	cluster := kit.StartT(t, kit.Config{})
	e := setupKit(t, cluster)
	// SessionPolicy trusts a suspended session for about a quarter of its
	// timeout: long enough here for the server to restart under load.
	hc := e.client(zklock.WithErrorPolicy(zklock.SessionPolicy), zklock.WithSessionTimeout(40*time.Second))
	wc := e.client()
	holder := e.mutex(hc, "/restart")
	waiter := e.mutex(wc, "/restart")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)
	got := acquireAsync(bg, waiter)
	waitParticipants(t, holder, 2)

	require.NoError(t, cluster.Stop(0))
	waitState(t, wc, 10*time.Second, zklock.StateSuspended)
	require.NoError(t, cluster.Restart(0))
	waitState(t, hc, 20*time.Second, zklock.StateReconnected)
	require.NoError(t, h.Err(), "SessionPolicy: the session survived the restart")
	require.NoError(t, holder.Release(h))

	a := await(t, got, 30*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}

func TestIntegration_MutexCancelledAcquireLeavesNoNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/cancel")
	waiter := e.mutex(e.client(), "/cancel")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)

	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		_, err := waiter.Acquire(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// Its node's delete is sent before it returns, its reply not
		// awaited: its own Client sees the node gone at once, another
		// session a round trip later.
		parts, err := waiter.Participants(bg)
		require.NoError(t, err)
		assert.Len(t, parts, 1, "its own Client's listing, sent after it returned")
		require.Eventually(t, func() bool { return len(e.children(e.root+"/cancel")) == 1 }, 10*time.Second, 5*time.Millisecond,
			"the timed-out waiter's node is deleted")
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(bg)
		got := acquireAsync(ctx, waiter)
		waitParticipants(t, holder, 2)
		cancel(errors.New("caller gave up"))
		a := await(t, got, 10*time.Second)
		require.ErrorIs(t, a.err, context.Canceled)
		assert.ErrorContains(t, a.err, "caller gave up")
		// A cancel that comes before the create's reply leaves the node to
		// the create's clean-up, which deletes it when the reply comes.
		require.Eventually(t, func() bool { return len(e.children(e.root+"/cancel")) == 1 }, 10*time.Second, 5*time.Millisecond,
			"the cancelled waiter's node is deleted")
	})
	t.Run("try", func(t *testing.T) {
		_, err := waiter.TryAcquire(bg)
		require.ErrorIs(t, err, zklock.ErrLocked)
		assert.Len(t, e.children(e.root+"/cancel"), 1)
	})
	t.Run("done before start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(bg)
		cancel()
		_, err := waiter.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled)
	})
	require.NoError(t, holder.Release(h))
	// The queue is not blocked by anything the waiters left.
	h2, err := waiter.TryAcquire(bg)
	require.NoError(t, err)
	require.NoError(t, waiter.Release(h2))
}

// Many waiters give up on one long-held lock; the one ZooKeeper watch
// they share is enough, and the lock is still handed over in order.
func TestIntegration_MutexManyAbandonedWaits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/abandon")
	c := e.client()
	waiter := e.mutex(c, "/abandon")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)
	for range 50 {
		ctx, cancel := context.WithTimeout(bg, 5*time.Millisecond)
		_, err := waiter.Acquire(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	// A create still in flight when its ctx ended is deleted as soon as its
	// reply arrives, in the background.
	require.Eventually(t, func() bool { return len(e.children(e.root+"/abandon")) == 1 },
		10*time.Second, 5*time.Millisecond, "no node left by the abandoned waits")
	got := acquireAsync(bg, waiter)
	waitParticipants(t, holder, 2)
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
	// And the Client follows none of the abandoned waits' nodes, nor the
	// released hold's: none is left to be followed forever.
	require.Eventually(t, func() bool { return followed(c) == 0 },
		10*time.Second, 5*time.Millisecond, "the Client follows %d nodes and parents", followed(c))
}

// countConn counts the requests a Client sends, by operation, and by
// operation and path.
type countConn struct {
	zklock.ZKConn
	mu     sync.Mutex
	n      map[string]int // guarded by mu
	byPath map[string]int // "op path"; guarded by mu
}

func (c *countConn) count(op, p string) {
	c.mu.Lock()
	c.n[op]++
	if c.byPath == nil {
		c.byPath = map[string]int{}
	}
	c.byPath[op+" "+p]++
	c.mu.Unlock()
}

// at returns how many op requests on the node at p cc has counted.
func (c *countConn) at(op, p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byPath[op+" "+p]
}

// total returns the number of requests so far and a copy of the counts.
func (c *countConn) total() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum, cp := 0, map[string]int{}
	for op, n := range c.n {
		sum += n
		cp[op] = n
	}
	return sum, cp
}

func (c *countConn) Create(ctx context.Context, p string, d []byte, f int32, a []zk.ACL) (string, error) {
	c.count("create", p)
	return c.ZKConn.Create(ctx, p, d, f, a)
}

func (c *countConn) CreateContainer(ctx context.Context, p string, d []byte, f int32, a []zk.ACL) (string, error) {
	c.count("createContainer", p)
	return c.ZKConn.CreateContainer(ctx, p, d, f, a)
}

func (c *countConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	c.count("getChildren", p)
	return c.ZKConn.Children(ctx, p)
}

func (c *countConn) ChildrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	c.count("getChildren", p)
	return c.ZKConn.ChildrenW(ctx, p)
}

func (c *countConn) Get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	c.count("getData", p)
	return c.ZKConn.Get(ctx, p)
}

func (c *countConn) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count("getData", p)
	return c.ZKConn.GetW(ctx, p)
}

func (c *countConn) Exists(ctx context.Context, p string) (bool, *zk.Stat, error) {
	c.count("exists", p)
	return c.ZKConn.Exists(ctx, p)
}

func (c *countConn) ExistsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.count("exists", p)
	return c.ZKConn.ExistsW(ctx, p)
}

func (c *countConn) Delete(ctx context.Context, p string, v int32) error {
	c.count("delete", p)
	return c.ZKConn.Delete(ctx, p, v)
}

func (c *countConn) Sync(ctx context.Context, p string) (string, error) {
	c.count("sync", p)
	return c.ZKConn.Sync(ctx, p)
}

func (c *countConn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	c.count("multi", "")
	return c.ZKConn.Multi(ctx, ops...)
}

// A create that fails leaves nothing of the listing sent behind it (see
// readBehind). Once the create is queued, the listing, in the same write,
// cannot be held back: it goes (two requests, as for a grant), its result
// is dropped, and the child watch it set is removed (it stayed on the
// server, and in the session, until the children changed: never, under a
// parent where nobody may create). A create that fails before it is sent
// (an ACL refused locally) sends no listing at all (it sent one).
func TestIntegration_ReadBehindFailedCreate(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	cases := []struct {
		name     string
		readOnly string // the node under which the create is refused
		acquire  func(e *env, c *zklock.Client) error
	}{
		{"mutex", "/ro", func(e *env, c *zklock.Client) error {
			_, err := e.mutex(c, "/ro").Acquire(bg)
			return err
		}},
		{"semaphore", "/sem/leases", func(e *env, c *zklock.Client) error {
			s, err := zklock.NewSemaphore(c, e.root+"/sem", 1)
			require.NoError(e.t, err)
			_, err = s.Acquire(bg)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			dir := e.root + tc.readOnly
			e.create(path.Dir(dir))
			_, err := e.admin.Create(dir, nil, 0, zk.WorldACL(zk.PermRead))
			require.NoError(t, err)
			c, cc := e.countingClient()
			err = tc.acquire(e, c)
			require.ErrorIs(t, err, zk.ErrNoAuth)
			if _, ops := cc.total(); tc.name == "mutex" {
				assert.Equal(t, map[string]int{"create": 1, "getChildren": 1}, ops, "the create and the listing in its write")
			}
			watched, err := zklock.HasChildWatch(bg, c, dir) // sent after anything the acquire sent
			require.NoError(t, err)
			assert.False(t, watched, "the failed create's listing left its watch on %s", dir)
		})
	}
	t.Run("not sent", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		c, cc := e.countingClient(zklock.WithACL(func(string) []zk.ACL { return nil }))
		_, err := e.mutex(c, "/noacl").Acquire(bg)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
		n, ops := cc.total()
		assert.Zero(t, n, "a create refused before it was sent sends no listing: %v", ops)
	})
}

// countingClient connects a Client, with opts, whose requests cc counts.
func (e *env) countingClient(opts ...zklock.Option) (*zklock.Client, *countConn) {
	cc := &countConn{n: map[string]int{}}
	c := e.client(append(opts, zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
		cc.ZKConn = real
		return cc
	}))...)
	return c, cc
}

// A queue of a few hundred waiters costs O(n) requests in total: each
// waiter queues with a bounded number of requests, and each handoff costs
// the woken waiter one listing (BENCHMARKS.md). Walking cached
// predecessors, or a herd, would cost O(n^2): about 45,000 at n = 300.
func TestIntegration_QueueCostsLinearRequests(t *testing.T) {
	t.Parallel()
	const waiters, sessions = 300, 6
	e := setup(t)
	gate := e.mutex(e.client(), "/queue")
	g, err := gate.Acquire(context.Background())
	require.NoError(t, err)

	counters := make([]*countConn, sessions)
	results := make(chan error, waiters)
	for s := range sessions {
		c, cc := e.countingClient()
		counters[s] = cc
		m := e.mutex(c, "/queue")
		for range waiters / sessions {
			go func() {
				h, err := m.Acquire(context.Background())
				if err == nil {
					err = m.Release(h)
				}
				results <- err
			}()
		}
	}
	sum := func() (int, map[string]int) {
		total, byOp := 0, map[string]int{}
		for _, cc := range counters {
			n, ops := cc.total()
			total += n
			for op, k := range ops {
				byOp[op] += k
			}
		}
		return total, byOp
	}
	waitParticipants(t, gate, waiters+1)
	queued, queuedOps := sum()
	require.NoError(t, gate.Release(g))
	for range waiters {
		select {
		case err := <-results:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Fatal("the queue did not drain within 60s")
		}
	}
	total, ops := sum()
	t.Logf("requests: %d to queue %d waiters %v; %d in all %v", queued, waiters, queuedOps, total, ops)
	// Queueing: create, listing, and watches on the waiter's own node, its
	// predecessor and the node before that (the look-ahead). A handoff: a
	// listing when the look-ahead fires (sometimes one more, when a watched
	// node went meanwhile), and the release's delete.
	assert.LessOrEqual(t, queued, 5*waiters, "queueing costs a few requests per waiter")
	assert.LessOrEqual(t, total-queued, 4*waiters, "a handoff and a release cost a few requests each")
	assert.LessOrEqual(t, ops["getChildren"], 3*waiters, "one listing to queue, about one per handoff")
}

// A waiter whose listing showed only the holder ahead is granted by the
// holder's deletion alone: no listing after the wake-up. Its requests, in
// all: create, listing, the watches on its own node and on the holder, and
// the delete of its release.
func TestIntegration_GrantWithoutListing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/fast")
	h, err := holder.Lock(context.Background())
	require.NoError(t, err)
	c, cc := e.countingClient()
	waiter := e.mutex(c, "/fast")
	got := acquireAsync(context.Background(), waiter)
	waitParticipants(t, holder, 2)
	require.Eventually(t, func() bool { _, ops := cc.total(); return ops["getData"] == 2 },
		10*time.Second, time.Millisecond, "the waiter watches its own node and the holder's")
	require.NoError(t, h.Release())
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	_, ops := cc.total()
	assert.Equal(t, 1, ops["getChildren"], "one listing, to queue: none after the holder's deletion")
	require.NoError(t, waiter.Release(a.ctx))
	n, ops := cc.total()
	assert.Equal(t, 5, n, "create, listing, two watches, delete: %v", ops)
}

// A third party deletes the waiting node just before the holder releases:
// the waiter, whose grant would need no listing, sees its own node's
// deletion first (one session's events come in the order of the changes)
// and queues again instead of holding with no node. Meanwhile a second
// waiter is granted; never two holders.
func TestIntegration_GrantWithoutListingChecksOwnNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.mutex(e.client(), "/own")
	h, err := holder.Lock(context.Background())
	require.NoError(t, err)
	c, cc := e.countingClient()
	waiter := e.mutex(c, "/own")
	got := acquireAsync(context.Background(), waiter)
	parts := waitParticipants(t, holder, 2)
	require.Eventually(t, func() bool { _, ops := cc.total(); return ops["getData"] == 2 },
		10*time.Second, time.Millisecond, "the waiter watches its own node and the holder's")
	// One multi: the waiting node and the holder's node go in one
	// transaction, so both events reach the waiter's session together, its
	// own first.
	_, err = e.admin.Multi(&zk.DeleteRequest{Path: parts[1], Version: -1}, &zk.DeleteRequest{Path: parts[0], Version: -1})
	require.NoError(t, err)
	waitDone(t, h.Context(), 10*time.Second)
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err, "the waiter queued again and got the lock")
	assert.NotEqual(t, parts[1], waiter.LockPath(a.ctx), "with a new node")
	assert.Equal(t, []string{waiter.LockPath(a.ctx)}, waitParticipants(t, holder, 1))
	require.NoError(t, waiter.Release(a.ctx))
	require.ErrorIs(t, h.Release(), zklock.ErrLockLost)
}

// A revocation request written into the holder's node fires the watch of
// a waiter whose grant needs no listing: a data change is not a deletion,
// so the waiter decides again and keeps waiting while the holder holds.
func TestIntegration_GrantWithoutListingIgnoresRevocation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	hc := e.client()
	holder := e.mutex(hc, "/rev")
	revoked := make(chan struct{}, 1)
	holder.MakeRevocable(func(*zklock.Mutex) { revoked <- struct{}{} })
	h, err := holder.Lock(context.Background())
	require.NoError(t, err)
	c, cc := e.countingClient()
	waiter := e.mutex(c, "/rev")
	got := acquireAsync(context.Background(), waiter)
	waitParticipants(t, holder, 2)
	require.Eventually(t, func() bool { _, ops := cc.total(); return ops["getData"] == 2 },
		10*time.Second, time.Millisecond, "the waiter watches its own node and the holder's")
	// Listings so far: one, or two when the listing sent behind the create
	// overtook it (the first decision then lists again).
	_, ops := cc.total()
	listed := ops["getChildren"]
	require.NoError(t, zklock.Revoke(context.Background(), hc, h.Path()))
	await(t, revoked, 10*time.Second)
	require.Eventually(t, func() bool { _, ops := cc.total(); return ops["getChildren"] == listed+1 },
		10*time.Second, time.Millisecond, "the data change made the waiter list again")
	select {
	case a := <-got:
		t.Fatalf("the waiter was granted while the holder holds: %v", a.err)
	default:
	}
	require.NoError(t, h.Err())
	require.NoError(t, h.Release())
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}

// The waiter's session expires while it waits with a grant that needs no
// listing, and the holder releases meanwhile. The waiter's node died with
// its session: it must not hold on the deletion it hears after
// reconnecting, but queue again on its new session.
func TestIntegration_GrantWithoutListingAfterSessionLoss(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	holder := e.mutex(e.client(), "/sess")
	h, err := holder.Lock(context.Background())
	require.NoError(t, err)
	wc := e.client(zklock.WithSessionTimeout(1500*time.Millisecond), zklock.WithDialer(faults.Dial))
	waiter := e.mutex(wc, "/sess")
	got := acquireAsync(context.Background(), waiter)
	first := waitParticipants(t, holder, 2)[1]
	faults.Pause()
	waitState(t, wc, 10*time.Second, zklock.StateLost)
	waitParticipants(t, holder, 1) // the server expired the waiter's session
	require.NoError(t, h.Release())
	faults.Resume()
	a := await(t, got, 20*time.Second)
	require.NoError(t, a.err)
	assert.NotEqual(t, first, waiter.LockPath(a.ctx), "a node of the new session")
	assert.Equal(t, []string{waiter.LockPath(a.ctx)}, waitParticipants(t, holder, 1))
	require.NoError(t, waiter.Release(a.ctx))
}
