package zklock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// The Client's data operations read and write on its own session, within
// its namespace, on both transports: a Connect Client (zklock's session)
// and a NewClient one (go-zookeeper's).
func TestIntegration_DataOps(t *testing.T) {
	t.Parallel()
	e := setup(t)
	conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	clients := map[string]*zklock.Client{
		"connect":   e.client(zklock.WithNamespace(e.root[1:] + "/ns")),
		"newclient": zklock.NewClient(conn, events, zklock.WithNamespace(e.root[1:]+"/wrapped")),
	}
	t.Cleanup(func() { clients["newclient"].Close() }) // before conn's
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			require.NoError(t, c.EnsurePath(ctx, "/d"))
			p, err := c.Create(ctx, "/d/node", []byte("v1"), 0)
			require.NoError(t, err)
			assert.Equal(t, "/d/node", p, "paths returned are relative to the namespace")

			data, st, err := c.Get(ctx, "/d/node")
			require.NoError(t, err)
			assert.Equal(t, "v1", string(data))
			st2, err := c.Set(ctx, "/d/node", []byte("v2"), st.Version)
			require.NoError(t, err)
			assert.Equal(t, st.Version+1, st2.Version)
			_, err = c.Set(ctx, "/d/node", []byte("v3"), st.Version)
			require.ErrorIs(t, err, zk.ErrBadVersion)
			assert.Contains(t, err.Error(), "/d/node")

			seq, err := c.Create(ctx, "/d/seq-", nil, zk.FlagEphemeral|zk.FlagSequence)
			require.NoError(t, err)
			assert.Regexp(t, `^/d/seq-\d{10}$`, seq)
			children, _, err := c.Children(ctx, "/d")
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"node", seq[len("/d/"):]}, children)

			ok, _, err := c.Exists(ctx, "/d/node")
			require.NoError(t, err)
			assert.True(t, ok)
			_, err = c.Create(ctx, "/d/node", nil, 0)
			require.ErrorIs(t, err, zk.ErrNodeExists)
			require.ErrorIs(t, c.Delete(ctx, "/d", -1), zk.ErrNotEmpty)
			require.NoError(t, c.Delete(ctx, seq, -1))
			require.NoError(t, c.Delete(ctx, "/d/node", -1))
			ok, st, err = c.Exists(ctx, "/d/node")
			require.NoError(t, err)
			assert.False(t, ok)
			assert.Nil(t, st)
			_, _, err = c.Get(ctx, "/d/node")
			require.ErrorIs(t, err, zk.ErrNoNode)
			require.ErrorIs(t, c.Delete(ctx, "/d/node", -1), zk.ErrNoNode)
		})
	}
	// What the namespace hides is where it should be.
	ok, _, err := e.admin.Exists(e.root + "/ns/d")
	require.NoError(t, err)
	assert.True(t, ok)
}

// Bad input gets a typed error naming the path, and a closed Client
// ErrClosed; an ended context returns at once with its error.
func TestIntegration_DataOpsRefuse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	ctx := context.Background()
	_, _, err := c.Get(ctx, "no-slash")
	require.ErrorIs(t, err, zklock.ErrInvalidPath)
	assert.Contains(t, err.Error(), "no-slash")
	_, err = c.Create(ctx, e.root+"/x", nil, zk.FlagContainer)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is what this test is about
	_, _, err = c.Children(nil, "/") //nolint:staticcheck
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)

	done, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	_, _, err = c.Get(done, "/")
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), time.Second)

	require.NoError(t, c.Close())
	_, err = c.Create(ctx, e.root+"/x", nil, 0)
	require.ErrorIs(t, err, zklock.ErrClosed)
}

// A listing over ZooKeeper's 1 MiB request limit (the servers send such
// replies) reads whole, as go-zookeeper's did, and costs the Client's other
// holds nothing: a reply over the limit dropped the connection again and
// again, and a hold elsewhere was lost with it.
func TestIntegration_DataOpsLargeListing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	held, err := e.mutex(c, "/elsewhere").Lock(context.Background())
	require.NoError(t, err)
	defer held.Release()
	e.create(e.root + "/big")
	name := strings.Repeat("n", 1000)
	const n = 1100 // 1.1 MB of names
	ops := make([]any, 0, 100)
	for i := range n {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/big/%s%04d", e.root, name, i), Acl: zk.WorldACL(zk.PermAll)})
		if len(ops) == cap(ops) {
			_, err := e.admin.Multi(ops...)
			require.NoError(t, err)
			ops = ops[:0]
		}
	}
	children, _, err := c.Children(context.Background(), e.root+"/big")
	require.NoError(t, err)
	assert.Len(t, children, n)
	require.NoError(t, held.Err(), "a hold elsewhere outlives the large reply")
	assert.Equal(t, zklock.StateConnected, c.State())
}

// A sequential create of the namespace's root would make a sibling of the
// namespace's node, outside it: refused, naming the path.
func TestIntegration_DataOpsCreateRoot(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(zklock.WithNamespace(e.root[1:] + "/ns"))
	require.NoError(t, c.EnsurePath(context.Background(), "/"))
	_, err := c.Create(context.Background(), "/", nil, zk.FlagSequence)
	require.ErrorIs(t, err, zklock.ErrInvalidPath)
	children, _, err := e.admin.Children(e.root)
	require.NoError(t, err)
	assert.Equal(t, []string{"ns"}, children, "nothing made beside the namespace")
}
