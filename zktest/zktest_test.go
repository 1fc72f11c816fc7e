package zktest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The README's "Testing your code": a lock on the shared server, its
// connection paused past the session timeout, and the hold is lost.
func TestLinkPauseLosesHold(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	link := zktest.NewLink(t, cluster)
	c, err := zklock.Connect(cluster.Servers(),
		zklock.WithSessionTimeout(time.Second),
		zklock.WithDialer(link.Dial))
	require.NoError(t, err)
	defer c.Close()
	m, err := zklock.NewMutex(c, root+"/job")
	require.NoError(t, err)
	hd, err := m.Lock(context.Background())
	require.NoError(t, err)

	link.Pause()
	select {
	case <-hd.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold outlived a paused connection")
	}
	assert.ErrorIs(t, hd.Err(), zklock.ErrLockLost)
	link.Resume()
	assert.ErrorIs(t, hd.Release(), zklock.ErrLockLost)
}

// A cut drops the connection at once; the session lives on, so a hold
// under SessionPolicy stands.
func TestLinkCut(t *testing.T) {
	t.Parallel()
	l := lockThroughLink(t, "cut", zklock.WithErrorPolicy(zklock.SessionPolicy))
	l.link.Cut()
	waitState(t, l.states, zklock.StateSuspended)
	waitState(t, l.states, zklock.StateReconnected)
	require.NoError(t, l.hd.Err(), "the hold stands: the session lived")
	require.NoError(t, l.hd.Release())
}

// The shared cluster belongs to every test: a test cannot stop it.
func TestSharedIsNotControllable(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	for name, op := range map[string]func(int) error{"Stop": cluster.Stop, "Kill": cluster.Kill, "Restart": cluster.Restart} {
		assert.ErrorIs(t, op(0), zktest.ErrUnsupported, name)
	}
	assert.NoError(t, cluster.Close(), "Close of the shared cluster does nothing")
	assert.Equal(t, strings.Join(cluster.Servers(), ","), cluster.ConnectString())
}

// Root leaves a fresh path, named after the test, and deletes the tree
// after the test.
func TestRoot(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	var root string
	t.Run("inner", func(t *testing.T) {
		root = cluster.Root(t)
		assert.True(t, strings.HasPrefix(root, "/zktest/TestRoot_inner"), root)
		c, err := zklock.Connect(cluster.Servers())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		m, err := zklock.NewMutex(c, root+"/a/b")
		require.NoError(t, err)
		hd, err := m.Lock(context.Background())
		require.NoError(t, err)
		require.NoError(t, hd.Release())
	})
	c, err := zklock.Connect(cluster.Servers())
	require.NoError(t, err)
	defer c.Close()
	ok, _, err := c.Exists(context.Background(), root)
	require.NoError(t, err)
	assert.False(t, ok, "the root is deleted after its test")
}

// A three-server ensemble of the test's own: its leader killed, another
// leads, and the killed one restarts as a follower.
func TestEnsembleKillLeader(t *testing.T) {
	t.Parallel()
	cluster := zktest.StartT(t, zktest.Config{Servers: 3})
	if cluster.External() {
		t.Skip("an ensemble given by ZK_SERVERS cannot be killed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := cluster.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, cluster.Kill(old))
	now, err := cluster.Leader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, old, now)
	require.NoError(t, cluster.Restart(old))
	again, err := cluster.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, now, again, "the restarted server follows")
}

// A nil context is refused, not a panic.
func TestStartNilContext(t *testing.T) {
	//lint:ignore SA1012 on purpose
	_, err := zktest.Start(nil, zktest.Config{}) //nolint:staticcheck
	require.Error(t, err)
	assert.False(t, errors.Is(err, zktest.ErrUnsupported))
}

// Without a ZooKeeper to run, Start fails at once and says what to set.
func TestStartWithoutZooKeeper(t *testing.T) {
	t.Setenv("ZK_SERVERS", "")
	t.Setenv("ZOOKEEPER_HOME", t.TempDir()) // no jars there
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := zktest.Start(ctx, zktest.Config{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ZOOKEEPER_HOME")
	assert.Less(t, time.Since(start), 5*time.Second, "fails at once, never hangs")
}

// ExpireSession ends the client's session at once: its hold is lost
// (the node is gone from the server), and the Client comes back with a
// new session.
func TestLinkExpireSession(t *testing.T) {
	t.Parallel()
	l := lockThroughLink(t, "expire", zklock.WithErrorPolicy(zklock.SessionPolicy))
	old := l.session(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, l.link.ExpireSession(ctx))
	select {
	case <-l.hd.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold outlived its session")
	}
	assert.ErrorIs(t, l.hd.Err(), zklock.ErrLockLost)
	waitState(t, l.states, zklock.StateReconnected)
	assert.NotEqual(t, old, l.session(t), "a new session")
	assert.Less(t, time.Since(start), 5*time.Second, "at once, not after a session timeout (the default is 30s)")
	assert.NoError(t, l.link.ExpireSession(ctx), "the new session can be expired too")
}

// A bare go-zookeeper connection through the Link is told first that its
// session expired, on its event channel, with no disconnection before,
// as Curator's KillSession tells a Java client; then its connection
// closes, it reconnects, hears StateExpired from the server, and gets a
// new session. Its ephemeral node is gone.
func TestLinkExpireSessionBareConn(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	link := zktest.NewLink(t, cluster)
	conn, events, err := zk.Connect(cluster.Servers(), 10*time.Second, zk.WithDialer(link.Dial), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	defer conn.Close()
	nextSessionEvent(t, events, zk.StateHasSession)
	node, err := conn.Create(root+"/ephemeral", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	old := conn.SessionID()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, link.ExpireSession(ctx))
	ev := nextSessionEvent(t, events)
	assert.Equal(t, zk.Event{Type: zk.EventSession, State: zk.StateExpired}, ev, "told first, before any disconnection")
	nextSessionEvent(t, events, zk.StateDisconnected)
	nextSessionEvent(t, events, zk.StateExpired) // the server's word, on reconnecting
	nextSessionEvent(t, events, zk.StateHasSession)
	assert.NotEqual(t, old, conn.SessionID(), "a new session")
	ok, _, err := conn.Exists(node)
	require.NoError(t, err)
	assert.False(t, ok, "the expired session's node is gone")
}

// nextSessionEvent returns the next session event from events, skipping
// those of other states if states are given, or fails the test.
func nextSessionEvent(t *testing.T, events <-chan zk.Event, states ...zk.State) zk.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && (len(states) == 0 || slices.Contains(states, ev.State)) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no session event %v within 10s", states)
			return zk.Event{}
		}
	}
}

// SetDelay adds latency: a round trip through the Link takes at least
// twice the delay, and none once it is ended.
func TestLinkSetDelay(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	conn, _, err := zk.Connect(cluster.Servers(), 10*time.Second, zk.WithDialer(link.Dial), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Sync("/") // the session is up
	require.NoError(t, err)
	const d = 100 * time.Millisecond
	link.SetDelay(d)
	start := time.Now()
	_, _, err = conn.Exists("/")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 2*d, "a round trip waits the delay each way")
	link.SetDelay(0)
	start = time.Now()
	_, _, err = conn.Exists("/")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*d, "no delay once it is ended")
}

// quiet silences go-zookeeper's log.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// A blackhole suspends the client; Restore lets it reconnect at once, to
// the same session, so a hold under SessionPolicy rides it out.
func TestLinkBlackholeRestore(t *testing.T) {
	t.Parallel()
	l := lockThroughLink(t, "blackhole", zklock.WithSessionTimeout(6*time.Second), zklock.WithErrorPolicy(zklock.SessionPolicy))
	l.link.Blackhole()
	waitState(t, l.states, zklock.StateSuspended)
	l.link.Restore()
	waitState(t, l.states, zklock.StateReconnected)
	require.NoError(t, l.hd.Err(), "the session lived through the blackhole")
	require.NoError(t, l.hd.Release())
}

// linked is a test's Client whose connection goes through a Link, with
// a hold of a lock under the test's root and the Client's states.
type linked struct {
	root   string // the test's root
	link   *zktest.Link
	c      *zklock.Client
	hd     *zklock.Hold
	states <-chan zklock.ConnectionState
}

// lockThroughLink connects a Client through a new Link to the shared
// cluster, with opts, and locks root/name. The Client is closed when the
// test ends, before the root's check.
func lockThroughLink(t *testing.T, name string, opts ...zklock.Option) linked {
	t.Helper()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	link := zktest.NewLink(t, cluster)
	c, err := zklock.Connect(cluster.Servers(), append(opts, zklock.WithDialer(link.Dial))...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	states := make(chan zklock.ConnectionState, 16)
	t.Cleanup(c.Listen(func(s zklock.ConnectionState) { states <- s }))
	m, err := zklock.NewMutex(c, root+"/"+name)
	require.NoError(t, err)
	hd, err := m.Lock(context.Background())
	require.NoError(t, err)
	return linked{root, link, c, hd, states}
}

// session returns the id of l's Client's session: the owner of an
// ephemeral node that the Client makes under the test's root, and deletes.
func (l linked) session(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := l.c.Create(ctx, l.root+"/session-", nil, zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	_, st, err := l.c.Get(ctx, p)
	require.NoError(t, err)
	require.NoError(t, l.c.Delete(ctx, p, -1))
	return st.EphemeralOwner
}

// waitState reads states until want comes (bounded).
func waitState(t *testing.T, states <-chan zklock.ConnectionState, want zklock.ConnectionState) {
	t.Helper()
	for {
		select {
		case s := <-states:
			if s == want {
				return
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no %v within 20s", want)
		}
	}
}

// The kit adds nothing to its users' builds but go-zookeeper: every
// package it imports, all the way down, is the standard library's,
// go-zookeeper's or this module's.
func TestKitImportsOnlyGoZooKeeper(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/zklock/zklock/") && p != "github.com/go-zookeeper/zk" {
			t.Errorf("the kit imports %s", p)
		}
	}
}

// A partitionable ensemble: its leader cut off from the others, another
// server leads and a client of the majority writes; healed, the old
// leader follows again.
func TestEnsemblePartition(t *testing.T) {
	t.Parallel()
	cluster := zktest.StartT(t, zktest.Config{Servers: 3, Partitionable: true}) // skips without root and ip
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := cluster.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, cluster.Isolate(old))
	var majority []string
	for i, s := range cluster.Servers() {
		if i != old {
			majority = append(majority, s)
		}
	}
	c, err := zklock.Connect(majority, zklock.WithConnectTimeout(30*time.Second))
	require.NoError(t, err)
	defer c.Close()
	m, err := zklock.NewMutex(c, "/partition/lock")
	require.NoError(t, err)
	hd, err := m.Lock(ctx) // the majority serves
	require.NoError(t, err)
	require.NoError(t, hd.Release())
	require.NoError(t, cluster.Heal())
	require.Eventually(t, func() bool {
		l, err := cluster.Leader(ctx)
		return err == nil && l != old
	}, 30*time.Second, 100*time.Millisecond, "one leader, not the old one")
}

// Isolate needs a partitionable cluster.
func TestIsolateUnsupported(t *testing.T) {
	t.Parallel()
	assert.ErrorIs(t, zktest.Shared(t).Isolate(0), zktest.ErrUnsupported)
	assert.ErrorIs(t, zktest.Shared(t).Heal(), zktest.ErrUnsupported)
}

// Config.Port puts the server on the port asked for; a port in use, a
// port out of range and a port with Partitionable are errors that say so.
func TestStartPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = zktest.Start(ctx, zktest.Config{Port: port})
	require.Error(t, err, "the port is in use")
	assert.Contains(t, err.Error(), fmt.Sprintf("client port %d", port))
	require.NoError(t, ln.Close())

	cluster := zktest.StartT(t, zktest.Config{Port: port})
	assert.Equal(t, []string{fmt.Sprintf("127.0.0.1:%d", port)}, cluster.Servers())
	c, err := zklock.Connect(cluster.Servers())
	require.NoError(t, err)
	c.Close()

	for _, cfg := range []zktest.Config{{Port: -1}, {Port: 65535, Servers: 3}, {Port: port, Partitionable: true}} {
		_, err := zktest.Start(ctx, cfg)
		assert.ErrorContains(t, err, "Port", "%+v", cfg)
	}
}
