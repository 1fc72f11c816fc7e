package zklock_test

import (
	"context"
	"net"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	kit "github.com/zklock/zklock/zktest"
)

// The holder's traffic is paused for longer than its session timeout, so
// the server expires the session. The holder's context is cancelled with
// ErrLockLost before the waiter gets the lock, under either policy.
func TestIntegration_MutexHolderSessionExpires(t *testing.T) {
	t.Parallel()
	for _, policy := range []zklock.ErrorPolicy{zklock.StandardPolicy, zklock.SessionPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			e := setup(t)
			faults := e.link()
			hc := e.client(
				zklock.WithSessionTimeout(1500*time.Millisecond),
				zklock.WithErrorPolicy(policy),
				zklock.WithDialer(faults.Dial),
			)
			states := make(chan zklock.ConnectionState, 100)
			defer hc.Listen(func(s zklock.ConnectionState) { states <- s })()
			holder := e.mutex(hc, "/expire")
			waiter := e.mutex(e.client(), "/expire")
			bg := context.Background()

			h, err := holder.Acquire(bg)
			require.NoError(t, err)
			lost := make(chan time.Time, 1)
			context.AfterFunc(h, func() { lost <- time.Now() })
			got := acquireAsync(bg, waiter)
			waitParticipants(t, waiter, 2)

			faults.Pause()
			waitDone(t, h, 15*time.Second)
			require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
			if policy == zklock.StandardPolicy {
				assert.ErrorContains(t, context.Cause(h), "suspended")
			} else {
				assert.Equal(t, zklock.StateLost, hc.State(), "under SessionPolicy the hold ends with the session")
			}
			a := await(t, got, 20*time.Second)
			require.NoError(t, a.err, "the waiter acquires once the holder's session expired")
			lostAt := <-lost
			assert.True(t, lostAt.Before(a.at), "the holder learnt of the loss (%v) before the waiter acquired (%v)",
				lostAt.Format("15:04:05.000"), a.at.Format("15:04:05.000"))
			faults.Resume()

			// The holder's client comes back with a new session.
			waitState(t, hc, 20*time.Second, zklock.StateReconnected)
			require.ErrorIs(t, holder.Release(h), zklock.ErrLockLost)
			assert.False(t, holder.IsAcquiredInThisProcess())
			waitStates(t, states, 10*time.Second, zklock.StateSuspended, zklock.StateLost, zklock.StateReconnected)

			// And it can queue again on its new session.
			next := acquireAsync(bg, holder)
			waitParticipants(t, waiter, 2)
			require.NoError(t, waiter.Release(a.ctx))
			b := await(t, next, 10*time.Second)
			require.NoError(t, b.err)
			require.NoError(t, holder.Release(b.ctx))
		})
	}
}

// A short pause, within the session timeout: under SessionPolicy the hold
// survives; under StandardPolicy it is lost, and its node is removed so it
// does not block the queue.
func TestIntegration_MutexShortSuspension(t *testing.T) {
	t.Parallel()
	for _, policy := range []zklock.ErrorPolicy{zklock.StandardPolicy, zklock.SessionPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			e := setup(t)
			faults := e.link()
			// SessionPolicy trusts a suspended session for about a quarter
			// of its timeout, and go-zookeeper waits a second before it
			// dials the only server again.
			c := e.client(
				zklock.WithSessionTimeout(12*time.Second),
				zklock.WithErrorPolicy(policy),
				zklock.WithDialer(faults.Dial),
			)
			m := e.mutex(c, "/short")
			h, err := m.Acquire(context.Background())
			require.NoError(t, err)
			faults.Cut()
			waitState(t, c, 10*time.Second, zklock.StateReconnected)
			if policy == zklock.SessionPolicy {
				assert.NoError(t, h.Err(), "hold survives a reconnect with the same session")
				assert.True(t, m.IsOwnedBy(h))
				require.NoError(t, m.Release(h))
				return
			}
			waitDone(t, h, 10*time.Second)
			require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
			waitParticipants(t, m, 0)
			require.ErrorIs(t, m.Release(h), zklock.ErrLockLost)
		})
	}
}

// In a 3-node ensemble, the server a holder is connected to stops: under
// SessionPolicy the client moves to another server with the same session
// and keeps its hold; a waiter gets the lock after the release.
func TestIntegration_EnsembleHolderServerStops(t *testing.T) {
	t.Parallel()
	cluster := kit.StartT(t, kit.Config{Servers: 3})
	e := setupKit(t, cluster)
	var server lastDial
	hc := e.client(zklock.WithErrorPolicy(zklock.SessionPolicy), zklock.WithSessionTimeout(12*time.Second),
		zklock.WithDialer(server.dial))
	holder := e.mutex(hc, "/ensemble")
	waiter := e.mutex(e.client(), "/ensemble")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter)
	waitParticipants(t, holder, 2)

	connected := -1
	addr, _ := server.addr.Load().(string)
	for i, s := range cluster.Servers() {
		if s == addr {
			connected = i
		}
	}
	require.NotEqual(t, -1, connected, "holder's server %s among %v", addr, cluster.Servers())
	session := zklock.ConnOf(hc).SessionID()
	require.NoError(t, cluster.Stop(connected))
	waitState(t, hc, 20*time.Second, zklock.StateReconnected)
	assert.Equal(t, session, zklock.ConnOf(hc).SessionID(), "same session on another server")
	assert.NoError(t, h.Err(), "the hold survives the move")
	select {
	case a := <-got:
		t.Fatalf("waiter acquired while the holder holds: %v", a.err)
	default:
	}
	require.NoError(t, holder.Release(h))
	a := await(t, got, 20*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
	require.NoError(t, cluster.Restart(connected))
}

// lastDial is a Client's dialer that records the address of the last
// connection it opened: the server the session talks to, as long as
// nothing breaks that connection.
type lastDial struct{ addr atomic.Value }

func (d *lastDial) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.addr.Store(addr)
	}
	return c, err
}

// Someone deletes the holder's node: the hold context is cancelled with
// ErrLockLost, guarded writes fail, and Release reports the loss.
func TestIntegration_MutexNodeDeletedBySomeoneElse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/deleted")
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	op, err := m.CheckOp(h)
	require.NoError(t, err)
	require.NoError(t, e.admin.Delete(m.LockPath(h), -1))
	waitDone(t, h, 10*time.Second)
	require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
	assert.False(t, m.IsOwnedBy(h))
	assert.False(t, m.IsAcquiredInThisProcess())
	_, err = e.admin.Multi(op, &zk.SetDataRequest{Path: e.root, Data: nil, Version: -1})
	require.ErrorIs(t, err, zk.ErrNoNode)
	_, err = m.Token(h)
	require.ErrorIs(t, err, zklock.ErrLockLost)
	require.ErrorIs(t, m.Release(h), zklock.ErrLockLost)
	require.ErrorIs(t, m.Release(h), zklock.ErrNotHeld)
}

// getWHook runs a hook before every GetW of a Client's connection.
type getWHook struct {
	zklock.ZKConn
	mu   sync.Mutex
	hook func(p string) // guarded by mu; nil does nothing
}

func (g *getWHook) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	g.mu.Lock()
	h := g.hook
	g.mu.Unlock()
	if h != nil {
		h(p)
	}
	return g.ZKConn.GetW(ctx, p)
}

// A write to the held node (a revocation request, say) makes the hold watch
// its node again, and the connection goes down just then. The hold must
// still be lost at the suspension, not once the re-watch gives up: another
// session gets the lock as soon as the holder's session expires.
func TestIntegration_HoldLostWhileRewatching(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	g := &getWHook{}
	hc := e.client(
		zklock.WithSessionTimeout(2*time.Second),
		zklock.WithDialer(faults.Dial),
		zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
			g.ZKConn = real
			return g
		}),
	)
	holder := e.mutex(hc, "/rewatch")
	waiter := e.mutex(e.client(), "/rewatch")
	bg := context.Background()
	h, err := holder.Acquire(bg)
	require.NoError(t, err)
	_, err = holder.Token(h) // the hold's watch is set
	require.NoError(t, err)
	node := e.root + "/rewatch/" + path.Base(holder.LockPath(h))
	var once sync.Once
	g.mu.Lock()
	g.hook = func(p string) {
		if p == node {
			once.Do(faults.Pause)
		}
	}
	g.mu.Unlock()
	_, err = e.admin.Set(node, []byte("any write"), -1)
	require.NoError(t, err)

	waitDone(t, h, 10*time.Second)
	require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
	a := await(t, acquireAsync(bg, waiter), 30*time.Second)
	require.NoError(t, a.err)
	faults.Resume()
	require.ErrorIs(t, holder.Release(h), zklock.ErrLockLost)
	require.NoError(t, waiter.Release(a.ctx))
}
