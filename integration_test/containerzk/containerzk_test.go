package containerzk_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/integration_test/containerzk"
	"github.com/zklock/zklock/internal/zktest"
)

// A standalone server in a container: a client creates and reads a node;
// stopping the container disconnects it; starting the container again (same
// host port, same data) resumes the same session, ephemeral node included.
func TestIntegration_ContainerStandalone(t *testing.T) {
	c := startCluster(t, zktest.Config{})
	require.Len(t, c.Servers(), 1)
	assert.Equal(t, containerzk.BackendName, c.Backend())
	servers := c.Servers()
	port, err := c.PublishedPort(0)
	require.NoError(t, err)

	cl := connect(t, servers, 10*time.Second)
	_, err = cl.Create("/standalone", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = cl.Create("/standalone/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	data, _, err := cl.Get("/standalone")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	session := cl.SessionID()

	require.NoError(t, timed(t, "Stop", 0, c.Stop))
	cl.waitState(t, zk.StateDisconnected, 15*time.Second)
	require.NoError(t, timed(t, "Stop (stopped)", 0, c.Stop), "stopping a stopped server is a no-op")

	require.NoError(t, timed(t, "Start", 0, c.Start))
	assert.Equal(t, servers, c.Servers())
	port2, err := c.PublishedPort(0)
	require.NoError(t, err)
	assert.Equal(t, port, port2, "docker start must keep the published host port")

	cl.waitState(t, zk.StateHasSession, 15*time.Second)
	assert.Equal(t, session, cl.SessionID(), "the session resumes")
	data, _, err = cl.Get("/standalone")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	ok, _, err := cl.Exists("/standalone/eph")
	require.NoError(t, err)
	assert.True(t, ok, "the session's ephemeral node survives the restart")

	// Kill, then start again: the data is still there.
	require.NoError(t, timed(t, "Kill", 0, c.Kill))
	cl.waitState(t, zk.StateDisconnected, 15*time.Second)
	require.NoError(t, timed(t, "Kill (stopped)", 0, c.Kill), "killing a stopped server is a no-op")
	require.NoError(t, timed(t, "Start", 0, c.Start))
	cl.waitState(t, zk.StateHasSession, 15*time.Second)
	data, _, err = cl.Get("/standalone")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
}

// A 3-server ensemble on a Docker network serves, keeps serving with one
// server stopped, and takes it back.
func TestIntegration_ContainerEnsemble(t *testing.T) {
	c := startCluster(t, zktest.Config{Size: 3})
	servers := c.Servers()
	require.Len(t, servers, 3)
	assert.NotEmpty(t, c.Network())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	modes := map[string]int{}
	for _, s := range servers {
		m, err := zktest.Mode(ctx, s)
		require.NoError(t, err)
		modes[m]++
	}
	assert.Equal(t, map[string]int{"leader": 1, "follower": 2}, modes)

	cl := connect(t, servers, 10*time.Second)
	_, err := cl.Create("/ensemble", []byte("v1"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	// Stop the leader: the two others elect a new one and serve.
	leader := -1
	for i, s := range servers {
		if m, err := zktest.Mode(ctx, s); err == nil && m == "leader" {
			leader = i
		}
	}
	require.GreaterOrEqual(t, leader, 0)
	require.NoError(t, timed(t, "Stop", leader, c.Stop))
	rest := slices.Delete(slices.Clone(servers), leader, leader+1)
	for _, s := range rest {
		require.NoError(t, zktest.WaitServing(ctx, s), "server %s after stopping the leader", s)
	}
	only := connect(t, rest, 10*time.Second)
	_, err = only.Set("/ensemble", []byte("v2"), -1)
	require.NoError(t, err)
	// The first client (on whichever server) carries on too.
	require.Eventually(t, func() bool {
		d, _, err := cl.Get("/ensemble")
		return err == nil && string(d) == "v2"
	}, 30*time.Second, 50*time.Millisecond)

	// Back to three; the restarted server has caught up.
	require.NoError(t, timed(t, "Start", leader, c.Start))
	back := connect(t, []string{servers[leader]}, 10*time.Second)
	_, err = back.Sync("/ensemble")
	require.NoError(t, err)
	d, _, err := back.Get("/ensemble")
	require.NoError(t, err)
	assert.Equal(t, "v2", string(d))

	// Kill a follower: the ensemble still serves.
	victim := (leader + 1) % 3
	require.NoError(t, timed(t, "Kill", victim, c.Kill))
	_, err = only.Set("/ensemble", []byte("v3"), -1)
	require.NoError(t, err)
	require.NoError(t, timed(t, "Start", victim, c.Start))
	for i, s := range servers {
		m, err := zktest.Mode(ctx, s)
		require.NoError(t, err, "server %d", i)
		assert.Contains(t, []string{"leader", "follower"}, m)
	}
}

// ContainerCheckInterval reaches the server: an emptied container node is
// deleted within a few seconds, where the server default is one minute.
func TestIntegration_ContainerCheckInterval(t *testing.T) {
	c := startCluster(t, zktest.Config{ContainerCheckInterval: 200 * time.Millisecond})
	cl := connect(t, c.Servers(), 10*time.Second)
	_, err := cl.CreateContainer("/box", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = cl.Create("/box/item", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.NoError(t, cl.Delete("/box/item", -1))
	start := time.Now()
	require.Eventually(t, func() bool {
		ok, _, err := cl.Exists("/box")
		return err == nil && !ok
	}, 15*time.Second, 50*time.Millisecond, "the emptied container node is reaped")
	t.Logf("container node reaped %v after its last child was deleted", time.Since(start).Round(time.Millisecond))
}

// zktest.Start (and so StartT and Shared) uses the registered container
// backend before the local process backend.
func TestIntegration_ZktestStartUsesContainer(t *testing.T) {
	requireBackend(t)
	c := zktest.StartT(t, zktest.Config{})
	assert.Equal(t, containerzk.BackendName, c.Backend())
	shared := zktest.Shared(t)
	assert.Equal(t, containerzk.BackendName, shared.Backend())
	cl := connect(t, shared.Servers(), 10*time.Second)
	_, err := cl.Create("/shared-probe", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}

// timed runs op(i), logging how long it took.
func timed(t *testing.T, name string, i int, op func(int) error) error {
	t.Helper()
	start := time.Now()
	err := op(i)
	t.Logf("%s(%d): %v", name, i, time.Since(start).Round(time.Millisecond))
	return err
}
