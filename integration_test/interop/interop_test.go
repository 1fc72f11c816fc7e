package interop_test

import (
	"context"
	"errors"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/integration_test/interop"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zktest"
)

// TestMain uses zktest's default backends: ZK_SERVERS if set, else a
// local ZooKeeper JVM from Debian's zookeeper jar. (Curator's Debian
// package depends on libzookeeper-java, so a machine that can run the peer
// can run that server too; the container backend is exercised by
// containerzk.)
func TestMain(m *testing.M) { leakcheck.Main(m) }

// Waits of the tests.
const (
	holdTimeout  = 30 * time.Second       // any acquisition that must succeed
	shortTimeout = 300 * time.Millisecond // an acquisition that must time out
	settle       = 300 * time.Millisecond // how long a waiter is watched to stay waiting
	eventTimeout = 10 * time.Second       // a revocation reaching its holder
	cleanTimeout = 10 * time.Second       // lock nodes disappearing after release
)

// protectedLockName is a Curator protected mutex node name:
// _c_<uuid>-lock-<seq10>.
var protectedLockName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

// env is one test's world: the shared ZooKeeper, a zklock client, a
// peer (Java Curator, or Python kazoo), and a plain connection to look at
// the tree.
type env struct {
	peer    *interop.Peer      // set by setup
	kazoo   *interop.KazooPeer // set by kazooSetup
	client  *zklock.Client
	conn    *zk.Conn
	servers []string
	root    string // the test's own subtree
	path    string // the lock path, under root
}

// setup is newEnv with a Curator peer.
func setup(t *testing.T) *env {
	t.Helper()
	interop.RequirePeer(t) // before starting ZooKeeper for nothing
	e := newEnv(t)
	e.peer = interop.StartPeer(t, e.servers)
	return e
}

// newEnv connects to the shared ZooKeeper, and empties the test's subtree
// now and when the test ends.
func newEnv(t *testing.T) *env {
	t.Helper()
	servers := zktest.Shared(t).Servers()
	e := &env{
		conn:    zktest.ConnectT(t, servers),
		servers: servers,
		root:    "/interop/" + t.Name(),
	}
	e.path = e.root + "/lock"
	require.NoError(t, zktest.DeleteTree(e.conn, e.root))
	t.Cleanup(func() {
		if err := zktest.DeleteTree(e.conn, e.root); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	client, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
	require.NoError(t, err)
	e.client = client
	t.Cleanup(func() { assert.NoError(t, client.Close()) })
	return e
}

func (e *env) mutex(t *testing.T) *zklock.Mutex {
	t.Helper()
	m, err := zklock.NewMutex(e.client, e.path)
	require.NoError(t, err)
	return m
}

// participants is zklock's view of the queue on the lock path.
func participants(t *testing.T, m *zklock.Mutex) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := m.Participants(ctx)
	require.NoError(t, err)
	return p
}

// waitQueueLen waits until zklock sees n participants, and returns them.
func waitQueueLen(t *testing.T, m *zklock.Mutex, n int) []string {
	t.Helper()
	deadline := time.Now().Add(holdTimeout)
	for {
		p := participants(t, m)
		if len(p) == n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue on %s: want %d participants, have %v", m.Path(), n, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goAcquire is a zklock Acquire running on its own goroutine.
type goAcquire struct {
	done chan struct{}
	hold context.Context // the hold; valid after done if err is nil
	err  error
}

func startGoAcquire(m *zklock.Mutex, timeout time.Duration) *goAcquire {
	a := &goAcquire{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		a.hold, a.err = m.Acquire(ctx)
	}()
	return a
}

func (a *goAcquire) finished() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// wait waits for the acquisition and requires that it succeeded.
func (a *goAcquire) wait(t *testing.T) context.Context {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatalf("zklock Acquire did not return")
	}
	require.NoError(t, a.err)
	return a.hold
}

func release(t *testing.T, m *zklock.Mutex, hold context.Context) {
	t.Helper()
	require.NoError(t, m.Release(hold))
}

// A Curator InterProcessMutex holds the lock: zklock's TryAcquire is
// refused and leaves no node, zklock's Acquire waits for Curator's release;
// then Curator cannot have it until zklock releases.
func TestIntegration_MutexCuratorHoldsZklockWaits(t *testing.T) {
	e := setup(t)
	p := e.peer
	p.NewMutex("j", e.path)
	require.True(t, p.Acquire("j", holdTimeout))
	javaNode := p.LockPath("j")
	require.Equal(t, e.path, path.Dir(javaNode))
	require.Regexp(t, protectedLockName, path.Base(javaNode))

	m := e.mutex(t)
	_, err := m.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	require.Equal(t, []string{javaNode}, p.Participants("j"), "TryAcquire left a node behind")
	// The error names the Curator holder: its node, and its data, which
	// Curator sets to the host's address.
	var he *zklock.HolderError
	require.True(t, errors.As(err, &he), "%v", err)
	require.Equal(t, javaNode, he.Node)
	require.NotEmpty(t, he.Data, "Curator's default node data")
	require.False(t, he.ThisClient || he.ThisProcess)
	require.Contains(t, err.Error(), "held by "+string(he.Data))

	a := startGoAcquire(m, holdTimeout)
	queue := waitQueueLen(t, m, 2)
	require.Equal(t, javaNode, queue[0])
	goNode := queue[1]
	require.Equal(t, queue, p.Participants("j"))
	time.Sleep(settle)
	require.False(t, a.finished(), "zklock acquired while Curator holds the lock")

	p.Release("j")
	hold := a.wait(t)
	require.Equal(t, goNode, m.LockPath(hold))

	require.False(t, p.Acquire("j", shortTimeout), "Curator acquired while zklock holds the lock")
	require.Equal(t, []string{goNode}, p.Participants("j"), "Curator's timed-out acquire left a node behind")

	release(t, m, hold)
	require.True(t, p.Acquire("j", holdTimeout))
	p.Release("j")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A Curator InterProcessMutex holds the lock: zklock's Lock with a 300 ms
// deadline times out, leaves no node, and its error names the Curator
// holder, its node and its data (the host's address, Curator's default),
// as a busy TryAcquire's does.
func TestIntegration_MutexTimedOutLockNamesCuratorHolder(t *testing.T) {
	e := setup(t)
	p := e.peer
	p.NewMutex("j", e.path)
	require.True(t, p.Acquire("j", holdTimeout))
	javaNode := p.LockPath("j")
	javaData, _, err := e.conn.Get(javaNode)
	require.NoError(t, err)
	require.NotEmpty(t, javaData, "Curator's default node data")

	ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
	defer cancel()
	_, err = e.mutex(t).Lock(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var he *zklock.HolderError
	require.True(t, errors.As(err, &he), "%v", err)
	require.Equal(t, javaNode, he.Node)
	require.Equal(t, javaData, he.Data)
	require.ErrorIs(t, he.Err, context.DeadlineExceeded)
	require.False(t, he.ThisClient || he.ThisProcess)
	require.Contains(t, err.Error(), "held by "+string(javaData))
	// The timed-out Lock's delete is queued before it returns, not
	// awaited: another session's read may come first.
	require.Eventually(t, func() bool { return slices.Equal([]string{javaNode}, p.Participants("j")) },
		cleanTimeout, 10*time.Millisecond, "the timed-out Lock left a node behind")

	p.Release("j")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// zklock holds the lock: Curator's timed acquire fails; Curator then
// queues, a second zklock participant queues behind it, and the lock goes
// first come, first served across the two libraries.
func TestIntegration_MutexZklockHoldsCuratorWaitsFIFO(t *testing.T) {
	e := setup(t)
	p := e.peer
	g1, g2 := e.mutex(t), e.mutex(t)
	h1, err := g1.Acquire(context.Background())
	require.NoError(t, err)
	g1Node := g1.LockPath(h1)

	p.NewMutex("j", e.path)
	require.False(t, p.Acquire("j", shortTimeout), "Curator acquired while zklock holds the lock")
	require.Equal(t, []string{g1Node}, participants(t, g1), "Curator's timed-out acquire left a node behind")

	j := p.StartAcquire("j", holdTimeout)
	queue := waitQueueLen(t, g1, 2)
	require.Equal(t, g1Node, queue[0])
	javaNode := queue[1]

	a2 := startGoAcquire(g2, holdTimeout)
	queue = waitQueueLen(t, g1, 3)
	require.Equal(t, []string{g1Node, javaNode}, queue[:2])
	g2Node := queue[2]
	require.Equal(t, queue, p.Participants("j"))

	time.Sleep(settle)
	require.False(t, j.Done(), "Curator acquired while zklock holds the lock")
	require.False(t, a2.finished(), "second zklock participant acquired while the first holds the lock")

	release(t, g1, h1)
	require.True(t, j.Wait(), "Curator, first in the queue, did not get the lock")
	require.Equal(t, javaNode, p.LockPath("j"))
	time.Sleep(settle)
	require.False(t, a2.finished(), "second zklock participant overtook Curator")
	require.Equal(t, []string{javaNode, g2Node}, participants(t, g2))

	p.Release("j")
	h2 := a2.wait(t)
	require.Equal(t, g2Node, g2.LockPath(h2))
	release(t, g2, h2)
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// zklock's node names are Curator protected names, and on a queue mixing
// both libraries zklock's Participants order is Curator's
// getParticipantNodes order (by sequence, not by name).
func TestIntegration_MutexNodeNamesAndOrder(t *testing.T) {
	e := setup(t)
	p := e.peer
	require.False(t, p.IsProtected("lock-0000000001"), "isprotected does not discriminate")

	g := []*zklock.Mutex{e.mutex(t), e.mutex(t), e.mutex(t)}
	h0, err := g[0].Acquire(context.Background())
	require.NoError(t, err)
	order := []string{g[0].LockPath(h0)} // nodes, in the order they were queued

	// Queue alternately: Curator j1, zklock g1, Curator j2, zklock g2.
	p.NewMutex("j1", e.path)
	p.NewMutex("j2", e.path)
	j1 := p.StartAcquire("j1", holdTimeout)
	order = append(order, waitQueueLen(t, g[0], 2)[1])
	a1 := startGoAcquire(g[1], holdTimeout)
	order = append(order, waitQueueLen(t, g[0], 3)[2])
	j2 := p.StartAcquire("j2", holdTimeout)
	order = append(order, waitQueueLen(t, g[0], 4)[3])
	a2 := startGoAcquire(g[2], holdTimeout)
	order = append(order, waitQueueLen(t, g[0], 5)[4])

	goView := participants(t, g[0])
	javaView := p.Participants("j1")
	require.Equal(t, order, goView, "zklock's Participants is not in queue order")
	require.Equal(t, javaView, goView, "zklock and Curator order the queue differently")

	var lastSeq string
	for i, node := range goView {
		name := path.Base(node)
		who := map[bool]string{true: "zklock", false: "Curator"}[i%2 == 0]
		assert.Regexp(t, protectedLockName, name, "%s node", who)
		assert.True(t, p.IsProtected(name), "Curator's ProtectedUtils.isProtectedZNode(%q) is false (%s node)", name, who)
		seq := name[len(name)-10:]
		assert.Less(t, lastSeq, seq, "queue not in sequence order")
		lastSeq = seq
		data, _, err := e.conn.Get(node)
		require.NoError(t, err)
		t.Logf("%-7s node %s data %q", who, name, data)
	}

	// Unwind: each release hands the lock to the next in the queue,
	// whichever library it belongs to.
	release(t, g[0], h0)
	require.True(t, j1.Wait())
	time.Sleep(settle)
	require.False(t, a1.finished())
	require.False(t, j2.Done())
	require.Equal(t, order[1:], participants(t, g[0]))
	require.Equal(t, order[1:], p.Participants("j2"))

	p.Release("j1")
	h1 := a1.wait(t)
	time.Sleep(settle)
	require.False(t, j2.Done())
	release(t, g[1], h1)
	require.True(t, j2.Wait())
	time.Sleep(settle)
	require.False(t, a2.finished())
	p.Release("j2")
	h2 := a2.wait(t)
	require.Equal(t, order[4], g[2].LockPath(h2))
	release(t, g[2], h2)
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// Curator's Revoker reaches a zklock holder that called MakeRevocable.
func TestIntegration_RevokeFromCuratorToZklock(t *testing.T) {
	e := setup(t)
	p := e.peer
	m := e.mutex(t)
	revoked := make(chan *zklock.Mutex, 4)
	m.MakeRevocable(func(m *zklock.Mutex) { revoked <- m })
	hold, err := m.Acquire(context.Background())
	require.NoError(t, err)
	node := m.LockPath(hold)
	data, _, err := e.conn.Get(node)
	require.NoError(t, err)
	t.Logf("zklock revocable node data %q (Curator writes none into its revocable nodes)", data)

	p.NewMutex("j", e.path)
	j := p.StartAcquire("j", holdTimeout)
	waitQueueLen(t, m, 2)

	p.Revoke(node)
	select {
	case got := <-revoked:
		require.Same(t, m, got)
	case <-time.After(eventTimeout):
		t.Fatalf("Curator's Revoker.attemptRevoke(%s) did not reach zklock's revocation callback", node)
	}
	data, _, err = e.conn.Get(node)
	require.NoError(t, err)
	require.Equal(t, "__REVOKE__", string(data))
	require.NoError(t, hold.Err(), "revocation is cooperative: the hold stands until released")

	release(t, m, hold) // what a revocation callback is expected to do
	require.True(t, j.Wait(), "Curator did not get the lock after the revoked holder released it")
	p.Release("j")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// zklock's Revoke reaches a Curator holder made revocable.
func TestIntegration_RevokeFromZklockToCurator(t *testing.T) {
	e := setup(t)
	p := e.peer
	p.NewMutex("j", e.path)
	p.MakeRevocable("j")
	require.True(t, p.Acquire("j", holdTimeout))
	javaNode := p.LockPath("j")
	data, _, err := e.conn.Get(javaNode)
	require.NoError(t, err)
	require.Empty(t, data, "Curator writes no data into a revocable lock node")

	m := e.mutex(t)
	_, err = m.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	a := startGoAcquire(m, holdTimeout)
	waitQueueLen(t, m, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, zklock.Revoke(ctx, e.client, javaNode))
	p.WaitEvent("revoked j", eventTimeout)
	require.False(t, a.finished(), "revocation is cooperative: Curator holds until it releases")

	p.Release("j")
	hold := a.wait(t)
	release(t, m, hold)
	// Revoking a node that is gone is not an error, in either library.
	require.NoError(t, zklock.Revoke(ctx, e.client, javaNode))
	p.Revoke(javaNode)
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A zklock ReadWriteLock and a Curator InterProcessReadWriteLock on one
// path: readers share across the libraries, writers exclude.
func TestIntegration_ReadWriteLock(t *testing.T) {
	e := setup(t)
	p := e.peer
	rw, err := zklock.NewReadWriteLock(e.client, e.path)
	require.NoError(t, err)
	p.NewReadWriteLock("r", e.path) // reader, then writer
	p.NewReadWriteLock("w", e.path) // writer only
	bg := context.Background()

	// Curator writes: zklock can neither read nor write.
	require.True(t, p.Write("w", holdTimeout))
	writeNode := p.LockPath("w.write")
	assert.Contains(t, path.Base(writeNode), "-__WRIT__")
	assert.True(t, p.IsProtected(path.Base(writeNode)))
	_, err = rw.ReadLock().TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	_, err = rw.WriteLock().TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	p.Unwrite("w")

	// zklock reads: Curator reads too, but cannot write.
	rh, err := rw.ReadLock().Acquire(bg)
	require.NoError(t, err)
	readNode := rw.ReadLock().LockPath(rh)
	assert.Contains(t, path.Base(readNode), "-__READ__")
	assert.True(t, p.IsProtected(path.Base(readNode)))
	require.True(t, p.Read("r", holdTimeout), "Curator reader refused while only a zklock reader holds")
	require.False(t, p.Write("w", shortTimeout), "Curator writer admitted while readers hold")
	goReaders, err := rw.ReadLock().Participants(bg)
	require.NoError(t, err)
	require.Len(t, goReaders, 2)
	require.Equal(t, goReaders, p.Participants("r.read"))
	p.Unread("r")
	require.NoError(t, rw.ReadLock().Release(rh))

	// zklock writes: Curator can neither read nor write; a queued Curator
	// reader gets in once zklock releases.
	wh, err := rw.WriteLock().Acquire(bg)
	require.NoError(t, err)
	require.False(t, p.Read("r", shortTimeout), "Curator reader admitted while a zklock writer holds")
	require.False(t, p.Write("w", shortTimeout), "Curator writer admitted while a zklock writer holds")
	r := p.StartRead("r", holdTimeout)
	time.Sleep(settle)
	require.False(t, r.Done())
	require.NoError(t, rw.WriteLock().Release(wh))
	require.True(t, r.Wait())
	p.Unread("r")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// The peer's semaphore commands work, and Curator's InterProcessSemaphoreV2
// and InterProcessSemaphoreMutex lay out their nodes as zklock's Semaphore
// must: P/locks (the internal mutex) and P/leases/_c_<uuid>-lease-<seq10>.
func TestIntegration_CuratorSemaphoreLayout(t *testing.T) {
	e := setup(t)
	p := e.peer
	leaseName := regexp.MustCompile(`^_c_[0-9a-f-]{36}-lease-[0-9]{10}$`)

	for _, id := range []string{"s1", "s2", "s3"} {
		p.NewSemaphore(id, e.path, 2)
	}
	l1 := p.Lease("s1", holdTimeout)
	l2 := p.Lease("s2", holdTimeout)
	require.Empty(t, p.Lease("s3", shortTimeout), "a third lease of 2 was granted")
	require.Regexp(t, leaseName, l1)
	require.Regexp(t, leaseName, l2)
	assert.True(t, p.IsProtected(l1))
	leases, _, err := e.conn.Children(e.path + "/leases")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{l1, l2}, leases)
	require.ElementsMatch(t, leases, p.SemaphoreParticipants("s1"))
	locks, _, err := e.conn.Children(e.path + "/locks")
	require.NoError(t, err)
	require.Empty(t, locks, "the internal mutex is held only while acquiring")
	p.ReturnLease("s1", l1)
	l3 := p.Lease("s3", holdTimeout)
	require.NotEmpty(t, l3)
	p.ReturnLease("s2", l2)
	p.ReturnLease("s3", l3)

	smPath := e.root + "/semmutex"
	p.NewSemaphoreMutex("m1", smPath)
	p.NewSemaphoreMutex("m2", smPath)
	require.True(t, p.Acquire("m1", holdTimeout))
	require.False(t, p.Acquire("m2", shortTimeout))
	held := p.Participants("m1")
	require.Len(t, held, 1)
	require.Regexp(t, leaseName, held[0])
	p.Release("m1")
	require.True(t, p.Acquire("m2", holdTimeout))
	p.Release("m2")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A zklock Semaphore and a Curator InterProcessSemaphoreV2 on one path
// share its leases: together they never hold more than maxLeases, and a
// lease returned by one library lets a waiter of the other in.
func TestIntegration_Semaphore(t *testing.T) {
	e := setup(t)
	p := e.peer
	leaseName := regexp.MustCompile(`^_c_[0-9a-f-]{36}-lease-[0-9]{10}$`)
	s, err := zklock.NewSemaphore(e.client, e.path, 2)
	require.NoError(t, err)
	for _, id := range []string{"j1", "j2"} {
		p.NewSemaphore(id, e.path, 2)
	}
	bg := context.Background()

	jl1 := p.Lease("j1", holdTimeout)
	require.NotEmpty(t, jl1)
	gl1, err := s.Acquire(bg)
	require.NoError(t, err)
	assert.Regexp(t, leaseName, gl1.Node())
	assert.True(t, p.IsProtected(gl1.Node()), "Curator's isProtectedZNode(%q)", gl1.Node())
	assert.Equal(t, e.path+"/leases/"+gl1.Node(), gl1.Path())

	// Full: neither library gets a third lease.
	require.Empty(t, p.Lease("j2", shortTimeout), "Curator got a third lease of 2")
	ctx, cancel := context.WithTimeout(bg, shortTimeout)
	_, err = s.Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "zklock got a third lease of 2")
	goView, err := s.Participants(bg)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{jl1, gl1.Node()}, goView)
	require.ElementsMatch(t, goView, p.SemaphoreParticipants("j1"))

	// zklock returns its lease: the waiting Curator acquirer gets one.
	j2 := p.StartLease("j2", holdTimeout)
	time.Sleep(settle)
	require.False(t, j2.Done(), "Curator got a lease while both are taken")
	require.NoError(t, gl1.Release())
	jl2 := j2.Wait()
	require.NotEmpty(t, jl2, "Curator waiter not let in when zklock returned its lease")

	// Curator returns a lease: a waiting zklock acquirer gets one.
	got := make(chan error, 1)
	var gl2 *zklock.Lease
	go func() {
		ctx, cancel := context.WithTimeout(bg, holdTimeout)
		defer cancel()
		var err error
		gl2, err = s.Acquire(ctx)
		got <- err
	}()
	time.Sleep(settle)
	select {
	case err := <-got:
		t.Fatalf("zklock Acquire returned (%v) while both leases are taken", err)
	default:
	}
	p.ReturnLease("j1", jl1)
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatal("zklock waiter not let in when Curator returned its lease")
	}
	require.NoError(t, gl2.Release())
	p.ReturnLease("j2", jl2)
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A zklock SemaphoreMutex and a Curator InterProcessSemaphoreMutex on one
// path exclude each other.
func TestIntegration_SemaphoreMutex(t *testing.T) {
	e := setup(t)
	p := e.peer
	m, err := zklock.NewSemaphoreMutex(e.client, e.path)
	require.NoError(t, err)
	p.NewSemaphoreMutex("j", e.path)
	bg := context.Background()

	require.True(t, p.Acquire("j", holdTimeout))
	_, err = m.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	type result struct {
		hold context.Context
		err  error
	}
	got := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, holdTimeout)
		defer cancel()
		h, err := m.Acquire(ctx)
		got <- result{h, err}
	}()
	time.Sleep(settle)
	select {
	case r := <-got:
		t.Fatalf("zklock Acquire returned (%v) while Curator holds the lock", r.err)
	default:
	}
	p.Release("j")
	var r result
	select {
	case r = <-got:
		require.NoError(t, r.err)
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatal("zklock waiter not let in when Curator released")
	}
	require.False(t, p.Acquire("j", shortTimeout), "Curator acquired while zklock holds the lock")
	require.NoError(t, m.Release(r.hold))
	require.True(t, p.Acquire("j", holdTimeout))
	p.Release("j")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// The peer answers errors as errors, and keeps going.
func TestIntegration_PeerErrors(t *testing.T) {
	e := setup(t)
	p := e.peer
	_, err := p.Send(interop.ReplyTimeout, "acquire", "nosuch", "10").Result()
	require.Error(t, err)
	require.Contains(t, err.Error(), "no such id")
	p.NewMutex("j", e.path)
	_, err = p.Send(interop.ReplyTimeout, "release", "j").Result()
	require.Error(t, err, "Curator let a non-owner release")
	require.True(t, strings.Contains(err.Error(), "IllegalMonitorStateException"), "%v", err)
	_, err = p.Send(interop.ReplyTimeout, "frobnicate").Result()
	require.ErrorContains(t, err, "unknown command")
	t.Logf("an unknown command, as reported: %v", err)
	require.Equal(t, "pong", p.Do("ping"))
}
