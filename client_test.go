package zklock_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

func TestIntegration_NodeDataAndLogger(t *testing.T) {
	t.Parallel()
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
	assert.Contains(t, logs.String(), "state=Connected")
	assert.NotContains(t, logs.String(), "go-zookeeper: ", "zklock's own session: no go-zookeeper connection")
	logs.Reset()
	mu.Unlock()

	// A go-zookeeper connection (the deprecated WithZKOptions) logs
	// through the Client's logger too.
	e.client(zklock.WithLogger(logger), zklock.WithZKOptions(zk.WithLogInfo(true)))
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "go-zookeeper: ")
}

// Connect gives up after the connect timeout and leaves nothing running
// (the goroutine-leak check of TestMain would see it). The server here
// accepts connections and never answers.
func TestIntegration_ConnectTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close() // the kernel completes connections; nobody answers
	start := time.Now()
	// go-zookeeper waits ten times two thirds of the session timeout (67s
	// here) for the server's handshake; the Client closes the socket under
	// it instead of waiting.
	_, err = zklock.Connect([]string{ln.Addr().String()}, zklock.WithConnectTimeout(300*time.Millisecond),
		zklock.WithSessionTimeout(10*time.Second))
	require.ErrorIs(t, err, zk.ErrNoServer)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), ln.Addr().String())
	assert.Equal(t, 1, strings.Count(err.Error(), "zklock:"), err.Error())
	assert.Less(t, time.Since(start), 5*time.Second)
}

// Every server refuses the connection: Connect says so at once, naming
// each address, instead of waiting out its timeout.
func TestConnectRefused(t *testing.T) {
	t.Parallel()
	a, b := zktest.ClosedAddr(t), zktest.ClosedAddr(t)
	start := time.Now()
	_, err := zklock.Connect([]string{a, b, a}, zklock.WithConnectTimeout(20*time.Second)) // a named twice is still one server
	require.ErrorIs(t, err, zk.ErrNoServer)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "connection refused")
	assert.Contains(t, err.Error(), a)
	assert.Contains(t, err.Error(), b)
	assert.Equal(t, 1, strings.Count(err.Error(), "zklock:"), err.Error())
	assert.Less(t, time.Since(start), 10*time.Second, "well before the connect timeout")
}

// notZooKeeper listens on a port of 127.0.0.1 and answers every
// connection as serve does, until the test ends; it returns the address.
func notZooKeeper(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				serve(conn)
			}()
		}
	}()
	return ln.Addr().String()
}

// A port where something other than ZooKeeper listens: an HTTP server's
// answer is no connect response, and Connect says at once that the
// address answered, but not as ZooKeeper (it said "no session within" once
// its timeout had passed, with go-zookeeper allocating the 1.2 GB that
// "HTTP" reads as). A server that accepts and says nothing is named as
// such when the connect timeout passes.
func TestConnectNotZooKeeper(t *testing.T) {
	t.Parallel()
	http := notZooKeeper(t, func(conn net.Conn) {
		conn.Read(make([]byte, 512))
		io.WriteString(conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
	})
	start := time.Now()
	_, err := zklock.Connect([]string{http}, zklock.WithConnectTimeout(20*time.Second))
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), http+" answered, but not as ZooKeeper: its reply began \"HTTP\"")
	assert.Contains(t, err.Error(), "no ZooKeeper server at these addresses")
	assert.Less(t, time.Since(start), 10*time.Second, "well before the connect timeout")

	silent := notZooKeeper(t, func(conn net.Conn) { io.Copy(io.Discard, conn) })
	_, err = zklock.Connect([]string{silent}, zklock.WithConnectTimeout(time.Second))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), silent+" accepted the connection but has not answered ZooKeeper's handshake in ")

	closing := notZooKeeper(t, func(conn net.Conn) { conn.Read(make([]byte, 512)) })
	_, err = zklock.Connect([]string{closing}, zklock.WithConnectTimeout(time.Second))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), closing+" accepted the connection, then EOF before any ZooKeeper reply")
}

// Servers refused for different reasons: the headline claims none of
// them for all (it said "no ZooKeeper server at these addresses" when one
// of two was not ZooKeeper and the other refused), and each is named
// with its own.
func TestConnectMixedRefusals(t *testing.T) {
	t.Parallel()
	http := notZooKeeper(t, func(conn net.Conn) {
		conn.Read(make([]byte, 512))
		io.WriteString(conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
	})
	closed := zktest.ClosedAddr(t)
	_, err := zklock.Connect([]string{http, closed}, zklock.WithConnectTimeout(20*time.Second))
	require.ErrorIs(t, err, zk.ErrNoServer)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Contains(t, err.Error(), "no server would give a session: ")
	assert.NotContains(t, err.Error(), "no ZooKeeper server at these addresses")
	assert.NotContains(t, err.Error(), "every server refused")
	assert.Contains(t, err.Error(), http+" answered, but not as ZooKeeper")
	assert.Contains(t, err.Error(), closed)
	assert.Contains(t, err.Error(), "connection refused")
}

// No server name resolves: Connect says so, naming the names.
func TestConnectUnresolvable(t *testing.T) {
	t.Parallel()
	_, err := zklock.Connect([]string{"nosuch-a.invalid:2181", "nosuch-b.invalid"}, zklock.WithConnectTimeout(20*time.Second))
	require.ErrorIs(t, err, zk.ErrNoServer)
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	assert.Contains(t, err.Error(), "nosuch-a.invalid")
	assert.Contains(t, err.Error(), "nosuch-b.invalid")
	assert.Contains(t, err.Error(), "resolve")
	assert.Equal(t, 1, strings.Count(err.Error(), "zklock:"), err.Error())
}

// One reachable server is enough, whatever the others do; a Curator-style
// connect string is split on commas.
func TestIntegration_ConnectSkipsBadServers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for name, servers := range map[string][]string{
		"entries":        {zktest.ClosedAddr(t), "nosuch.invalid:2181", e.servers[0]},
		"connect string": {" nosuch.invalid:2181 , " + zktest.ClosedAddr(t) + " ," + e.servers[0] + " "},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := zklock.Connect(servers, zklock.WithConnectTimeout(20*time.Second))
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, zklock.StateConnected, c.State())
		})
	}
}

// Server lists that cannot be right are refused before anything is dialed.
func TestConnectBadServerLists(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		servers []string
		text    string
	}{
		"nil":           {nil, "empty server list"},
		"empty":         {[]string{}, "empty server list"},
		"empty string":  {[]string{""}, "empty address"},
		"blank":         {[]string{"  "}, "empty address"},
		"empty in list": {[]string{"a:2181,,b:2181"}, "empty address"},
		"trailing":      {[]string{"a:2181,"}, "empty address"},
		"chroot":        {[]string{"a:2181,b:2181/app"}, `use WithNamespace("app")`},
		"no host":       {[]string{":2181"}, "no host"},
		"bad port":      {[]string{"a:x"}, "bad port"},
		"zero port":     {[]string{"a:0"}, "bad port"},
		"bare IPv6":     {[]string{"::1"}, "brackets"},
		"URL":           {[]string{"http://127.0.0.1:2181"}, `a URL scheme (http://) is not part of a ZooKeeper address: give host:port, such as "127.0.0.1:2181"`},
		"zk URL":        {[]string{"zk1:2181,zookeeper://zk2:2181/"}, `(zookeeper://)`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := zklock.Connect(tt.servers)
			require.ErrorIs(t, err, zklock.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.text)
			assert.Equal(t, 1, strings.Count(err.Error(), "zklock:"), err.Error())
		})
	}
}

func TestIntegration_NewClientWithAuth(t *testing.T) {
	t.Parallel()
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

// The owner closes a wrapped connection: the Client stops at once instead
// of retrying a connection that will never come back.
func TestIntegration_WrappedConnClosedByOwner(t *testing.T) {
	t.Parallel()
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

// A Client over a connection the caller owns: Close deletes its nodes but
// leaves the connection open.
func TestIntegration_NewClientWrapsConn(t *testing.T) {
	t.Parallel()
	e := setup(t)
	conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	defer conn.Close()
	c := zklock.NewClient(conn, events)
	require.Eventually(t, func() bool { return c.State() == zklock.StateConnected }, 10*time.Second, 5*time.Millisecond)
	assert.Same(t, conn, c.Conn())
	m, err := zklock.NewMutex(c, e.root+"/wrapped")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), m)
	waitParticipants(t, m, 2)
	require.NoError(t, c.Close())
	a := await(t, got, 10*time.Second)
	require.ErrorIs(t, a.err, zklock.ErrClosed)
	waitDone(t, h, 10*time.Second)
	waitParticipants(t, m, 0)
	_, _, err = conn.Exists("/")
	require.NoError(t, err, "the wrapped connection stays open")
}

func TestIntegration_MutexNamespace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ns := strings.TrimPrefix(e.root, "/") + "/ns"
	c := e.client(zklock.WithNamespace(ns))
	m, err := zklock.NewMutex(c, "/a/b")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	lp := m.LockPath(h)
	assert.True(t, strings.HasPrefix(lp, "/a/b/_c_"), lp)
	ok, _, err := e.admin.Exists(e.root + "/ns" + lp)
	require.NoError(t, err)
	assert.True(t, ok, "the node lives under the namespace")
	parts, err := m.Participants(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{lp}, parts)
	op, err := m.CheckOp(h)
	require.NoError(t, err)
	assert.Equal(t, e.root+"/ns"+lp, op.Path, "CheckOp carries the full path")
	_, err = zklock.ConnOf(c).Multi(context.Background(), op) // the session's own Multi takes full paths
	require.NoError(t, err)

	// Revoke takes the relative path too.
	revoked := make(chan struct{})
	m2, err := zklock.NewMutex(c, "/a/b")
	require.NoError(t, err)
	m2.MakeRevocable(func(*zklock.Mutex) { close(revoked) })
	got := acquireAsync(context.Background(), m2)
	parts = waitParticipants(t, m, 2)
	require.NoError(t, zklock.Revoke(context.Background(), c, parts[1]))
	select {
	case <-revoked:
	case <-time.After(10 * time.Second):
		t.Fatal("revocation not delivered to a waiter")
	}
	require.NoError(t, m.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, m2.Release(a.ctx))
	require.NoError(t, zklock.Revoke(context.Background(), c, parts[1]), "a missing node is not an error")
}

func TestIntegration_MutexACLProvider(t *testing.T) {
	t.Parallel()
	e := setup(t)
	secret := zk.DigestACL(zk.PermAll, "owner", "s3cret")
	acl := append(secret, zk.WorldACL(zk.PermRead)...)
	var asked sync.Map
	c := e.client(
		zklock.WithAuth("digest", []byte("owner:s3cret")),
		zklock.WithACL(func(p string) []zk.ACL { asked.Store(p, true); return acl }),
	)
	m, err := zklock.NewMutex(c, e.root+"/acl/x")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	// ZooKeeper masks digests for readers without ADMIN permission, so
	// compare schemes, users and permissions.
	masked := func(acl []zk.ACL) []string {
		var out []string
		for _, a := range acl {
			out = append(out, fmt.Sprintf("%s:%s:%d", a.Scheme, strings.SplitN(a.ID, ":", 2)[0], a.Perms))
		}
		return out
	}
	for _, p := range []string{e.root + "/acl", e.root + "/acl/x", m.LockPath(h)} {
		got, _, err := e.admin.GetACL(p)
		require.NoError(t, err, p)
		assert.ElementsMatch(t, masked(acl), masked(got), "ACL of %s", p)
	}
	_, ok := asked.Load(e.root + "/acl/x")
	assert.True(t, ok, "the provider is asked with full paths")

	// Without the credentials, a participant cannot even queue.
	stranger := e.mutex(e.client(), "/acl/x")
	_, err = stranger.Acquire(context.Background())
	require.ErrorIs(t, err, zk.ErrNoAuth)
	require.NoError(t, m.Release(h))
}

// The caller's event channel drops events (go-zookeeper's own channel does
// when it is full): the Client hears nothing of the suspension or the
// expiry, only of the new session. It still reports the old session lost,
// before the reconnection, and the hold it carried ends.
func TestIntegration_WrappedConnMissedExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	conn, events, err := zk.Connect(e.servers, 1500*time.Millisecond, zk.WithLogger(quietLogger{}), zk.WithDialer(faults.Dial))
	require.NoError(t, err)
	defer conn.Close()
	onlySessions := make(chan zk.Event, 16)
	go func() {
		defer close(onlySessions)
		for ev := range events {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				onlySessions <- ev
			}
		}
	}()
	c := zklock.NewClient(conn, onlySessions)
	defer c.Close()
	require.Eventually(t, func() bool { return c.State() == zklock.StateConnected }, 10*time.Second, 5*time.Millisecond)
	states := make(chan zklock.ConnectionState, 100)
	defer c.Listen(func(s zklock.ConnectionState) { states <- s })()
	m, err := zklock.NewMutex(c, e.root+"/missed")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	sid := conn.SessionID()

	faults.Pause()
	zktest.WaitNoEphemerals(t, e.admin, e.root, 20*time.Second)
	faults.Resume()
	waitStates(t, states, 20*time.Second, zklock.StateLost, zklock.StateReconnected)
	assert.NotEqual(t, sid, conn.SessionID())
	waitDone(t, h, 10*time.Second)
	require.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
	require.ErrorIs(t, m.Release(h), zklock.ErrLockLost)
}

// A Client over the caller's connection holds a lock; the connection is
// cut, so the hold is lost and its delete goes to the background; the
// Client is closed during the cut; the connection comes back with the
// same session. Close has seen the delete through: the node is gone,
// though the caller's session lives on.
func TestIntegration_WrappedCloseDuringCutDeletesNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	var down atomic.Bool
	var dials atomic.Int32
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		if down.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return faults.Dial(network, addr, timeout)
	}
	conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}), zk.WithDialer(dial))
	require.NoError(t, err)
	defer conn.Close()
	c := zklock.NewClient(conn, events, zklock.WithSessionTimeout(10*time.Second))
	require.Eventually(t, func() bool { return c.State() == zklock.StateConnected }, 10*time.Second, 5*time.Millisecond)
	m, err := zklock.NewMutex(c, e.root+"/wrapped-cut")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	node, sid := m.LockPath(h), conn.SessionID()

	down.Store(true)
	faults.Cut()
	waitDone(t, h, 10*time.Second) // lost on suspension; the delete cannot reach the server
	// Let go-zookeeper fail a few redials, so that the delete has failed
	// at least once and waits to retry.
	waitDials := func(n int32) {
		t.Helper()
		require.Eventually(t, func() bool { return dials.Load() >= n }, 10*time.Second, 5*time.Millisecond)
	}
	waitDials(dials.Load() + 2)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	waitState(t, c, 5*time.Second, zklock.StateClosed)
	waitDials(dials.Load() + 2) // a request in flight at Close has failed by now
	down.Store(false)

	require.NoError(t, await(t, closed, 15*time.Second), "Close returns once the delete is done")
	require.Eventually(t, func() bool {
		ok, _, err := e.admin.Exists(node)
		return err == nil && !ok
	}, 5*time.Second, 10*time.Millisecond, "the node outlived Close")
	assert.Equal(t, sid, conn.SessionID(), "the caller's session lives on")
	_, _, err = conn.Exists("/")
	require.NoError(t, err, "the caller's connection is back and open")
}
