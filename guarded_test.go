package zklock_test

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// Hold.Multi (guarded.go): a write behind the hold's check, in the
// Client's namespace. A failed check is ErrLockLost; a failed op is the
// op's own error; a released Hold is ErrNotHeld. The three used to look
// alike (zk.ErrNoNode).
func TestIntegration_HoldMulti(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.create(e.root + "/ns/data")
	c := e.client(zklock.WithNamespace(e.root + "/ns"))
	m, err := zklock.NewMutex(c, "/lock")
	require.NoError(t, err)
	bg := context.Background()
	hd, err := m.Lock(bg)
	require.NoError(t, err)

	res, err := hd.Multi(bg,
		&zk.SetDataRequest{Path: "/data", Data: []byte("v1"), Version: -1},
		&zk.CreateRequest{Path: "/data/child", Data: []byte("c")})
	require.NoError(t, err)
	require.Len(t, res, 2, "one response per op of the caller's")
	assert.Equal(t, "/data/child", res[1].String, "paths relative to the namespace")
	data, _, err := e.admin.Get(e.root + "/ns/data")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data))

	_, err = hd.Multi(bg, &zk.SetDataRequest{Path: "/missing", Data: []byte("x"), Version: -1})
	require.ErrorIs(t, err, zk.ErrNoNode, "the op's own error")
	require.NotErrorIs(t, err, zklock.ErrLockLost)
	assert.ErrorContains(t, err, "/missing")

	_, err = hd.Multi(bg, "not an op")
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	_, err = hd.Multi(bg, &zk.SetDataRequest{Path: "data", Version: -1})
	require.ErrorIs(t, err, zklock.ErrInvalidPath)

	// The hold's node deleted behind its back: the check fails.
	require.NoError(t, e.admin.Delete(e.root+"/ns"+hd.Path(), -1))
	_, err = hd.Multi(bg, &zk.SetDataRequest{Path: "/data", Data: []byte("v2"), Version: -1})
	require.ErrorIs(t, err, zklock.ErrLockLost)
	data, _, err = e.admin.Get(e.root + "/ns/data")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data), "nothing written")
	require.ErrorIs(t, hd.Release(), zklock.ErrLockLost)

	// After a release: ErrNotHeld, before any request.
	hd, err = m.Lock(bg)
	require.NoError(t, err)
	require.NoError(t, hd.Release())
	_, err = hd.Multi(bg, &zk.SetDataRequest{Path: "/data", Data: []byte("v3"), Version: -1})
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	require.NoError(t, e.admin.Delete(e.root+"/ns/data/child", -1))
}

// A Lease is a Hold: Hold.Multi guards with the lease node.
func TestIntegration_LeaseHoldMulti(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.create(e.root + "/data")
	s, err := zklock.NewSemaphore(e.client(), e.root+"/sem", 2)
	require.NoError(t, err)
	l, err := s.Acquire(context.Background())
	require.NoError(t, err)
	tok, err := l.Hold().Token()
	require.NoError(t, err)
	assert.Equal(t, l.Token(), tok)
	_, err = l.Hold().Multi(context.Background(), &zk.SetDataRequest{Path: e.root + "/data", Data: []byte("x"), Version: -1})
	require.NoError(t, err)
	require.NoError(t, l.Release())
	_, err = l.Hold().Multi(context.Background(), &zk.SetDataRequest{Path: e.root + "/data", Version: -1})
	require.ErrorIs(t, err, zklock.ErrNotHeld)
}
