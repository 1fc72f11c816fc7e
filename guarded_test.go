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

// One rule for paths (see "Paths" in the package doc): under a namespace,
// EnsurePath and Hold.Multi take paths relative to it, and the checks
// that CheckOp makes carry the full path for Conn().Multi; Hold.Multi
// takes such a check as it is. EnsurePath creates the missing parents,
// persistent and with the Client's ACL, leaves existing nodes alone, and
// refuses bad input with typed errors.
func TestIntegration_PathsOneRule(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ns := e.root + "/ns"
	c := e.client(zklock.WithNamespace(ns))
	bg := context.Background()

	require.NoError(t, c.EnsurePath(bg, "/inventory/sku/42"))
	require.NoError(t, c.EnsurePath(bg, "/inventory/sku/42"), "an existing path is fine")
	require.NoError(t, c.EnsurePath(bg, "/inventory/sku"), "and so is an existing ancestor")
	_, stat, err := e.admin.Get(ns + "/inventory/sku/42")
	require.NoError(t, err, "created under the namespace")
	assert.Zero(t, stat.EphemeralOwner)
	_, stat, err = e.admin.Get(ns + "/inventory")
	require.NoError(t, err)
	_, cstat, err := e.admin.Exists(ns + "/inventory")
	require.NoError(t, err)
	assert.Equal(t, stat.Czxid, cstat.Czxid)

	m, err := zklock.NewMutex(c, "/locks/sku-42")
	require.NoError(t, err)
	hd, err := m.Lock(bg)
	require.NoError(t, err)
	defer hd.Release()
	check, err := hd.CheckOp()
	require.NoError(t, err)
	assert.Equal(t, ns+hd.Path(), check.Path, "CheckOp's path is the full path")
	mcheck, err := m.CheckOp(hd.Context())
	require.NoError(t, err)
	res, err := hd.Multi(bg, check, mcheck,
		&zk.CreateRequest{Path: "/inventory/sku/42/stock", Data: []byte("7")})
	require.NoError(t, err, "Hold.Multi takes CheckOp's full path as it is, and relative paths")
	require.Len(t, res, 3)
	assert.Equal(t, "/inventory/sku/42/stock", res[2].String)
	data, _, err := e.admin.Get(ns + "/inventory/sku/42/stock")
	require.NoError(t, err)
	assert.Equal(t, "7", string(data))
	// A raw Multi on the session (Conn().Multi for a NewClient Client)
	// takes CheckOp as it is, beside other full paths.
	_, err = zklock.ConnOf(c).Multi(bg, check, &zk.SetDataRequest{Path: ns + "/inventory/sku/42/stock", Data: []byte("6"), Version: -1})
	require.NoError(t, err, "CheckOp goes into a raw Multi, with full paths")

	// Another hold's check, made for a raw Multi, goes into Hold.Multi as
	// it is too: one transaction guarded by both holds.
	m43, err := zklock.NewMutex(c, "/locks/sku-43")
	require.NoError(t, err)
	other, err := m43.Lock(bg)
	require.NoError(t, err)
	defer other.Release()
	ocheck, err := other.CheckOp()
	require.NoError(t, err)
	_, err = hd.Multi(bg, ocheck, &zk.SetDataRequest{Path: "/inventory/sku/42/stock", Data: []byte("5"), Version: -1})
	require.NoError(t, err, "another hold's CheckOp")

	err = c.EnsurePath(bg, "inventory")
	require.ErrorIs(t, err, zklock.ErrInvalidPath)
	assert.Contains(t, err.Error(), `"inventory"`)
	//lint:ignore SA1012 a nil context on purpose: EnsurePath must refuse it
	require.ErrorIs(t, c.EnsurePath(nil, "/x"), zklock.ErrInvalidArgument)
	require.ErrorIs(t, (*zklock.Client)(nil).EnsurePath(bg, "/x"), zklock.ErrInvalidArgument)
	closed := e.client()
	require.NoError(t, closed.Close())
	require.ErrorIs(t, closed.EnsurePath(bg, "/x"), zklock.ErrClosed)
}

// EnsurePath gives the nodes it creates the Client's ACL, and names the
// node it may not create.
func TestIntegration_EnsurePathACL(t *testing.T) {
	t.Parallel()
	e := setup(t)
	acl := zk.DigestACL(zk.PermAll, "owner", "pw")
	c := e.client(zklock.WithAuth("digest", []byte("owner:pw")), zklock.WithACL(func(string) []zk.ACL { return acl }))
	bg := context.Background()
	e.create(e.root + "/private") // by the admin, open: the ACL is for what EnsurePath makes
	require.NoError(t, c.EnsurePath(bg, e.root+"/private/a"))
	got, _, err := e.admin.GetACL(e.root + "/private/a")
	require.NoError(t, err)
	assert.Equal(t, acl, got)

	stranger := e.client()
	err = stranger.EnsurePath(bg, e.root+"/private/a/b")
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Contains(t, err.Error(), "create "+e.root+"/private/a/b: ")

	// A node that exists is left as it is, even under a parent the Client
	// may not create in (the servers check that right before they look).
	e.create(e.root + "/ro/x")
	_, err = e.admin.SetACL(e.root+"/ro", zk.WorldACL(zk.PermRead), -1)
	require.NoError(t, err)
	t.Cleanup(func() { e.admin.SetACL(e.root+"/ro", zk.WorldACL(zk.PermAll), -1) })
	require.NoError(t, stranger.EnsurePath(bg, e.root+"/ro/x"))
	require.NoError(t, stranger.EnsurePath(bg, e.root+"/ro"))
	require.ErrorIs(t, stranger.EnsurePath(bg, e.root+"/ro/y"), zk.ErrNoAuth)
}
