package interop_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/integration_test/interop"
	"github.com/zklock/zklock/internal/zktest"
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
