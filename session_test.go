package zklock_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// Credentials are re-applied when the Client opens a new session after an
// expiry, so ACL-protected locks keep working.
func TestIntegration_AuthSurvivesSessionExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	acl := append(zk.DigestACL(zk.PermAll, "owner", "pw"), zk.WorldACL(zk.PermRead)...)
	c := e.client(
		zklock.WithSessionTimeout(1500*time.Millisecond),
		zklock.WithAuth("digest", []byte("owner:pw")),
		zklock.WithACL(func(string) []zk.ACL { return acl }),
		zklock.WithDialer(faults.Dial),
	)
	m := e.mutex(c, "/auth/lock")
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, m.Release(h))
	before := zklock.ConnOf(c).SessionID()
	marker, err := c.Create(context.Background(), e.root+"/auth-session", nil, zk.FlagEphemeral) // under acl, the Client's
	require.NoError(t, err)

	faults.Pause()
	waitState(t, c, 15*time.Second, zklock.StateLost)
	// The Client gives the session up before the servers expire it; the
	// session's ephemeral node tells when they have.
	require.Eventually(t, func() bool {
		ok, _, err := e.admin.Exists(marker)
		return err == nil && !ok
	}, 15*time.Second, 20*time.Millisecond, "the servers expire the session")
	faults.Resume()
	waitState(t, c, 20*time.Second, zklock.StateReconnected)
	require.NotEqual(t, before, zklock.ConnOf(c).SessionID(), "a new session")

	h, err = m.Acquire(context.Background())
	require.NoError(t, err, "the new session is authenticated")
	require.NoError(t, m.Release(h))
}

func TestStringers(t *testing.T) {
	t.Parallel()
	names := map[zklock.ConnectionState]string{
		zklock.StateConnected: "Connected", zklock.StateSuspended: "Suspended",
		zklock.StateReconnected: "Reconnected", zklock.StateLost: "Lost", zklock.StateClosed: "Closed",
		zklock.ConnectionState(42): "ConnectionState(42)",
	}
	for s, want := range names {
		assert.Equal(t, want, s.String())
	}
	assert.Equal(t, "StandardPolicy", zklock.StandardPolicy.String())
	assert.Equal(t, "SessionPolicy", zklock.SessionPolicy.String())
	assert.Equal(t, "ErrorPolicy(9)", zklock.ErrorPolicy(9).String())
}

func TestIntegration_MutexListenAndClose(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, err := zklock.Connect(e.servers)
	require.NoError(t, err)
	assert.Equal(t, zklock.StateConnected, c.State())
	states := make(chan zklock.ConnectionState, 10)
	stop := c.Listen(func(s zklock.ConnectionState) { states <- s })
	defer stop()

	holder := e.mutex(e.client(), "/close")
	h, err := holder.Acquire(context.Background())
	require.NoError(t, err)
	m, err := zklock.NewMutex(c, e.root+"/close")
	require.NoError(t, err)
	own, err := zklock.NewMutex(c, e.root+"/close-own")
	require.NoError(t, err)
	oh, err := own.Acquire(context.Background())
	require.NoError(t, err)
	got := acquireAsync(context.Background(), m)
	waitParticipants(t, holder, 2)

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "idempotent")
	a := await(t, got, 10*time.Second)
	require.ErrorIs(t, a.err, zklock.ErrClosed)
	waitDone(t, oh, 10*time.Second)
	require.ErrorIs(t, context.Cause(oh), zklock.ErrLockLost)
	require.ErrorIs(t, context.Cause(oh), zklock.ErrClosed)
	_, err = m.Acquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrClosed)
	assert.Equal(t, zklock.StateClosed, c.State())
	assert.Equal(t, zklock.StateConnected, await(t, states, 5*time.Second), "the current state comes first")
	assert.Equal(t, zklock.StateClosed, await(t, states, 5*time.Second), "then Close")
	assert.Equal(t, []string{holder.LockPath(h)}, waitParticipants(t, holder, 1))
	require.NoError(t, holder.Release(h))
}

// A listener added after connecting hears the current state first, then
// every change in order, Closed last.
func TestIntegration_ListenStartsWithCurrentState(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	c := e.client(zklock.WithDialer(faults.Dial))
	states := make(chan zklock.ConnectionState, 100)
	stop := c.Listen(func(s zklock.ConnectionState) { states <- s })
	defer stop()
	assert.Equal(t, zklock.StateConnected, await(t, states, 5*time.Second))

	faults.Cut()
	assert.Equal(t, zklock.StateSuspended, await(t, states, 10*time.Second))
	waitStates(t, states, 10*time.Second, zklock.StateReconnected)
	require.NoError(t, c.Close())
	waitStates(t, states, 5*time.Second, zklock.StateClosed)

	// A listener on a closed Client is never called.
	late := make(chan zklock.ConnectionState, 1)
	c.Listen(func(s zklock.ConnectionState) { late <- s })()
	select {
	case s := <-late:
		t.Fatalf("a listener on a closed Client was called with %v", s)
	default:
	}
}

// Ping is a health check in one call: nil while connected with a round
// trip, and otherwise an error saying why.
func TestIntegration_Ping(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	c := e.client(zklock.WithSessionTimeout(1500*time.Millisecond), zklock.WithErrorPolicy(zklock.SessionPolicy),
		zklock.WithDialer(faults.Dial))
	ping := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return c.Ping(ctx)
	}
	require.NoError(t, ping(5*time.Second))

	faults.Pause()
	err := ping(100 * time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no round trip while the server is silent")
	assert.Equal(t, "zklock: ping: context deadline exceeded", err.Error())
	waitState(t, c, 10*time.Second, zklock.StateSuspended, zklock.StateLost)
	err = ping(5 * time.Second)
	require.ErrorIs(t, err, zklock.ErrNotConnected)
	assert.Regexp(t, `^zklock: ping: (connection suspended for .*|session 0x[0-9a-f]+ lost)$`, err.Error())
	waitState(t, c, 10*time.Second, zklock.StateLost)
	require.ErrorIs(t, ping(5*time.Second), zklock.ErrNotConnected)
	assert.ErrorContains(t, ping(5*time.Second), "lost")

	faults.Resume()
	waitState(t, c, 20*time.Second, zklock.StateReconnected)
	require.NoError(t, ping(5*time.Second))
	require.NoError(t, c.Close())
	err = ping(5 * time.Second)
	require.ErrorIs(t, err, zklock.ErrClosed)
	assert.Equal(t, "zklock: ping: client closed", err.Error())
	require.ErrorIs(t, (*zklock.Client)(nil).Ping(context.Background()), zklock.ErrInvalidArgument)
	require.ErrorIs(t, c.Ping(nil), zklock.ErrInvalidArgument) //nolint:staticcheck // nil ctx on purpose
}

// A wrapped connection that has no session yet: Ping says so.
func TestPingBeforeFirstSession(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	conn, events, err := zk.Connect([]string{addr}, time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	defer conn.Close()
	c := zklock.NewClient(conn, events)
	defer c.Close()
	err = c.Ping(context.Background())
	require.ErrorIs(t, err, zklock.ErrNotConnected)
	assert.Equal(t, "zklock: ping: no session yet", err.Error())
}
