package zklock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// holderAs returns the HolderError in err, failing t if there is none.
func holderAs(t *testing.T, err error) *zklock.HolderError {
	t.Helper()
	var he *zklock.HolderError
	require.True(t, errors.As(err, &he), "no HolderError in %v", err)
	return he
}

// A foreign holder (a node another process made, here through a raw
// connection, as a Curator peer would): a busy Try and a timed-out Lock
// name it, with its data and age, and say it is not this process's.
func TestIntegration_HolderNamedWhenBusy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.create(e.root + "/job")
	node, err := e.admin.Create(e.root+"/job/_c_6d9e5c4a-27f4-4f6e-9d53-4a8d3c1b2e10-lock-", []byte("10.0.0.7"),
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	c := e.client()
	m := e.mutex(c, "/job")

	_, err = m.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	he := holderAs(t, err)
	assert.Equal(t, node, he.Node)
	assert.Equal(t, e.root+"/job", he.Path)
	assert.Equal(t, "10.0.0.7", string(he.Data))
	assert.Equal(t, e.admin.SessionID(), he.Session)
	assert.False(t, he.ThisClient || he.ThisProcess, "a foreign holder")
	assert.Contains(t, err.Error(), "held by 10.0.0.7 for ")
	assert.Contains(t, err.Error(), node)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = m.Lock(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	he = holderAs(t, err)
	assert.Equal(t, node, he.Node)
	assert.GreaterOrEqual(t, he.Held, 250*time.Millisecond, "held at least as long as the wait, give or take the clocks")
	assert.Contains(t, err.Error(), "context deadline exceeded; held by 10.0.0.7")
	waitParticipants(t, m, 1) // the timed-out waiter left no node
	require.NoError(t, e.admin.Delete(node, -1))
}

// A hold of the very Client, taken with another context and never
// released, is named as such: "a missing Release?". Another Client of the
// process is named too.
func TestIntegration_HolderInThisProcess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte("scheduler-1")))
	m := e.mutex(c, "/job")
	forgotten, err := m.Lock(context.Background())
	require.NoError(t, err)

	_, err = m.TryLock(context.Background())
	he := holderAs(t, err)
	assert.True(t, he.ThisClient)
	assert.Equal(t, forgotten.Path(), he.Node)
	assert.Contains(t, err.Error(), "held by this Client (scheduler-1) for ")
	assert.Contains(t, err.Error(), "a missing Release?")

	other := e.mutex(e.client(), "/job")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = other.Lock(ctx)
	he = holderAs(t, err)
	assert.False(t, he.ThisClient)
	assert.True(t, he.ThisProcess)
	assert.Contains(t, err.Error(), "held by another Client of this process (scheduler-1)")
	require.NoError(t, forgotten.Release())
}

// A Semaphore without a free lease names its oldest lease's holder; an
// Election whose Campaign timed out names the leader.
func TestIntegration_HolderOfLeaseAndLeadership(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte("pool-owner")))
	s, err := zklock.NewSemaphoreMutex(c, e.root+"/pool")
	require.NoError(t, err)
	h, err := s.Lock(context.Background())
	require.NoError(t, err)
	s2, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/pool")
	require.NoError(t, err)
	_, err = s2.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	he := holderAs(t, err)
	assert.Equal(t, h.Path(), he.Node)
	assert.Equal(t, "pool-owner", string(he.Data))
	require.NoError(t, h.Release())

	leader, err := zklock.NewElection(c, e.root+"/election", "node-a")
	require.NoError(t, err)
	lh, err := leader.Campaign(context.Background())
	require.NoError(t, err)
	follower, err := zklock.NewElection(e.client(), e.root+"/election", "node-b")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = follower.Campaign(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	he = holderAs(t, err)
	assert.Equal(t, "node-a", string(he.Data))
	assert.Equal(t, lh.Path(), he.Node)
	require.NoError(t, lh.Release())
}

// An acquire that fails for another reason names no one.
func TestIntegration_HolderNotNamedOtherwise(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/free")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Lock(ctx)
	require.ErrorIs(t, err, context.Canceled)
	var he *zklock.HolderError
	assert.False(t, errors.As(err, &he), "cancelled before it queued")
	require.NoError(t, c.Close())
	_, err = m.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrClosed)
	assert.False(t, errors.As(err, &he))
}

// A holder whose node data is large (here 256 KiB, within ZooKeeper's
// 1 MB) keeps all of it in HolderError.Data, while the error's text, which
// goes to logs in one line, shows a bounded prefix and the data's size.
func TestIntegration_HolderErrorTextBounded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	big := bytes.Repeat([]byte("owner-"), 256<<10/6)
	holder := e.mutex(e.client(zklock.WithNodeData(big)), "/big")
	h, err := holder.Lock(context.Background())
	require.NoError(t, err)
	defer h.Release()

	_, err = e.mutex(e.client(), "/big").TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	he := holderAs(t, err)
	assert.Equal(t, big, he.Data, "the error's field keeps every byte")
	assert.Less(t, len(err.Error()), 1024, "the text is bounded: %d bytes", len(err.Error()))
	assert.Contains(t, err.Error(), "held by another Client of this process (owner-owner-")
	assert.Contains(t, err.Error(), fmt.Sprintf("(%d bytes)", len(big)))
	assert.Contains(t, err.Error(), h.Path(), "the node is still named")

	// Binary data is quoted, and cut on a whole escape.
	bin := bytes.Repeat([]byte{0xff, 0x00}, 4096)
	he = &zklock.HolderError{Path: "/p", Node: "/p/n", Data: bin, Err: zklock.ErrLocked}
	assert.Less(t, len(he.Error()), 1024)
	assert.Contains(t, he.Error(), `"\xff\x00`)
	assert.Contains(t, he.Error(), "(8192 bytes)")

	// A long node path shows its start and its name.
	long := "/" + strings.Repeat("p", 30000) + "/_c_6d9e5c4a-27f4-4f6e-9d53-4a8d3c1b2e10-lock-0000000007"
	he = &zklock.HolderError{Path: "/p", Node: long, Data: []byte("owner"), Err: zklock.ErrLocked}
	assert.Less(t, len(he.Error()), 1024)
	assert.Contains(t, he.Error(), "-lock-0000000007 (30057 bytes)")
}

// A Semaphore with every lease out says so on a busy Try: no lease free,
// n of n held, and by whom (the oldest lease's owner); a timed-out
// Acquire says how many are held as well.
func TestIntegration_SemaphoreFullSaysNoLeaseFree(t *testing.T) {
	t.Parallel()
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(zklock.WithNodeData([]byte("payments-1"))), e.root+"/pay", 3)
	require.NoError(t, err)
	leases, err := s.AcquireN(context.Background(), 3)
	require.NoError(t, err)
	defer s.ReturnAll(leases)

	other, err := zklock.NewSemaphore(e.client(), e.root+"/pay", 3)
	require.NoError(t, err)
	_, err = other.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	he := holderAs(t, err)
	assert.Equal(t, 3, he.Leases)
	assert.Equal(t, 3, he.MaxLeases)
	assert.Contains(t, err.Error(), "no lease free: 3 of 3 held")
	assert.Contains(t, err.Error(), "the oldest by another Client of this process (payments-1)")
	assert.NotContains(t, err.Error(), "lock held by another participant")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = other.Acquire(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "context deadline exceeded; 3 of 3 leases held, the oldest by another Client of this process (payments-1)")

	// An acquirer that waits for a lease has a lease node too: it is not
	// counted as a lease out.
	waiting := make(chan error, 1)
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _, err := other.Acquire(wctx); waiting <- err }()
	waitChildren(t, e, e.root+"/pay/leases", 4)
	third, err := zklock.NewSemaphore(e.client(), e.root+"/pay", 3)
	require.NoError(t, err)
	_, err = third.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	he = holderAs(t, err)
	assert.Equal(t, 3, he.Leases, "%v", err)
	stop()
	require.ErrorIs(t, await(t, waiting, 10*time.Second), context.Canceled)
}

// A wait that a short deadline ends (100 ms, the last 50 of them left to
// the read that names the holder, which must come before the deadline)
// still names the holder, for each kind of wait: the engine's queue (a
// Mutex), a Semaphore's leases, an Election's loop; on zklock's own
// session and on a go-zookeeper connection (NewClient). It returns by its
// deadline, give or take scheduling.
func TestIntegration_HolderNamedAtShortDeadline(t *testing.T) {
	t.Parallel()
	for _, r := range offlineRecipes {
		for _, goZK := range []bool{false, true} {
			name := r.name
			if goZK {
				name += "/go-zookeeper"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				holderNamedAtShortDeadline(t, r, goZK)
			})
		}
	}
}

// holderNamedAtShortDeadline is TestIntegration_HolderNamedAtShortDeadline
// for r, its waiter on a go-zookeeper connection with goZK.
func holderNamedAtShortDeadline(t *testing.T, r offlineRecipe, goZK bool) {
	e := setup(t)
	p := e.root + "/busy"
	bg := context.Background()
	held, err := r.lock(t, e.client(zklock.WithNodeData([]byte("owner-1"))), p)(bg)
	require.NoError(t, err)
	c := e.client()
	if goZK {
		conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
		require.NoError(t, err)
		t.Cleanup(conn.Close)
		c = zklock.NewClient(conn, events)
		t.Cleanup(func() { c.Close() })
		waitState(t, c, 10*time.Second, zklock.StateConnected)
	}
	acquire := r.lock(t, c, p)
	const d = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(bg, d)
	defer cancel()
	start := time.Now()
	hd, err := acquire(ctx)
	took := time.Since(start)
	require.Nil(t, hd)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	he := holderAs(t, err)
	assert.Equal(t, held.Path(), he.Node, "%v", err)
	if r.name != "election" { // an Election's node holds its id
		assert.Equal(t, "owner-1", string(he.Data), "%v", err)
	}
	assert.GreaterOrEqual(t, he.Held, d/2, "held at least from the wait's start to its end, give or take the clocks: %v", err)
	assert.Less(t, took, d+deadlineSlack, "took %v with a deadline of %v", took, d)
	require.NoError(t, held.Release())
}

// getCounter counts the plain reads (Get) a Client sends: a read that
// names a holder is one; the engine's waits and watches use GetW and
// ExistsW.
type getCounter struct {
	zklock.ZKConn
	n atomic.Int32
}

func (g *getCounter) Get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	g.n.Add(1)
	return g.ZKConn.Get(ctx, p)
}

// An acquire with a deadline that is granted before its read of the
// holder is due (250 ms before the deadline) never sends it: neither one
// granted at once (a Mutex, a Semaphore) nor a waiter granted by a
// handoff. Reads are counted until the deadline has passed and Close has
// waited for the Client's goroutines.
func TestIntegration_HolderNotReadWhenGranted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gets := &getCounter{}
	c := e.client(zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
		gets.ZKConn = real
		return gets
	}))
	bg := context.Background()
	holder := e.mutex(e.client(), "/job")
	h, err := holder.Lock(bg)
	require.NoError(t, err)

	const d = 2 * time.Second
	start := time.Now()
	ctx, cancel := context.WithTimeout(bg, d)
	defer cancel()
	free, err := e.mutex(c, "/free").Lock(ctx)
	require.NoError(t, err)
	lease, err := e.semaphore(c, "/sem", 2).Acquire(ctx)
	require.NoError(t, err)
	waiting := acquireAsync(ctx, e.mutex(c, "/job"))
	waitParticipants(t, holder, 2)
	require.NoError(t, h.Release())
	waiter := await(t, waiting, 10*time.Second)
	require.NoError(t, waiter.err)
	require.Less(t, waiter.at.Sub(start), d/2, "granted long before the read was due")

	waitDone(t, ctx, 2*d) // past the time the read was due
	require.NoError(t, free.Release())
	require.NoError(t, lease.Release())
	require.NoError(t, e.mutex(c, "/job").Release(waiter.ctx))
	require.NoError(t, c.Close())
	assert.Zero(t, gets.n.Load(), "reads of a holder by acquires that were granted")
}
