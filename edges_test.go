package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// bySequence sorts lock node names by their sequence number, the last ten
// digits of the name (the protected prefix is random).
func bySequence(names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		return strings.Compare(a[len(a)-10:], b[len(b)-10:])
	})
	return out
}

// An Unlock of a sync.Locker whose Lock lost its hold gives up that ended
// hold, not the live hold that another goroutine's Lock took since: the
// goroutine that was granted after the loss keeps the lock until its own
// Unlock, and no other participant gets in meanwhile.
func TestIntegration_EdgeSyncLockerLateUnlock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	events := make(chan zklock.Event, 100)
	c := e.client(zklock.WithObserver(func(ev zklock.Event) {
		select {
		case events <- ev:
		default: // the test reads only the first few
		}
	}))
	lockPath := e.root + "/x"
	l := zklock.NewSyncLocker(e.mutex(c, "/x"))
	bg := context.Background()

	l.Lock() // g1
	g2 := make(chan any, 1)
	go func() { g2 <- catchPanic(l.Lock) }()
	waitChildren(t, e, lockPath, 2)
	nodes := bySequence(e.children(lockPath))
	first, second := path.Join(lockPath, nodes[0]), path.Join(lockPath, nodes[1])

	// g1's hold is lost: its node is deleted, and g2 is granted.
	require.NoError(t, e.admin.Delete(first, -1))
	require.Nil(t, await(t, g2, 10*time.Second), "g2's Lock panicked")
	for {
		ev := nextEvent(t, events, zklock.EventLost, 10*time.Second)
		if ev.Node == first {
			break
		}
	}

	l.Unlock() // g1, late: its hold is gone
	ok, _, err := e.admin.Exists(second)
	require.NoError(t, err)
	assert.True(t, ok, "g1's late Unlock released g2's hold: node %s deleted", second)
	other := e.mutex(e.client(), "/x")
	hd, err := other.TryLock(bg)
	assert.ErrorIs(t, err, zklock.ErrLocked, "another participant got the lock while g2 holds it")
	if err == nil {
		require.NoError(t, hd.Release())
	}

	l.Unlock() // g2
	waitChildren(t, e, lockPath, 0)
	hd, err = other.TryLock(bg)
	require.NoError(t, err, "the lock is free after both Unlocks")
	require.NoError(t, hd.Release())
}

// A context from Hold.Bind carries every hold that the context given to it
// carries, as well as the Hold's own: binding a hold of b to a context that
// holds a keeps the hold of a, so that locking a with it re-enters.
func TestIntegration_EdgeBindKeepsCtxHolds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	a, b := e.mutex(c, "/a"), e.mutex(c, "/b")
	bg := context.Background()

	ha, err := a.Lock(bg)
	require.NoError(t, err)
	defer func() { require.NoError(t, ha.Release()) }()
	hb, err := b.Lock(bg)
	require.NoError(t, err)
	defer func() { require.NoError(t, hb.Release()) }()

	bound, cancel := hb.Bind(ha.Context())
	defer cancel()
	assert.True(t, a.IsOwnedBy(bound), "bound context lost the hold of a that its parent carries")
	assert.True(t, b.IsOwnedBy(bound), "bound context carries the Hold's own hold")

	ra, err := a.TryLock(bound)
	if assert.NoError(t, err, "a TryLock with the bound context re-enters a") {
		assert.NoError(t, ra.Release())
	}
	rb, err := b.Lock(bound)
	if assert.NoError(t, err, "a Lock with the bound context re-enters b") {
		assert.NoError(t, rb.Release())
	}
}

// A MultiLock acquired with a context that already holds one of its members
// returns a context that carries the hold of every member, the re-entered
// one and those taken before it; and a nested MultiLock over a lock that an
// earlier member took re-enters it instead of waiting for itself.
func TestIntegration_EdgeMultiLockReentryKeepsMembers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bg := context.Background()

	t.Run("caller holds a member", func(t *testing.T) {
		a, b := e.mutex(c, "/a1"), e.mutex(c, "/b1")
		hb, err := b.Lock(bg)
		require.NoError(t, err)
		defer func() { require.NoError(t, hb.Release()) }()

		ml := zklock.NewMultiLock(a, b)
		mctx, err := ml.Acquire(hb.Context())
		require.NoError(t, err)
		assert.True(t, a.IsOwnedBy(mctx), "the MultiLock's context lost the hold of a, taken before b re-entered")
		assert.True(t, b.IsOwnedBy(mctx), "the MultiLock's context carries b")
		require.NoError(t, ml.Release(mctx))
	})

	t.Run("nested member re-enters an earlier one", func(t *testing.T) {
		a, b := e.mutex(c, "/a2"), e.mutex(c, "/b2")
		a2 := e.mutex(c, "/a2") // a's lock, through another Mutex
		hb, err := b.Lock(bg)
		require.NoError(t, err)
		defer func() { require.NoError(t, hb.Release()) }()

		ml := zklock.NewMultiLock(a, b, zklock.NewMultiLock(a2))
		ctx, cancel := context.WithTimeout(hb.Context(), 5*time.Second)
		defer cancel()
		mctx, err := ml.Acquire(ctx)
		require.NoError(t, err, "the nested MultiLock waited for a, which the outer one holds")
		assert.True(t, a.IsOwnedBy(mctx), "the MultiLock's context carries a")
		require.NoError(t, ml.Release(mctx))
	})
}

// Whether a lock is held in this process is a property of the lock (its
// Client and path), not of the Mutex value a hold was taken through: every
// Mutex of the same Client and path, and every side of ReadWriteLocks on
// one path, answers IsAcquiredInThisProcess alike, and a Release with the
// wrong context through another Mutex says that the lock stays held.
func TestIntegration_EdgeLiveCountPerLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m1, m2 := e.mutex(c, "/live"), e.mutex(c, "/live")

	hd, err := m1.Lock(context.Background())
	require.NoError(t, err)
	assert.True(t, m2.IsAcquiredInThisProcess(), "a hold through m1 is a hold of m2's lock")
	err = m2.Release(context.Background())
	assert.ErrorIs(t, err, zklock.ErrNotHeld)
	assert.ErrorContains(t, err, "the context given carries no hold", "the lock is held in this process: the error should say so")
	require.NoError(t, hd.Release())

	rw1, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	rw2, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	rd, err := rw1.ReadLock().Lock(context.Background())
	require.NoError(t, err)
	assert.True(t, rw2.ReadLock().IsAcquiredInThisProcess(), "a read hold through rw1 is a read hold of rw2's lock")
	assert.False(t, rw2.WriteLock().IsAcquiredInThisProcess(), "a read hold is no write hold")
	require.NoError(t, rd.Release())
}

// reap deletes, again and again until ctx ends, every empty persistent node
// at or under root, as ZooKeeper's container reaper does (only much
// faster). It returns the first error other than a lost race.
func reap(ctx context.Context, conn *zk.Conn, root string) error {
	var walk func(p string) error
	walk = func(p string) error {
		children, st, err := conn.Children(p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return err
		case st.EphemeralOwner != 0:
			return nil // a lock node, not a container
		}
		for _, ch := range children {
			if err := walk(path.Join(p, ch)); err != nil {
				return err
			}
		}
		if len(children) > 0 {
			return nil
		}
		err = conn.Delete(p, -1)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNotEmpty) {
			return nil
		}
		return err
	}
	for ctx.Err() == nil {
		if err := walk(root); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// A lock on a path whose (container) ancestors are being reaped while it
// creates them is still acquired: the reaping of an ancestor between the
// creates of two levels is not an error but something to create again.
// Mutex, Semaphore, write side of a ReadWriteLock and Election alike.
func TestIntegration_EdgeReapedAncestors(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reapRoot := e.root + "/reap"
	const reapers = 2
	ctx, stop := context.WithCancel(context.Background())
	reaped := make(chan error, reapers)
	for range reapers {
		conn := zktest.ConnectT(t, e.servers) // closed after the reaper stops
		go func() { reaped <- reap(ctx, conn, reapRoot) }()
	}
	stopped := false
	stopReapers := func() {
		if stopped {
			return
		}
		stopped = true
		stop()
		for range reapers {
			assert.NoError(t, await(t, reaped, 10*time.Second), "reaper")
		}
	}
	t.Cleanup(stopReapers)

	c := e.client()
	var failures []string
	tries := 0
	try := func(what string, lock func(context.Context) (func() error, error)) {
		tries++
		lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		release, err := lock(lctx)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", what, err))
			return
		}
		if err := release(); err != nil {
			failures = append(failures, fmt.Sprintf("%s: release: %v", what, err))
		}
	}
	for i := range 15 {
		p := fmt.Sprintf("/reap/jobs/job-%d", i)
		m := e.mutex(c, p)
		try("mutex "+p, func(ctx context.Context) (func() error, error) {
			hd, err := m.Lock(ctx)
			if err != nil {
				return nil, err
			}
			return hd.Release, nil
		})
	}
	sem, err := zklock.NewSemaphore(c, reapRoot+"/sems/sem", 2)
	require.NoError(t, err)
	try("semaphore TryAcquire", func(ctx context.Context) (func() error, error) {
		l, err := sem.TryAcquire(ctx)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	})
	sem2, err := zklock.NewSemaphore(c, reapRoot+"/sems2/sem", 2)
	require.NoError(t, err)
	try("semaphore Acquire", func(ctx context.Context) (func() error, error) {
		l, err := sem2.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	})
	rw, err := zklock.NewReadWriteLock(c, reapRoot+"/rws/rw")
	require.NoError(t, err)
	try("write lock", func(ctx context.Context) (func() error, error) {
		hd, err := rw.WriteLock().Lock(ctx)
		if err != nil {
			return nil, err
		}
		return hd.Release, nil
	})
	el, err := zklock.NewElection(c, reapRoot+"/elections/el", "me")
	require.NoError(t, err)
	try("election", func(ctx context.Context) (func() error, error) {
		hd, err := el.Campaign(ctx)
		if err != nil {
			return nil, err
		}
		return hd.Release, nil
	})
	stopReapers()
	if len(failures) > 0 {
		t.Errorf("%d of %d acquires failed while ancestors were reaped:\n%s", len(failures), tries, strings.Join(failures, "\n"))
	}
}

// Connect takes an IPv6 address in brackets with no port, the default
// port then being added, as it takes a host name with no port.
func TestEdgeConnectBracketedIPv6(t *testing.T) {
	t.Parallel()
	for _, server := range []string{"[::1]", "[::1]:2181"} {
		c, err := zklock.Connect([]string{server}, zklock.WithConnectTimeout(500*time.Millisecond))
		if err == nil {
			c.Close() // something listens there: accepted, then
			continue
		}
		assert.False(t, errors.Is(err, zklock.ErrInvalidArgument), "Connect(%q) refused the address: %v", server, err)
	}
	// Brackets hold an IPv6 address, and come in pairs.
	for _, server := range []string{"::1]", "[::1", "[abc]", "[]"} {
		_, err := zklock.Connect([]string{server}, zklock.WithConnectTimeout(500*time.Millisecond))
		assert.ErrorIs(t, err, zklock.ErrInvalidArgument, "Connect(%q)", server)
	}
}

// countingCtx counts the lookups that reach it.
type countingCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countingCtx) Value(key any) any {
	c.n.Add(1)
	return c.Context.Value(key)
}

// A lookup in a context that carries many holds costs in proportion to
// them, not to 2 to the power of their number: merging contexts (a
// MultiLock's members, Bind inside Bind) must not ask both sides of
// every merge. Counted as the lookups that reach the caller's context, for
// a lock the context does not hold (the whole chain is searched): a
// MultiLock of 20 members, one of which the caller held already, and 16
// nested Do calls on different locks.
func TestIntegration_EdgeMergedLookupsLinear(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	stranger := e.mutex(c, "/stranger")
	const members = 20
	locks := make([]zklock.Locker, members)
	for i := range locks {
		locks[i] = e.mutex(c, fmt.Sprintf("/m/%02d", i))
	}
	base := &countingCtx{Context: context.Background()}
	held, err := locks[members/2].(*zklock.Mutex).Lock(base)
	require.NoError(t, err)
	hd, err := zklock.NewMultiLock(locks...).Lock(held.Context())
	require.NoError(t, err)
	base.n.Store(0)
	require.False(t, stranger.IsOwnedBy(hd.Context()))
	assert.LessOrEqual(t, base.n.Load(), int64(4*members), "lookups that reached the caller's context for one IsOwnedBy over a %d-member MultiLock", members)
	require.NoError(t, hd.Release())
	require.NoError(t, held.Release())

	const depth = 16
	base.n.Store(0)
	var nest func(ctx context.Context, i int) error
	nest = func(ctx context.Context, i int) error {
		if i == depth {
			base.n.Store(0)
			if stranger.IsOwnedBy(ctx) {
				return errors.New("a lock not taken is owned")
			}
			return nil
		}
		return e.mutex(c, fmt.Sprintf("/nest/%02d", i)).Do(ctx, func(ctx context.Context) error { return nest(ctx, i+1) })
	}
	require.NoError(t, nest(base, 0))
	assert.LessOrEqual(t, base.n.Load(), int64(4*depth), "lookups that reached the caller's context at a depth of %d nested Do", depth)
}
