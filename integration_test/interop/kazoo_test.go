package interop_test

import (
	"context"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/integration_test/interop"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// The kazoo peer alone: two kazoo processes on one path exclude each
// other, in each recipe. These prove the harness (kazoo_peer.py and
// kazoo.go): the Go-versus-kazoo tests rely on it.

// Waits of the kazoo tests, beside interop_test.go's.
const (
	// runTimeout bounds a kazoo election's run: from StartRun to its end.
	runTimeout = 2 * time.Minute
	// shortSession is the session timeout of a kazoo peer that a test
	// kills: its nodes go that long after the kill.
	shortSession = 2 * time.Second
)

var (
	// kazooLockName is a kazoo 2.8 Lock, WriteLock or Election node:
	// uuid4().hex, "__lock__", ZooKeeper's 10-digit sequence.
	kazooLockName = regexp.MustCompile(`^[0-9a-f]{32}__lock__[0-9]{10}$`)
	// kazooReadName is a kazoo 2.8 ReadLock node.
	kazooReadName = regexp.MustCompile(`^[0-9a-f]{32}__rlock__[0-9]{10}$`)
	// kazooLeaseName is a kazoo 2.8 Semaphore lease: uuid4().hex alone.
	kazooLeaseName = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// kazooSetup is newEnv with a kazoo peer.
func kazooSetup(t *testing.T, opts ...interop.KazooOption) *env {
	t.Helper()
	interop.RequireKazoo(t) // before starting ZooKeeper for nothing
	e := newEnv(t)
	e.kazoo = interop.StartKazooPeer(t, e.servers, opts...)
	return e
}

// waitContenders waits until kazoo's contenders() of id is want.
func waitContenders(t *testing.T, k *interop.KazooPeer, id string, want ...string) {
	t.Helper()
	var have []string
	deadline := time.Now().Add(holdTimeout)
	for {
		if have = k.Contenders(id); slices.Equal(have, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kazoo contenders of %s: want %q, have %q", id, want, have)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two kazoo processes, one Lock path: the second's timed acquire fails
// and leaves no node, its waiting acquire queues behind the holder and
// gets the lock at its release; contenders() lists both in queue order.
func TestIntegration_KazooPeerLocksExclude(t *testing.T) {
	e := kazooSetup(t)
	k1, k2 := e.kazoo, interop.StartKazooPeer(t, e.servers)
	k1.NewLock("a", e.path, "py-1")
	k2.NewLock("b", e.path, "py-2")

	require.True(t, k1.Acquire("a", holdTimeout))
	n1 := k1.Node("a")
	require.Regexp(t, kazooLockName, n1)
	data, _, err := e.conn.Get(e.path + "/" + n1)
	require.NoError(t, err)
	require.Equal(t, "py-1", string(data), "kazoo's node data is its identifier")
	require.False(t, k2.Acquire("b", shortTimeout), "a second kazoo process acquired a held Lock")
	require.Equal(t, []string{n1}, k2.Children(e.path), "kazoo's timed-out acquire left a node")

	b := k2.StartAcquire("b", holdTimeout)
	waitContenders(t, k1, "a", "py-1", "py-2")
	time.Sleep(settle)
	require.False(t, b.Done(), "kazoo acquired while another kazoo process holds")
	k1.Release("a")
	require.True(t, b.Wait())
	require.Equal(t, []string{"py-2"}, k1.Contenders("a"))
	k2.Release("b")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// The peer's cancel, session expiry and SIGKILL: a cancelled waiter
// returns ErrCancelled and kazoo deletes its node; a holder whose session
// expires or whose process is killed loses its node (the kill's when its
// session times out), and the waiter behind it gets the lock.
func TestIntegration_KazooPeerCancelExpireKill(t *testing.T) {
	e := kazooSetup(t)
	k1, k2 := e.kazoo, interop.StartKazooPeer(t, e.servers, interop.WithKazooSessionTimeout(shortSession))
	k1.NewLock("a", e.path, "py-1")
	k2.NewLock("b", e.path, "py-2")
	require.True(t, k1.Acquire("a", holdTimeout))

	b := k2.StartAcquire("b", holdTimeout)
	waitContenders(t, k1, "a", "py-1", "py-2")
	k2.Cancel("b")
	_, err := b.Result()
	require.ErrorIs(t, err, interop.ErrCancelled)
	require.Equal(t, []string{k1.Node("a")}, k1.Children(e.path), "the cancelled acquire left its node")

	b = k2.StartAcquire("b", holdTimeout)
	waitContenders(t, k1, "a", "py-1", "py-2")
	k1.ExpireSession()
	k1.WaitEvent("state LOST", eventTimeout)
	require.True(t, b.Wait(), "the waiter did not get the lock when the holder's session expired")

	k1.NewLock("a2", e.path, "py-1-again") // a's kazoo Lock still thinks it holds
	a2 := k1.StartAcquire("a2", holdTimeout)
	waitContenders(t, k1, "a2", "py-2", "py-1-again")
	killed := time.Now()
	k2.Kill()
	require.True(t, a2.Wait(), "the waiter did not get the lock when the killed holder's session ended")
	t.Logf("granted %v after the kill (session timeout %v)", time.Since(killed).Round(time.Millisecond), shortSession)
	k1.Release("a2")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazoo's ReadLock and WriteLock: readers share, a writer waits for them,
// and readers wait for the writer.
func TestIntegration_KazooPeerReadWriteLock(t *testing.T) {
	e := kazooSetup(t)
	k1, k2 := e.kazoo, interop.StartKazooPeer(t, e.servers)
	k1.NewReadLock("r1", e.path, "py-r1")
	k2.NewReadLock("r2", e.path, "py-r2")
	k2.NewWriteLock("w", e.path, "py-w")

	require.True(t, k1.Acquire("r1", holdTimeout))
	require.Regexp(t, kazooReadName, k1.Node("r1"))
	require.True(t, k2.Acquire("r2", holdTimeout), "kazoo readers do not share")
	require.False(t, k2.Acquire("w", shortTimeout), "a kazoo writer acquired beside readers")
	w := k2.StartAcquire("w", holdTimeout)
	waitContenders(t, k1, "r1", "py-r1", "py-r2", "py-w")
	k1.Release("r1")
	time.Sleep(settle)
	require.False(t, w.Done(), "the kazoo writer acquired beside a reader")
	k2.Release("r2")
	require.True(t, w.Wait())
	require.Regexp(t, kazooLockName, k2.Node("w"))
	require.False(t, k1.Acquire("r1", shortTimeout), "a kazoo reader acquired beside a writer")
	k2.Release("w")
	require.True(t, k1.Acquire("r1", holdTimeout))
	k1.Release("r1")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazoo's Semaphore: its layout (leases "<uuid hex>" under the path, whose
// data is max_leases; its lock at "<path>-__lock__"), no more than
// max_leases holders, a returned lease letting a waiter in, and the
// max_leases check.
func TestIntegration_KazooPeerSemaphore(t *testing.T) {
	e := kazooSetup(t)
	k1, k2 := e.kazoo, interop.StartKazooPeer(t, e.servers)
	k1.NewSemaphore("s1", e.path, 2, "py-1")
	k2.NewSemaphore("s2", e.path, 2, "py-2")
	k2.NewSemaphore("s3", e.path, 2, "py-3")
	k1.NewSemaphore("s4", e.path, 3, "py-4")

	require.True(t, k1.Acquire("s1", holdTimeout))
	require.True(t, k2.Acquire("s2", holdTimeout))
	require.Regexp(t, kazooLeaseName, k1.Node("s1"))
	pool, _, err := e.conn.Get(e.path)
	require.NoError(t, err)
	require.Equal(t, "2", string(pool), "the pool node's data is max_leases")
	require.ElementsMatch(t, []string{k1.Node("s1"), k2.Node("s2")}, k1.Children(e.path))
	require.Empty(t, k1.Children(e.path+"-__lock__"), "the semaphore's lock is held only while acquiring")
	require.ElementsMatch(t, []string{"py-1", "py-2"}, k1.LeaseHolders("s1"))

	require.False(t, k2.Acquire("s3", shortTimeout), "a third lease of 2")
	_, err = k1.StartAcquire("s4", holdTimeout).Result()
	require.ErrorContains(t, err, "Inconsistent max leases", "kazoo took a lease with another max_leases")

	s3 := k2.StartAcquire("s3", holdTimeout)
	time.Sleep(settle)
	require.False(t, s3.Done())
	k1.Release("s1")
	require.True(t, s3.Wait(), "a returned lease did not let the waiter in")
	require.ElementsMatch(t, []string{"py-2", "py-3"}, k1.LeaseHolders("s1"))
	k2.Release("s2")
	k2.Release("s3")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazoo's Election: the first to run leads until it resigns, the next
// then leads; contenders() lists both in order; a cancelled contender
// leaves the election without leading.
func TestIntegration_KazooPeerElection(t *testing.T) {
	e := kazooSetup(t)
	k1, k2 := e.kazoo, interop.StartKazooPeer(t, e.servers)
	k1.NewElection("e1", e.path, "py-1")
	k2.NewElection("e2", e.path, "py-2")

	r1 := k1.StartRun("e1", runTimeout)
	k1.WaitEvent("leading e1", eventTimeout)
	require.Regexp(t, kazooLockName, k1.Node("e1"))
	r2 := k2.StartRun("e2", runTimeout)
	waitContenders(t, k1, "e1", "py-1", "py-2")
	time.Sleep(settle)
	require.False(t, k2.Leading("e2"), "two kazoo leaders")

	k1.Resign("e1")
	k1.WaitEvent("resigned e1", eventTimeout)
	require.True(t, r1.Wait(), "e1 led")
	k2.WaitEvent("leading e2", eventTimeout)

	r1 = k1.StartRun("e1", runTimeout)
	waitContenders(t, k2, "e2", "py-2", "py-1")
	k1.Cancel("e1")
	require.False(t, r1.Wait(), "a cancelled contender led")
	waitContenders(t, k2, "e2", "py-2")
	k2.Resign("e2")
	require.True(t, r2.Wait())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// The kazoo peer answers errors as errors, and keeps going.
func TestIntegration_KazooPeerErrors(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	_, err := k.Send(interop.ReplyTimeout, "acquire", "nosuch", "10").Result()
	require.ErrorContains(t, err, "no such id")
	k.NewLock("a", e.path, "py")
	_, err = k.Send(interop.ReplyTimeout, "release", "a").Result()
	require.ErrorContains(t, err, "not acquired")
	_, err = k.Send(interop.ReplyTimeout, "frobnicate").Result()
	require.ErrorContains(t, err, "unknown command")
	_, err = k.Send(interop.ReplyTimeout, "resign", "a").Result()
	require.ErrorContains(t, err, "not a Elected", "resign of a Lock")
	assert.Equal(t, "pong", k.Do("ping"))
	assert.Equal(t, "CONNECTED", k.State())
	assert.Contains(t, k.Versions, "kazoo=")
}

// ---- zklock and kazoo on one path

// kazooMutex is a zklock Mutex in kazoo's layout on e.path, with data as
// its nodes' data (kazoo's contenders() lists it).
func kazooMutex(t *testing.T, e *env, data string) *zklock.Mutex {
	t.Helper()
	m, err := zklock.NewMutex(e.client, e.path, zklock.WithLayout(zklock.LayoutKazoo), zklock.WithLockData([]byte(data)))
	require.NoError(t, err)
	return m
}

// bounded returns a context for a zklock acquire that must succeed: it
// ends after holdTimeout, so that a broken lock fails the test rather
// than hang it (a hold outlives it).
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), holdTimeout)
	t.Cleanup(cancel)
	return ctx
}

// goLock is a zklock acquire (Lock, Campaign, ...) running on its own
// goroutine, bounded by its context's timeout.
type goLock struct {
	done chan struct{}
	hold *zklock.Hold // valid after done if err is nil
	err  error
}

func startGoLock(lock func(context.Context) (*zklock.Hold, error), timeout time.Duration) *goLock {
	g := &goLock{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		g.hold, g.err = lock(ctx)
	}()
	return g
}

func (g *goLock) finished() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// wait waits for the acquire and requires that it succeeded.
func (g *goLock) wait(t *testing.T) *zklock.Hold {
	t.Helper()
	select {
	case <-g.done:
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatalf("zklock acquire did not return")
	}
	require.NoError(t, g.err)
	return g.hold
}

// waitChildren waits until p has n children, and returns them.
func waitChildren(t *testing.T, e *env, p string, n int) []string {
	t.Helper()
	var children []string
	deadline := time.Now().Add(holdTimeout)
	for {
		var err error
		if children, _, err = e.conn.Children(p); err == nil && len(children) == n {
			return children
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: want %d children, have %v (%v)", p, n, children, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A kazoo Lock holds: a zklock Mutex in kazoo's layout is refused by
// TryLock (naming the kazoo holder, leaving no node), waits in Lock
// behind the kazoo node, as kazoo's contenders() shows, and gets the lock
// when kazoo releases; kazoo then cannot have it until zklock releases.
func TestIntegration_KazooMutexKazooHoldsGoWaits(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	k.NewLock("k", e.path, "py-1")
	require.True(t, k.Acquire("k", holdTimeout))
	kNode := e.path + "/" + k.Node("k")

	m := kazooMutex(t, e, "go-1")
	_, err := m.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	var he *zklock.HolderError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, kNode, he.Node)
	assert.Equal(t, "py-1", string(he.Data), "the kazoo holder is named by its identifier")
	require.Equal(t, []string{kNode}, participants(t, m), "TryLock left a node")

	g := startGoLock(m.Lock, holdTimeout)
	queue := waitQueueLen(t, m, 2)
	require.Equal(t, kNode, queue[0])
	goNode := queue[1]
	assert.Regexp(t, kazooLockName, path.Base(goNode))
	waitContenders(t, k, "k", "py-1", "go-1")
	time.Sleep(settle)
	require.False(t, g.finished(), "zklock acquired while kazoo holds the lock")

	k.Release("k")
	h := g.wait(t)
	require.Equal(t, goNode, h.Path())
	require.False(t, k.Acquire("k", shortTimeout), "kazoo acquired while zklock holds the lock")
	require.Equal(t, []string{goNode}, participants(t, m), "kazoo's timed-out acquire left a node")
	require.NoError(t, h.Release())
	require.True(t, k.Acquire("k", holdTimeout))
	k.Release("k")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// Two zklock Mutex values of one Client hold in turn around a kazoo
// Lock: first come, first served across the libraries, and across the two
// values of one session, which exclude each other as two processes do.
// A hold re-enters without a node; a new context is a new participant.
func TestIntegration_KazooMutexGoHoldsKazooWaitsFIFO(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	g1, g2 := kazooMutex(t, e, "go-1"), kazooMutex(t, e, "go-2")
	h1, err := g1.Lock(bounded(t))
	require.NoError(t, err)
	re, err := g1.Lock(h1.Context())
	require.NoError(t, err, "re-entry")
	require.Equal(t, []string{h1.Path()}, participants(t, g1), "re-entry made a node")
	require.NoError(t, re.Release())
	_, err = g1.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "a new context of the holding Mutex")

	k.NewLock("k", e.path, "py")
	require.False(t, k.Acquire("k", shortTimeout), "kazoo acquired while zklock holds the lock")
	require.Equal(t, []string{h1.Path()}, participants(t, g1), "kazoo's timed-out acquire left a node")
	kw := k.StartAcquire("k", holdTimeout)
	waitQueueLen(t, g1, 2)
	a2 := startGoLock(g2.Lock, holdTimeout)
	queue := waitQueueLen(t, g1, 3)
	waitContenders(t, k, "k", "go-1", "py", "go-2")
	_, err = g2.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "the second Mutex of the holder's Client")
	time.Sleep(settle)
	require.False(t, kw.Done(), "kazoo acquired while zklock holds the lock")
	require.False(t, a2.finished(), "the second Mutex acquired while the first holds")

	require.NoError(t, h1.Release())
	require.True(t, kw.Wait(), "kazoo, first in the queue, did not get the lock")
	require.Equal(t, queue[1], e.path+"/"+k.Node("k"))
	time.Sleep(settle)
	require.False(t, a2.finished(), "the second Mutex overtook kazoo")
	k.Release("k")
	h2 := a2.wait(t)
	require.Equal(t, queue[2], h2.Path())
	require.NoError(t, h2.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A kazoo process killed (SIGKILL) while it holds: the zklock waiter gets
// the lock once its session has expired. Killed while it waits between two
// zklock participants: its node still counts until its session expires,
// and then the zklock waiter behind it gets the lock.
func TestIntegration_KazooMutexKazooKilled(t *testing.T) {
	e := kazooSetup(t, interop.WithKazooSessionTimeout(shortSession))
	k := e.kazoo
	m := kazooMutex(t, e, "go")
	k.NewLock("k", e.path, "py")
	require.True(t, k.Acquire("k", holdTimeout))
	g := startGoLock(m.Lock, holdTimeout)
	waitQueueLen(t, m, 2)
	time.Sleep(settle)
	require.False(t, g.finished(), "zklock acquired while kazoo holds the lock")
	k.Kill()
	killed := time.Now()
	h := g.wait(t)
	t.Logf("granted %v after the kill (kazoo session timeout %v)", time.Since(killed).Round(time.Millisecond), shortSession)

	k2 := interop.StartKazooPeer(t, e.servers, interop.WithKazooSessionTimeout(shortSession))
	k2.NewLock("k", e.path, "py-2")
	kw := k2.StartAcquire("k", holdTimeout)
	waitQueueLen(t, m, 2)
	g = startGoLock(kazooMutex(t, e, "go-2").Lock, holdTimeout)
	queue := waitQueueLen(t, m, 3)
	k2.Kill()
	_, err := kw.Result()
	require.Error(t, err, "the killed peer answered")
	require.NoError(t, h.Release())
	h = g.wait(t)
	require.Equal(t, queue[2], h.Path())
	require.NoError(t, h.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A kazoo waiter cancelled (kazoo's lock.cancel()) between two zklock
// participants: kazoo deletes its node, and the zklock waiter behind it
// gets the lock at the holder's release.
func TestIntegration_KazooMutexKazooWaiterCancelled(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	g1, g2 := kazooMutex(t, e, "go-1"), kazooMutex(t, e, "go-2")
	h1, err := g1.Lock(bounded(t))
	require.NoError(t, err)
	k.NewLock("k", e.path, "py")
	kw := k.StartAcquire("k", holdTimeout)
	waitQueueLen(t, g1, 2)
	a2 := startGoLock(g2.Lock, holdTimeout)
	queue := waitQueueLen(t, g1, 3)

	k.Cancel("k")
	_, err = kw.Result()
	require.ErrorIs(t, err, interop.ErrCancelled)
	require.Equal(t, []string{queue[0], queue[2]}, waitQueueLen(t, g1, 2), "the cancelled kazoo waiter left its node")
	time.Sleep(settle)
	require.False(t, a2.finished(), "zklock acquired while the first holds")
	require.NoError(t, h1.Release())
	h2 := a2.wait(t)
	require.Equal(t, queue[2], h2.Path())
	require.NoError(t, h2.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A session expiry on either side: a kazoo holder's session expires and
// the zklock waiter gets the lock; a zklock holder's session expires, its
// hold ends with ErrLockLost, and the kazoo waiter gets the lock.
func TestIntegration_KazooMutexSessionExpiry(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	k.NewLock("k", e.path, "py")
	require.True(t, k.Acquire("k", holdTimeout))
	m := kazooMutex(t, e, "go")
	g := startGoLock(m.Lock, holdTimeout)
	waitQueueLen(t, m, 2)
	time.Sleep(settle)
	require.False(t, g.finished(), "zklock acquired while kazoo holds the lock")
	k.ExpireSession()
	h := g.wait(t)
	require.NoError(t, h.Release())

	link, err := kit.OpenLink(e.servers)
	require.NoError(t, err)
	defer link.Close()
	c, err := zklock.Connect(e.servers, zklock.WithDialer(link.Dial), zklock.WithSessionTimeout(10*time.Second))
	require.NoError(t, err)
	defer c.Close()
	lm, err := zklock.NewMutex(c, e.path, zklock.WithLayout(zklock.LayoutKazoo), zklock.WithLockData([]byte("go-linked")))
	require.NoError(t, err)
	h, err = lm.Lock(bounded(t))
	require.NoError(t, err)
	k.NewLock("k2", e.path, "py-2") // k's kazoo Lock still thinks it holds
	kw := k.StartAcquire("k2", holdTimeout)
	waitContenders(t, k, "k2", "go-linked", "py-2")
	time.Sleep(settle)
	require.False(t, kw.Done())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, link.ExpireSession(ctx))
	require.True(t, kw.Wait(), "kazoo did not get the lock when the zklock holder's session expired")
	select {
	case <-h.Done():
	case <-time.After(eventTimeout):
		t.Fatal("the zklock hold did not end when its session expired")
	}
	require.ErrorIs(t, h.Err(), zklock.ErrLockLost)
	require.ErrorIs(t, h.Release(), zklock.ErrLockLost)
	k.Release("k2")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A zklock ReadWriteLock in kazoo's layout and kazoo's ReadLock and
// WriteLock on one path, readers and writers of both languages mixed:
// readers share across the libraries, writers of both wait for them, a
// zklock writer waits for a kazoo reader and a kazoo reader for a zklock
// writer. (No kazoo reader here or below is queued behind a writer with
// another writer queued after it: kazoo 2.8's ReadLock then waits for the
// later writer too, which waits for it: kazoo issue 649.)
func TestIntegration_KazooReadWriteLock(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	bg := context.Background()
	rw := kazooRW(t, e)

	// Readers of both hold together; writers of both wait.
	require.True(t, k.Acquire("kr", holdTimeout))
	gr, err := rw.ReadLock().Lock(bounded(t))
	require.NoError(t, err, "a zklock reader refused beside a kazoo reader")
	assert.Regexp(t, kazooReadName, path.Base(gr.Path()))
	_, err = rw.WriteLock().TryLock(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "a zklock writer beside readers")
	require.False(t, k.Acquire("kw", shortTimeout), "a kazoo writer beside readers")
	waitContenders(t, k, "kr", "py-r", "go")

	// A zklock writer waits for the kazoo reader; a kazoo reader waits
	// for the zklock writer.
	require.NoError(t, gr.Release())
	gw := startGoLock(rw.WriteLock().Lock, holdTimeout)
	waitChildren(t, e, e.path, 2)
	time.Sleep(settle)
	require.False(t, gw.finished(), "a zklock writer beside a kazoo reader")
	k.Release("kr")
	w := gw.wait(t)
	assert.Regexp(t, kazooLockName, path.Base(w.Path()))
	require.False(t, k.Acquire("kr", shortTimeout), "a kazoo reader beside a zklock writer")
	require.False(t, k.Acquire("kw", shortTimeout), "a kazoo writer beside a zklock writer")
	kr := k.StartAcquire("kr", holdTimeout)
	waitChildren(t, e, e.path, 2)
	time.Sleep(settle)
	require.False(t, kr.Done(), "a kazoo reader beside a zklock writer")
	require.NoError(t, w.Release())
	require.True(t, kr.Wait(), "the kazoo reader did not get in when the zklock writer left")
	k.Release("kr")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazooRW is a zklock ReadWriteLock in kazoo's layout on e.path, with
// "go" as its nodes' data, beside the kazoo peer's ReadLock "kr" (py-r)
// and WriteLock "kw" (py-w) on the same path.
func kazooRW(t *testing.T, e *env) *zklock.ReadWriteLock {
	t.Helper()
	rw, err := zklock.NewReadWriteLock(e.client, e.path, zklock.WithLayout(zklock.LayoutKazoo), zklock.WithLockData([]byte("go")))
	require.NoError(t, err)
	e.kazoo.NewReadLock("kr", e.path, "py-r")
	e.kazoo.NewWriteLock("kw", e.path, "py-w")
	return rw
}

// A kazoo WriteLock waits for the readers of both languages; while it
// holds, a zklock reader and then a zklock writer queue: at its release
// the reader goes in, not waiting for the writer after it (as kazoo 2.8's
// ReadLock would), and that writer waits for the reader.
func TestIntegration_KazooReadWriteLockKazooWriter(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	rw := kazooRW(t, e)
	require.True(t, k.Acquire("kr", holdTimeout))
	gr, err := rw.ReadLock().Lock(bounded(t))
	require.NoError(t, err)
	kw := k.StartAcquire("kw", holdTimeout)
	waitChildren(t, e, e.path, 3)
	k.Release("kr")
	time.Sleep(settle)
	require.False(t, kw.Done(), "a kazoo writer beside a zklock reader")
	require.NoError(t, gr.Release())
	require.True(t, kw.Wait(), "the kazoo writer did not get in when the readers left")

	gr2 := startGoLock(rw.ReadLock().Lock, holdTimeout)
	waitChildren(t, e, e.path, 2)
	gw := startGoLock(rw.WriteLock().Lock, holdTimeout)
	waitChildren(t, e, e.path, 3)
	waitContenders(t, k, "kw", "py-w", "go", "go")
	time.Sleep(settle)
	require.False(t, gr2.finished(), "a zklock reader beside a kazoo writer")
	k.Release("kw")
	r := gr2.wait(t)
	time.Sleep(settle)
	require.False(t, gw.finished(), "a zklock writer beside a zklock reader")
	require.NoError(t, r.Release())
	w := gw.wait(t)
	require.NoError(t, w.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazooElection is a zklock Election in kazoo's layout on e.path.
func kazooElection(t *testing.T, e *env, id string) *zklock.Election {
	t.Helper()
	el, err := zklock.NewElection(e.client, e.path, id, zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	return el
}

// electionIDs is zklock's view of an election: ids in order, the
// leader's followed by "*".
func electionIDs(t *testing.T, el *zklock.Election) []string {
	t.Helper()
	ps, err := el.Participants(bounded(t))
	require.NoError(t, err)
	return participantIDs(ps)
}

// A zklock Election in kazoo's layout and a kazoo Election on one path:
// one leader at a time across the libraries, leadership handed over
// kazoo → Go → kazoo, and both list the same contenders in the same
// order.
func TestIntegration_KazooElection(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	k.NewElection("k", e.path, "py-1")
	run := k.StartRun("k", runTimeout)
	k.WaitEvent("leading k", eventTimeout)

	el := kazooElection(t, e, "go-1")
	camp := startGoLock(el.Campaign, holdTimeout)
	waitContenders(t, k, "k", "py-1", "go-1")
	assert.Equal(t, []string{"py-1*", "go-1"}, electionIDs(t, el), "zklock's view")
	ps, err := el.Participants(bounded(t))
	require.NoError(t, err)
	for _, p := range ps {
		assert.Regexp(t, kazooLockName, path.Base(p.Node))
	}
	leader, err := el.Leader(bounded(t))
	require.NoError(t, err)
	assert.Equal(t, "py-1", leader)
	time.Sleep(settle)
	require.False(t, camp.finished(), "zklock leads beside a kazoo leader")
	require.False(t, el.IsLeader())

	k.Resign("k") // kazoo → Go
	k.WaitEvent("resigned k", eventTimeout)
	require.True(t, run.Wait(), "kazoo led")
	hd := camp.wait(t)
	require.True(t, el.IsLeader())

	run = k.StartRun("k", runTimeout)
	waitContenders(t, k, "k", "go-1", "py-1")
	assert.Equal(t, []string{"go-1*", "py-1"}, electionIDs(t, el))
	time.Sleep(settle)
	require.False(t, k.Leading("k"), "kazoo leads beside a zklock leader")
	require.NoError(t, hd.Release()) // Go → kazoo
	k.WaitEvent("leading k", eventTimeout)
	leader, err = el.Leader(bounded(t))
	require.NoError(t, err)
	assert.Equal(t, "py-1", leader)
	k.Resign("k")
	require.True(t, run.Wait())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A kazoo leader killed: the zklock candidate leads once the kazoo
// session has expired. A kazoo contender cancelled while it waits behind
// the zklock leader: it leaves the election, without a node.
func TestIntegration_KazooElectionLeaderKilled(t *testing.T) {
	e := kazooSetup(t, interop.WithKazooSessionTimeout(shortSession))
	k := e.kazoo
	k.NewElection("k", e.path, "py-1")
	k.StartRun("k", runTimeout)
	k.WaitEvent("leading k", eventTimeout)
	el := kazooElection(t, e, "go-1")
	camp := startGoLock(el.Campaign, holdTimeout)
	waitContenders(t, k, "k", "py-1", "go-1")
	time.Sleep(settle)
	require.False(t, camp.finished(), "zklock leads beside a kazoo leader")
	k.Kill()
	hd := camp.wait(t)
	assert.Equal(t, []string{"go-1*"}, electionIDs(t, el))

	k2 := interop.StartKazooPeer(t, e.servers)
	k2.NewElection("k", e.path, "py-2")
	run := k2.StartRun("k", runTimeout)
	waitContenders(t, k2, "k", "go-1", "py-2")
	k2.Cancel("k")
	require.False(t, run.Wait(), "a cancelled kazoo contender led")
	assert.Equal(t, []string{"go-1*"}, electionIDs(t, el), "the cancelled contender left its node")
	require.NoError(t, hd.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A zklock Selector in kazoo's layout and a kazoo Election on one path:
// the Selector's function runs only while kazoo does not lead, and kazoo
// leads only once the function has returned.
func TestIntegration_KazooSelector(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	k.NewElection("k", e.path, "py-1")
	run := k.StartRun("k", runTimeout)
	k.WaitEvent("leading k", eventTimeout)
	s, err := zklock.NewSelector(e.client, e.path, "go-selector", zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	leading, resign := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Lead(bounded(t), func(ctx context.Context) error {
			close(leading)
			select {
			case <-resign:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	}()
	waitContenders(t, k, "k", "py-1", "go-selector")
	time.Sleep(settle)
	select {
	case <-leading:
		t.Fatal("the Selector leads beside a kazoo leader")
	default:
	}
	k.Resign("k")
	require.True(t, run.Wait())
	select {
	case <-leading:
	case <-time.After(holdTimeout):
		t.Fatal("the Selector did not lead after kazoo resigned")
	}
	run = k.StartRun("k", runTimeout)
	waitContenders(t, k, "k", "go-selector", "py-1")
	time.Sleep(settle)
	require.False(t, k.Leading("k"), "kazoo leads beside the Selector")
	close(resign)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(holdTimeout):
		t.Fatal("Lead did not return")
	}
	k.WaitEvent("leading k", eventTimeout)
	k.Resign("k")
	require.True(t, run.Wait())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazooSemaphore is a zklock Semaphore in kazoo's layout on e.path, with
// data as its leases' data (kazoo's lease_holders() lists it).
func kazooSemaphore(t *testing.T, e *env, maxLeases int, data string) *zklock.Semaphore {
	t.Helper()
	s, err := zklock.NewSemaphore(e.client, e.path, maxLeases, zklock.WithLayout(zklock.LayoutKazoo), zklock.WithLockData([]byte(data)))
	require.NoError(t, err)
	return s
}

// A zklock Semaphore in kazoo's layout and kazoo Semaphores on one path
// share its leases: together they never hold more than max_leases, and a
// lease returned by one library lets a waiter of the other in.
func TestIntegration_KazooSemaphore(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	s := kazooSemaphore(t, e, 2, "go")
	k.NewSemaphore("k1", e.path, 2, "py-1")
	k.NewSemaphore("k2", e.path, 2, "py-2")

	require.True(t, k.Acquire("k1", holdTimeout))
	gl, err := s.Acquire(bounded(t))
	require.NoError(t, err, "zklock refused the second lease of 2")
	assert.Regexp(t, kazooLeaseName, gl.Node())
	assert.Equal(t, e.path+"/"+gl.Node(), gl.Path())
	data, _, err := e.conn.Get(gl.Path())
	require.NoError(t, err)
	assert.Equal(t, "go", string(data), "a lease's data is its holder's identifier")

	// Full: neither library gets a third lease.
	require.False(t, k.Acquire("k2", shortTimeout), "kazoo got a third lease of 2")
	ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
	_, err = s.Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "zklock got a third lease of 2")
	require.ElementsMatch(t, []string{"py-1", "go"}, k.LeaseHolders("k1"))
	goView, err := s.Participants(bounded(t))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{k.Node("k1"), gl.Node()}, goView)

	// zklock returns its lease: the waiting kazoo acquirer gets one.
	k2 := k.StartAcquire("k2", holdTimeout)
	time.Sleep(settle)
	require.False(t, k2.Done(), "kazoo got a lease while both are taken")
	require.NoError(t, gl.Release())
	require.True(t, k2.Wait(), "the kazoo waiter not let in when zklock returned its lease")

	// kazoo returns a lease: a waiting zklock acquirer gets one.
	got := make(chan error, 1)
	var gl2 *zklock.Lease
	go func() {
		var err error
		gl2, err = s.Acquire(bounded(t))
		got <- err
	}()
	time.Sleep(settle)
	select {
	case err := <-got:
		t.Fatalf("zklock Acquire returned (%v) while both leases are taken", err)
	default:
	}
	k.Release("k1")
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatal("the zklock waiter not let in when kazoo returned its lease")
	}
	require.ElementsMatch(t, []string{"py-2", "go"}, k.LeaseHolders("k1"))
	require.NoError(t, gl2.Release())
	k.Release("k2")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// waitLockQueue waits until the kazoo lock at p has n contenders, the
// first of them with data head (any, if head is "").
func waitLockQueue(t *testing.T, e *env, p string, n int, head string) {
	t.Helper()
	var have []string
	deadline := time.Now().Add(holdTimeout)
	for {
		if have = lockData(e, p); len(have) == n && (n == 0 || head == "" || have[0] == head) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: want %d contenders, the first %q; have %q", p, n, head, have)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockData returns the data of the kazoo lock nodes at p, in queue order;
// nil if a read fails (a node went meanwhile).
func lockData(e *env, p string) []string {
	children, _, err := e.conn.Children(p)
	if err != nil {
		return nil
	}
	slices.SortFunc(children, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	data := make([]string, 0, len(children))
	for _, ch := range children {
		d, _, err := e.conn.Get(p + "/" + ch)
		if err != nil {
			return nil
		}
		data = append(data, string(d))
	}
	return data
}

// A kazoo Semaphore waiter cancelled, and a kazoo lease holder killed,
// beside zklock's Semaphore of one lease: the cancelled waiter leaves no
// node (in the pool or its lock) and the zklock waiter behind it gets the
// lease when it is returned; the killed holder's lease goes with its
// session, and the zklock waiter gets it.
func TestIntegration_KazooSemaphoreCancelledAndKilled(t *testing.T) {
	e := kazooSetup(t, interop.WithKazooSessionTimeout(shortSession))
	k := e.kazoo
	s := kazooSemaphore(t, e, 1, "go")
	k.NewSemaphore("k", e.path, 1, "py")
	lockPath := e.path + "-__lock__"
	// kazoo 2.8's Semaphore passes its identifier to its Lock as bytes,
	// which writes their repr.
	const pyLock = "b'py'"

	gl, err := s.Acquire(bounded(t))
	require.NoError(t, err)
	kw := k.StartAcquire("k", holdTimeout)
	waitLockQueue(t, e, lockPath, 1, pyLock) // kazoo heads the semaphore's lock: it waits for a lease
	var gl2 *zklock.Lease
	got := make(chan error, 1)
	go func() {
		var err error
		gl2, err = s.Acquire(bounded(t))
		got <- err
	}()
	waitLockQueue(t, e, lockPath, 2, pyLock)
	k.Cancel("k")
	_, err = kw.Result()
	require.ErrorIs(t, err, interop.ErrCancelled)
	waitLockQueue(t, e, lockPath, 1, "")
	require.Equal(t, []string{gl.Node()}, k.Children(e.path), "the cancelled kazoo waiter left a lease")
	require.NoError(t, gl.Release())
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatal("the zklock waiter not let in when the lease was returned")
	}
	require.NoError(t, gl2.Release())

	require.True(t, k.Acquire("k", holdTimeout))
	go func() {
		var err error
		gl2, err = s.Acquire(bounded(t))
		got <- err
	}()
	waitLockQueue(t, e, lockPath, 1, "")
	time.Sleep(settle)
	require.Len(t, got, 0, "zklock got a lease while kazoo holds the only one")
	k.Kill()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(holdTimeout + 5*time.Second):
		t.Fatal("the zklock waiter not let in when the killed kazoo holder's session ended")
	}
	require.NoError(t, gl2.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// kazoo's max_leases rule, both ways: the pool node holds max_leases, and
// a contender with another refuses to take a lease: zklock with a typed
// error naming the path and both sizes (a MaxLeasesError), kazoo with
// its ValueError.
func TestIntegration_KazooSemaphoreMaxLeasesMismatch(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	s3 := kazooSemaphore(t, e, 3, "go-3")
	k.NewSemaphore("k2", e.path, 2, "py-2")
	require.True(t, k.Acquire("k2", holdTimeout)) // kazoo made the pool, for 2
	k.Release("k2")
	_, err := s3.Acquire(bounded(t))
	require.Error(t, err, "zklock took a lease of 3 from kazoo's pool of 2")
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	var me *zklock.MaxLeasesError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, zklock.MaxLeasesError{Path: e.path, MaxLeases: 3, Stored: 2}, *me)
	assert.Contains(t, err.Error(), e.path)
	require.Empty(t, k.Children(e.path), "the refused acquire left a lease")
	require.Empty(t, k.Children(e.path+"-__lock__"), "the refused acquire left a lock node")

	other := e.path + "-go"
	s2, err := zklock.NewSemaphore(e.client, other, 2, zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	l, err := s2.Acquire(bounded(t)) // zklock makes the pool, for 2
	require.NoError(t, err)
	pool, _, err := e.conn.Get(other)
	require.NoError(t, err)
	assert.Equal(t, "2", string(pool), "the pool node's data is max_leases, as kazoo writes it")
	k.NewSemaphore("k3", other, 3, "py-3")
	_, err = k.StartAcquire("k3", holdTimeout).Result()
	require.ErrorContains(t, err, "Inconsistent max leases", "kazoo took a lease of 3 from zklock's pool of 2")
	require.NoError(t, l.Release())
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A Curator node and a kazoo node on one path, from real processes: the
// two Java and Python holders do not see each other (each holds at once),
// which is why zklock, in either layout, refuses to take part there, with
// an error naming both layouts and leaving no node.
func TestIntegration_KazooLayoutMismatch(t *testing.T) {
	interop.RequirePeer(t)
	e := kazooSetup(t)
	k := e.kazoo
	j := interop.StartPeer(t, e.servers)
	j.NewMutex("j", e.path)
	require.True(t, j.Acquire("j", holdTimeout))
	k.NewLock("k", e.path, "py")
	require.True(t, k.Acquire("k", holdTimeout), "kazoo saw Curator's node as a contender")

	for _, l := range []zklock.Layout{zklock.LayoutCurator, zklock.LayoutKazoo} {
		m, err := zklock.NewMutex(e.client, e.path, zklock.WithLayout(l))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = m.Lock(ctx)
		cancel()
		require.ErrorIs(t, err, zklock.ErrLayoutMismatch, "%v layout", l)
		assert.Contains(t, err.Error(), "curator", "%v layout", l)
		assert.Contains(t, err.Error(), "kazoo", "%v layout", l)
		assert.Len(t, k.Children(e.path), 2, "%v layout: the refused acquire left a node", l)
	}
	k.Release("k")
	j.Release("j")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// A kazoo Semaphore's lease, from a real kazoo process, on the path of a
// zklock Semaphore of Curator's layout: the two count their leases in
// different nodes (kazoo the path's children, Curator path/leases), so
// that both would hold beyond max; zklock refuses, naming both layouts
// and kazoo's lease, and leaves no node.
func TestIntegration_KazooLeaseRefusedByCuratorSemaphore(t *testing.T) {
	e := kazooSetup(t)
	k := e.kazoo
	k.NewSemaphore("k", e.path, 1, "py")
	require.True(t, k.Acquire("k", holdTimeout))
	leases := k.Children(e.path)
	require.Len(t, leases, 1)

	s, err := zklock.NewSemaphore(e.client, e.path, 1)
	require.NoError(t, err)
	_, err = s.Acquire(bounded(t))
	require.ErrorIs(t, err, zklock.ErrLayoutMismatch, "zklock took a Curator lease beside kazoo's")
	assert.Contains(t, err.Error(), "curator")
	assert.Contains(t, err.Error(), "kazoo")
	assert.Contains(t, err.Error(), leases[0])
	assert.Equal(t, leases, k.Children(e.path), "the refused acquire left a node")
	k.Release("k")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}
