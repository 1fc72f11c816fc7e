package zklock_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"path"
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
)

// faultConn wraps the real connection of a Client and injects failures the
// way a flaky network would: an operation that reached the server but whose
// response was lost, or one that failed before it got there. Every
// operation still runs against the real server.
type faultConn struct {
	zklock.ZKConn
	mu          sync.Mutex
	create      func(real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) // guarded by mu; nil passes through
	deleteFails int                                                                                        // guarded by mu; deletes still to fail
	listFails   int                                                                                        // guarded by mu; children listings still to fail
	creates     atomic.Int32
}

func (f *faultConn) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	f.creates.Add(1)
	f.mu.Lock()
	hook := f.create
	f.mu.Unlock()
	if hook != nil {
		return hook(f.ZKConn, p, data, flags, acl)
	}
	return f.ZKConn.Create(p, data, flags, acl)
}

func (f *faultConn) Delete(p string, version int32) error {
	f.mu.Lock()
	fail := f.deleteFails > 0
	if fail {
		f.deleteFails--
	}
	f.mu.Unlock()
	if fail {
		return zk.ErrConnectionClosed
	}
	return f.ZKConn.Delete(p, version)
}

func (f *faultConn) Children(p string) ([]string, *zk.Stat, error) {
	f.mu.Lock()
	fail := f.listFails > 0
	if fail {
		f.listFails--
	}
	f.mu.Unlock()
	if fail {
		return nil, nil, zk.ErrConnectionClosed
	}
	return f.ZKConn.Children(p)
}

func (f *faultConn) setCreate(hook func(real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error)) {
	f.mu.Lock()
	f.create = hook
	f.mu.Unlock()
}

// faultClient connects a Client whose connection f wraps.
func (e *env) faultClient(opts ...zklock.Option) (*zklock.Client, *faultConn) {
	f := &faultConn{}
	c := e.client(append(opts, zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
		f.ZKConn = real
		return f
	}))...)
	return c, f
}

// lostResponse creates the node for real, then reports a connection loss,
// once; later creates pass through.
func lostResponse(f *faultConn) func(real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return func(real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		f.setCreate(nil)
		if _, err := real.Create(p, data, flags, acl); err != nil {
			return "", err
		}
		return "", zk.ErrConnectionClosed
	}
}

// A create whose response is lost is found again by its protected prefix:
// no second node, no orphan.
func TestIntegration_ProtectedCreateLostResponse(t *testing.T) {
	e := setup(t)
	e.create(e.root + "/lost-response") // so the first create is the one that loses its response
	c, f := e.faultClient()
	m := e.mutex(c, "/lost-response")
	f.setCreate(lostResponse(f))
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 1, f.creates.Load(), "the retry found the node instead of creating another")
	children := e.children(e.root + "/lost-response")
	require.Len(t, children, 1)
	assert.Equal(t, path.Base(m.LockPath(h)), children[0])
	require.NoError(t, m.Release(h))
}

// CURATOR-498: the node found by prefix belongs to another (dying) session.
// It is deleted, and a new node with a new UUID is created in ours.
func TestIntegration_ProtectedCreateFindsOtherSessionsNode(t *testing.T) {
	e := setup(t)
	other := zktest.ConnectT(t, e.servers)
	e.create(e.root + "/stale-session")
	c, f := e.faultClient()
	m := e.mutex(c, "/stale-session")
	var stale string
	f.setCreate(func(_ zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		f.setCreate(nil)
		var err error
		stale, err = other.Create(p, data, flags, acl) // as if made by the old session
		if err != nil {
			return "", err
		}
		return "", zk.ErrConnectionClosed
	})
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, stale)
	assert.NotEqual(t, stale, m.LockPath(h))
	assert.NotEqual(t, path.Base(stale)[:40], path.Base(m.LockPath(h))[:40], "a new UUID")
	ok, _, err := e.admin.Exists(stale)
	require.NoError(t, err)
	assert.False(t, ok, "the other session's node was deleted")
	_, st, err := e.admin.Exists(m.LockPath(h))
	require.NoError(t, err)
	assert.Equal(t, c.Conn().SessionID(), st.EphemeralOwner)
	require.NoError(t, m.Release(h))
}

// When the retry policy gives up on a create whose outcome is unknown, the
// node it may have made is found and deleted in the background.
func TestIntegration_ProtectedCreateGivesUp(t *testing.T) {
	e := setup(t)
	c, f := e.faultClient(zklock.WithRetryPolicy(zklock.RetryNTimes{N: 0}))
	m := e.mutex(c, "/gives-up")
	f.setCreate(func(real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		if _, err := real.Create(p, data, flags, acl); err != nil {
			return "", err
		}
		return "", zk.ErrConnectionClosed
	})
	_, err := m.Acquire(context.Background())
	require.ErrorIs(t, err, zk.ErrConnectionClosed)
	require.Eventually(t, func() bool { return len(e.children(e.root+"/gives-up")) == 0 },
		10*time.Second, 10*time.Millisecond, "the orphan is cleaned up")
}

// ctx ends while the create is in flight: Acquire returns at once, and the
// node the create makes afterwards is deleted.
func TestIntegration_ProtectedCreateAbandoned(t *testing.T) {
	e := setup(t)
	e.create(e.root + "/abandoned-create")
	c, f := e.faultClient()
	m := e.mutex(c, "/abandoned-create")
	unblock := make(chan struct{})
	created := make(chan string, 1)
	f.setCreate(func(real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		<-unblock
		name, err := real.Create(p, data, flags, acl)
		created <- name
		return name, err
	})
	ctx, cancel := context.WithCancel(context.Background())
	got := acquireAsync(ctx, m)
	require.Eventually(t, func() bool { return f.creates.Load() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	a := await(t, got, 5*time.Second)
	require.ErrorIs(t, a.err, context.Canceled)
	close(unblock)
	require.NotEmpty(t, <-created)
	require.Eventually(t, func() bool { return len(e.children(e.root+"/abandoned-create")) == 0 },
		10*time.Second, 10*time.Millisecond, "the late node is deleted")
}

// A release whose delete fails on the network returns, and the delete goes
// on in the background until the node is gone.
func TestIntegration_GuaranteedDelete(t *testing.T) {
	e := setup(t)
	c, f := e.faultClient()
	m := e.mutex(c, "/guaranteed")
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	f.mu.Lock()
	f.deleteFails = 3
	f.mu.Unlock()
	require.NoError(t, m.Release(h))
	assert.False(t, m.IsAcquiredInThisProcess())
	assert.ErrorIs(t, context.Cause(h), zklock.ErrReleased)
	require.Eventually(t, func() bool { return len(e.children(e.root+"/guaranteed")) == 0 },
		10*time.Second, 10*time.Millisecond, "the background delete succeeds")
	f.mu.Lock()
	assert.Zero(t, f.deleteFails)
	f.mu.Unlock()
}

// A waiter's node deleted by someone else: the waiter queues again with a
// new node and still gets the lock.
func TestIntegration_WaiterNodeDeletedRequeues(t *testing.T) {
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
	e := setup(t)
	faults := zktest.NewFaultsT(t, e.servers)
	wc := e.client(
		zklock.WithSessionTimeout(1500*time.Millisecond),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: time.Minute, Sleep: 50 * time.Millisecond}),
		zklock.WithZKOptions(zk.WithDialer(faults.Dial)),
	)
	holder := e.mutex(e.client(), "/waiter-expires")
	waiter := e.mutex(wc, "/waiter-expires")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter)
	first := waitParticipants(t, holder, 2)[1]
	oldSession := wc.Conn().SessionID()

	faults.Pause()
	require.Eventually(t, func() bool { return len(e.children(e.root+"/waiter-expires")) == 1 },
		20*time.Second, 20*time.Millisecond, "the server expires the waiter's session")
	faults.Resume()
	require.Eventually(t, func() bool {
		p, err := holder.Participants(context.Background())
		return err == nil && len(p) == 2 && p[1] != first
	}, 20*time.Second, 10*time.Millisecond, "the waiter queued again")
	assert.NotEqual(t, oldSession, wc.Conn().SessionID())
	require.NoError(t, holder.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, waiter.Release(a.ctx))
}

// A revocation request reaches the holder, and the hold stands until the
// holder releases.
func TestIntegration_RevokeHolder(t *testing.T) {
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/revoke")
	revoked := make(chan *zklock.Mutex, 1)
	m.MakeRevocable(func(m *zklock.Mutex) { revoked <- m })
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, zklock.Revoke(context.Background(), e.client(), m.LockPath(h)))
	select {
	case got := <-revoked:
		assert.Same(t, m, got)
	case <-time.After(10 * time.Second):
		t.Fatal("revocation not delivered")
	}
	assert.NoError(t, h.Err(), "revocation is cooperative: the hold stands")
	assert.True(t, m.IsOwnedBy(h))
	require.NoError(t, m.Release(h))
}

func TestIntegration_NodeDataAndLogger(t *testing.T) {
	e := setup(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(syncWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := e.client(zklock.WithNodeData([]byte("host-a")), zklock.WithLogger(logger))
	m := e.mutex(c, "/data")
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	data, _, err := e.admin.Get(m.LockPath(h))
	require.NoError(t, err)
	assert.Equal(t, "host-a", string(data))
	require.NoError(t, m.Release(h))

	m2 := e.mutex(c, "/data", zklock.WithLockData([]byte("job-42")))
	h, err = m2.Acquire(context.Background())
	require.NoError(t, err)
	data, _, err = e.admin.Get(m2.LockPath(h))
	require.NoError(t, err)
	assert.Equal(t, "job-42", string(data))
	require.NoError(t, m2.Release(h))

	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "state=Connected")
	assert.Contains(t, logs.String(), "go-zookeeper: ")
}

type syncWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Waiters that give up leave their watches behind (go-zookeeper cannot
// remove one), but waiters share one watch per node and fired watches are
// swept, so the number tracked stays bounded by the live nodes watched.
func TestIntegration_AbandonedWatchesStayBounded(t *testing.T) {
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

// A hold lost while Do's fn runs cancels fn's context, and Do reports both
// fn's error and the loss.
func TestIntegration_DoReportsLoss(t *testing.T) {
	e := setup(t)
	m := e.mutex(e.client(), "/do-lost")
	err := m.Do(context.Background(), func(ctx context.Context) error {
		require.NoError(t, e.admin.Delete(m.LockPath(ctx), -1))
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, zklock.ErrLockLost)
}

// Operations that fail with a connection loss are retried under the retry
// policy, and fail with the connection error once it gives up.
func TestIntegration_ConnectionLossRetries(t *testing.T) {
	e := setup(t)
	c, f := e.faultClient(zklock.WithRetryPolicy(zklock.RetryNTimes{N: 2, Sleep: 10 * time.Millisecond}))
	m := e.mutex(c, "/retries")
	f.mu.Lock()
	f.listFails = 2
	f.mu.Unlock()
	h, err := m.Acquire(context.Background())
	require.NoError(t, err, "two failures are within the policy")
	parts, err := m.Participants(context.Background())
	require.NoError(t, err)
	assert.Len(t, parts, 1)

	f.mu.Lock()
	f.listFails = 3
	f.mu.Unlock()
	_, err = m.Participants(context.Background())
	require.ErrorIs(t, err, zk.ErrConnectionClosed, "three failures exhaust it")
	assert.ErrorContains(t, err, e.root+"/retries")
	require.NoError(t, m.Release(h))
}

// Connect gives up after the connect timeout and leaves nothing running
// (the goroutine-leak check of TestMain would see it).
func TestIntegration_ConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	start := time.Now()
	_, err = zklock.Connect([]string{addr}, zklock.WithConnectTimeout(300*time.Millisecond),
		zklock.WithZKOptions(zk.WithLogger(quietLogger{})))
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestIntegration_NewClientWithAuth(t *testing.T) {
	e := setup(t)
	conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	defer conn.Close()
	acl := append(zk.DigestACL(zk.PermAll, "wrapped", "pw"), zk.WorldACL(zk.PermRead)...)
	c := zklock.NewClient(conn, events, zklock.WithAuth("digest", []byte("wrapped:pw")),
		zklock.WithACL(func(string) []zk.ACL { return acl }), zklock.WithNamespace(strings.TrimPrefix(e.root, "/")))
	defer c.Close()
	m, err := zklock.NewMutex(c, "/x")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err, "the wrapped connection was authenticated")
	require.NoError(t, m.Release(h))
	bad := zklock.NewClient(conn, events, zklock.WithSessionTimeout(0))
	_, err = zklock.NewMutex(bad, "/x")
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	bad.Close()
}

// Do releases when fn panics, and the panic goes on.
func TestIntegration_DoReleasesOnPanic(t *testing.T) {
	e := setup(t)
	m := e.mutex(e.client(), "/do-panic")
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		_ = m.Do(context.Background(), func(context.Context) error { panic("boom") })
	}()
	assert.False(t, m.IsAcquiredInThisProcess())
	other := e.mutex(e.client(), "/do-panic")
	h, err := other.TryAcquire(context.Background())
	require.NoError(t, err, "the lock is free after the panic")
	require.NoError(t, other.Release(h))
}

// The owner closes a wrapped connection: the Client stops at once instead
// of retrying a connection that will never come back.
func TestIntegration_WrappedConnClosedByOwner(t *testing.T) {
	e := setup(t)
	conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	c := zklock.NewClient(conn, events)
	defer c.Close()
	m, err := zklock.NewMutex(c, e.root+"/owner-closed")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	assert.Equal(t, zklock.StateConnected, c.State(), "no replayed suspension")
	conn.Close()
	waitDone(t, h, 10*time.Second)
	require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
	start := time.Now()
	_, err = m.Acquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrClosed)
	assert.Less(t, time.Since(start), 2*time.Second)
}
