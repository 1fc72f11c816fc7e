package zklock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// The solo path (solo.go): a Mutex that keeps taking its lock alone
// grants a node from its create's reply, without a listing. These tests
// show what it saves, and that everything that could make its proof wrong
// sends it back to the listing: another participant's node, the lock's
// parent deleted and created again with its count brought to the number
// expected, another hold of the same Mutex or of another Mutex of the same
// Client, a new connection, a lost hold.

// soloMutex makes a Mutex of c on the test's root joined with name,
// whose parent is a persistent node: the shared server reaps empty
// containers every minute, which would send the Mutex back to its
// listing at a moment the test does not choose.
func soloMutex(e *env, c *zklock.Client, name string) *zklock.Mutex {
	e.t.Helper()
	e.create(e.root + name)
	return e.mutex(c, name)
}

// soloPairs runs n Lock and Release pairs of m.
func soloPairs(t *testing.T, m *zklock.Mutex, n int) {
	t.Helper()
	for i := range n {
		h, err := m.Lock(context.Background())
		require.NoError(t, err, "pair %d", i)
		require.NoError(t, h.Release(), "pair %d", i)
	}
}

// soloReady makes m ready to skip its next listing: its first pair is
// alone, and its second, alone too and numbered one above, sets the
// parent's watch (see solo.go). The listing sent behind a create can
// overtake it, and then does not show the node alone: a pair that lists
// again takes a third, and so on, at most ten pairs in all.
func soloReady(t *testing.T, m *zklock.Mutex) {
	t.Helper()
	soloPairs(t, m, 2)
	for i := 2; !zklock.SoloReady(m); i++ {
		require.Less(t, i, 10, "the Mutex is not ready to skip its listing after %d pairs alone", i)
		soloPairs(t, m, 1)
	}
}

// delta is what a countConn counted since before, by operation.
func delta(cc *countConn, before map[string]int) map[string]int {
	_, now := cc.total()
	out := map[string]int{}
	for op, n := range now {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// requireWaits requires that m is not granted within a second: why says
// who holds the lock. A hold granted anyway is released before the test
// fails, so that its node does not outlive the test.
func requireWaits(t *testing.T, m *zklock.Mutex, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h, err := m.Lock(ctx)
	if err == nil {
		require.NoError(t, h.Release())
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, why)
}

// An acquire and release of a lock that one Mutex keeps taking alone send
// the floor's two requests, a create and a delete: no listing. The watch
// on the lock's parent that this rests on is set once.
func TestIntegration_SoloReacquireSendsTwo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	m := soloMutex(e, c, "/solo")
	soloReady(t, m)
	_, before := cc.total()
	assert.Equal(t, 1, before["exists"], "the second pair sets the parent's watch")

	const pairs = 20
	soloPairs(t, m, pairs)
	d := delta(cc, before)
	// getData is the hold's own watch, which a hold released at once may
	// never send.
	delete(d, "getData")
	assert.Equal(t, map[string]int{"create": pairs, "delete": pairs}, d, "a create and a delete per pair")
}

// Someone else's node, created between two acquires of the Mutex, takes
// the number the Mutex expects: its next acquire lists, and waits behind
// the holder.
func TestIntegration_SoloOtherHolderIsListed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	m := soloMutex(e, c, "/other")
	soloReady(t, m)
	other := e.mutex(e.client(), "/other")
	h, err := other.Lock(context.Background())
	require.NoError(t, err)

	_, before := cc.total()
	requireWaits(t, m, "the other participant holds the lock")
	assert.Equal(t, 1, delta(cc, before)["getChildren"], "the acquire listed")

	got := acquireAsync(context.Background(), m)
	waitParticipants(t, other, 2)
	require.NoError(t, h.Release())
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, m.Release(a.ctx))
}

// The lock's parent is deleted (as ZooKeeper reaps an empty container)
// and created again; another participant holds the lock in the new
// parent, whose count of creates is then brought to exactly the number
// the Mutex expects next. The number proves nothing in a new parent: the
// parent's watch fired, so the Mutex lists, and waits.
func TestIntegration_SoloParentRecreated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := soloMutex(e, e.client(), "/reaped")
	soloReady(t, m) // nodes 0 to next-2 (soloReady may take more than two pairs)
	parent := e.root + "/reaped"
	probe, err := e.admin.Create(parent+"/probe-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	next, err := strconv.Atoi(probe[len(probe)-10:]) // the Mutex's last node was next-1
	require.NoError(t, err)
	require.NoError(t, e.admin.Delete(probe, -1))
	require.NoError(t, e.admin.Delete(parent, -1))

	other := e.mutex(e.client(), "/reaped")
	h, err := other.Lock(context.Background()) // creates the parent again, and node 0
	require.NoError(t, err)
	for i := range next - 1 { // nodes 1 to next-1
		p, err := e.admin.Create(fmt.Sprintf("%s/filler-%d", parent, i), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		require.NoError(t, e.admin.Delete(p, -1))
	}

	requireWaits(t, m, "the other participant holds the lock")
	// The Mutex's node took number next, the one it expected (its last
	// node, before the probe, was next-1): the next is next+1.
	probe, err = e.admin.Create(parent+"/probe-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(probe, fmt.Sprintf("%010d", next+1)), "the Mutex's node was number %d: %s", next, probe)
	require.NoError(t, e.admin.Delete(probe, -1))
	require.NoError(t, h.Release())
	soloPairs(t, m, 1)
}

// Two holds of one Mutex, by two contexts: the second acquire takes the
// number after the first's node, which stands; it waits.
func TestIntegration_SoloSameMutexWaits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := soloMutex(e, e.client(), "/twice")
	soloReady(t, m)
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	requireWaits(t, m, "the first hold stands")
	require.NoError(t, h.Release())
	soloPairs(t, m, 1)
}

// A new connection (the session survives) ends the parent's watch as
// proof: the next acquire lists and sets it again, the one after is alone
// again. (The Client's check of its recent deletes after a reconnect sends
// exists requests too, so those are not counted here.)
func TestIntegration_SoloReconnectLists(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	c, cc := e.countingClient(
		zklock.WithDialer(faults.Dial),
		zklock.WithErrorPolicy(zklock.SessionPolicy),
	)
	states := make(chan zklock.ConnectionState, 100)
	defer c.Listen(func(s zklock.ConnectionState) { states <- s })()
	m := soloMutex(e, c, "/reconnect")
	soloReady(t, m)

	faults.Cut()
	waitStates(t, states, 20*time.Second, zklock.StateSuspended, zklock.StateReconnected)
	_, before := cc.total()
	soloPairs(t, m, 1)
	d := delta(cc, before)
	assert.Equal(t, 1, d["getChildren"], "the first acquire on the new connection lists: %v", d)

	_, before = cc.total()
	soloPairs(t, m, 1)
	d = delta(cc, before)
	assert.Zero(t, d["getChildren"], "the next is alone again: %v", d)
}

// A hold granted alone and then lost (an operator deletes its node) ends
// with ErrLockLost; the participant that takes the lock meanwhile holds it
// alone, and the Mutex's next acquire lists and waits.
func TestIntegration_SoloHoldLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := soloMutex(e, e.client(), "/lost")
	soloReady(t, m)
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.admin.Delete(m.LockPath(h.Context()), -1))
	waitDone(t, h.Context(), 10*time.Second)
	require.ErrorIs(t, context.Cause(h.Context()), zklock.ErrLockLost)

	other := e.mutex(e.client(), "/lost")
	oh, err := other.Lock(context.Background())
	require.NoError(t, err)
	require.ErrorIs(t, h.Release(), zklock.ErrLockLost)
	requireWaits(t, m, "the other participant holds the lock")
	require.NoError(t, oh.Release())
	soloPairs(t, m, 1)
}

// A revocable hold granted alone is revocable: the request reaches it.
func TestIntegration_SoloRevocable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	m := soloMutex(e, c, "/revoke")
	asked := make(chan struct{}, 10)
	m.MakeRevocable(func(*zklock.Mutex) { asked <- struct{}{} })
	soloReady(t, m)
	_, before := cc.total()
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	assert.Zero(t, delta(cc, before)["getChildren"], "granted alone, without a listing")
	require.NoError(t, zklock.Revoke(context.Background(), e.client(), m.LockPath(h.Context())))
	await(t, asked, 10*time.Second)
	require.NoError(t, h.Release())
}

// Both sides of a ReadWriteLock take the solo path, and a reader of
// another participant, which takes the number the writer expects, makes
// the writer list and wait; a downgrade (a read node in the place of the
// held write node) is a create under the parent too.
func TestIntegration_SoloReadWriteLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	e.create(e.root + "/rw")
	rw, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	for _, side := range []*zklock.Mutex{rw.WriteLock(), rw.ReadLock()} {
		soloReady(t, side)
		_, before := cc.total()
		soloPairs(t, side, 3)
		assert.Zero(t, delta(cc, before)["getChildren"], "granted alone, without a listing")
	}

	w := rw.WriteLock()
	h, err := w.Lock(context.Background())
	require.NoError(t, err)
	down, err := rw.ReadLock().Acquire(h.Context()) // a downgrade
	require.NoError(t, err)
	require.NoError(t, h.Release())
	requireWaits(t, w, "the downgraded reader holds the lock")
	require.NoError(t, rw.ReadLock().Release(down))

	other, err := zklock.NewReadWriteLock(e.client(), e.root+"/rw")
	require.NoError(t, err)
	soloPairs(t, w, 2)
	rh, err := other.ReadLock().Lock(context.Background())
	require.NoError(t, err)
	requireWaits(t, w, "the other participant's reader holds the lock")
	require.NoError(t, rh.Release())
	soloPairs(t, w, 1)
}

// The session expires (its connection paused past the timeout) while the
// Mutex is ready to skip its listing; the Client's next session must not
// trust what the old one knew: while another participant holds the lock,
// the Mutex lists and waits.
func TestIntegration_SoloSessionExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	c := e.client(
		zklock.WithSessionTimeout(1500*time.Millisecond),
		zklock.WithDialer(faults.Dial),
	)
	states := make(chan zklock.ConnectionState, 100)
	defer c.Listen(func(s zklock.ConnectionState) { states <- s })()
	m := soloMutex(e, c, "/expire")
	soloReady(t, m)

	faults.Pause()
	waitStates(t, states, 20*time.Second, zklock.StateLost)
	faults.Resume()
	waitStates(t, states, 20*time.Second, zklock.StateReconnected)

	other := e.mutex(e.client(), "/expire")
	h, err := other.Lock(context.Background())
	require.NoError(t, err)
	requireWaits(t, m, "the other participant holds the lock")
	require.NoError(t, h.Release())
	soloPairs(t, m, 3)
}

// A Mutex made per call, of one Client and lock, skips the listing as a
// kept one does: the knowledge that proves an acquire alone is the
// Client's, per lock. Another Client's Mutex on the lock learns on its own.
func TestIntegration_SoloFreshMutexPerCall(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	soloReady(t, soloMutex(e, c, "/solo"))
	_, before := cc.total()
	const pairs = 20
	for i := range pairs {
		m := e.mutex(c, "/solo")
		require.True(t, zklock.SoloReady(m), "pair %d: a fresh Mutex knows what the Client knows", i)
		soloPairs(t, m, 1)
	}
	d := delta(cc, before)
	delete(d, "getData") // the hold's own watch, as in TestIntegration_SoloReacquireSendsTwo
	assert.Equal(t, map[string]int{"create": pairs, "delete": pairs}, d, "a create and a delete per pair, no listing")

	other, _ := e.countingClient()
	assert.False(t, zklock.SoloReady(e.mutex(other, "/solo")), "another Client has learnt nothing")
}

// Two Mutex values of one Client and path share what the Client knows of
// the lock: taken in turn, each skips the listing. Contending, the second
// waits while the first holds: its create is numbered one above the
// standing node of the other Mutex, which the solo path must not take for
// gone; it is granted when that hold is released.
func TestIntegration_SoloTwoMutexesOfOneClient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	m1 := soloMutex(e, c, "/two")
	m2 := e.mutex(c, "/two")
	soloReady(t, m1)
	require.True(t, zklock.SoloReady(m2), "the second Mutex knows what the Client knows")
	_, before := cc.total()
	const turns = 5
	for range turns {
		soloPairs(t, m1, 1)
		soloPairs(t, m2, 1)
	}
	d := delta(cc, before)
	delete(d, "getData") // the hold's own watch, as in TestIntegration_SoloReacquireSendsTwo
	assert.Equal(t, map[string]int{"create": 2 * turns, "delete": 2 * turns}, d, "a create and a delete per pair, no listing")

	h1, err := m1.Lock(context.Background())
	require.NoError(t, err)
	requireWaits(t, m2, "the other Mutex's hold stands")
	w := acquireAsync(context.Background(), m2)
	waitParticipants(t, m1, 2)
	require.NoError(t, h1.Release())
	a := await(t, w, 10*time.Second)
	require.NoError(t, a.err, "granted once the other Mutex's hold is released")
	require.NoError(t, m2.Release(a.ctx))
	soloPairs(t, m1, 1)
	soloPairs(t, m2, 1)
}
