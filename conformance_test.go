package zklock

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/internal/zktest"
)

// confCase is one case of the conformance suite: run asserts every
// outcome on one transport's env and notes it; only, if set, names the
// one transport the case is for.
type confCase struct {
	name string
	only string
	run  func(e *confEnv)
}

var conformanceCases = []confCase{
	{name: "create", run: confCreate},
	{name: "create-errors", run: confCreateErrors},
	{name: "create-invalid-flags", run: confCreateInvalidFlags},
	{name: "invalid-path", run: confInvalidPath},
	{name: "get-set", run: confGetSet},
	{name: "exists", run: confExists},
	{name: "children", run: confChildren},
	{name: "delete", run: confDelete},
	{name: "sync", run: confSync},
	{name: "stat", run: confStat},
	{name: "watch-get", run: confWatchGet},
	{name: "watch-exists", run: confWatchExists},
	{name: "watch-children", run: confWatchChildren},
	{name: "watch-failed", run: confWatchFailed},
	{name: "watch-close", run: confWatchClose},
	{name: "multi", run: confMulti},
	{name: "multi-failure", run: confMultiFailure},
	{name: "multi-bad-op", run: confMultiBadOp},
	{name: "acl-digest", run: confACLDigest},
	{name: "acl-invalid", run: confACLInvalid},
	{name: "session", run: confSession},
	{name: "closed", run: confClosed},
	{name: "watch-reconnect", run: confWatchReconnect},
	{name: "session-expiry", run: confSessionExpiry},
	{name: "ctx-cancelled", only: transportSess, run: confCtxCancelled},
	{name: "ctx-blackhole", only: transportSess, run: confCtxBlackhole},
}

// TestConformance runs every case on both transports of the engine's
// zkConn, NewClient's go-zookeeper connection (goConn) and Connect's own
// session (sessConn), against the shared real ZooKeeper: each outcome is
// asserted, and the two transcripts must be equal.
func TestConformance(t *testing.T) {
	servers := zktest.Shared(t).Servers()
	for _, c := range conformanceCases {
		t.Run(c.name, func(t *testing.T) {
			logs := map[string][]string{}
			for _, tr := range confTransports {
				t.Run(tr.name, func(t *testing.T) {
					if c.only != "" && c.only != tr.name {
						t.Skipf("for %s only", c.only)
					}
					e := newConfEnv(t, tr, servers)
					defer func() { logs[tr.name] = e.log }()
					c.run(e)
				})
			}
			if len(logs) == len(confTransports) {
				assert.Equal(t, logs[transportGo], logs[transportSess], "the transports disagree (-go-zookeeper +zksession)")
			}
		})
	}
}

var seqName = regexp.MustCompile(`-\d{10}$`)

func confCreate(e *confEnv) {
	ctx, t := context.Background(), e.t
	for _, c := range []struct {
		rel   string
		flags int32
	}{{"/p", 0}, {"/e", zk.FlagEphemeral}, {"/s-", zk.FlagSequence}, {"/es-", zk.FlagEphemeral | zk.FlagSequence}} {
		name, err := e.zc.Create(ctx, e.p(c.rel), []byte("data"+c.rel), c.flags, zk.WorldACL(zk.PermAll))
		e.expect("create "+c.rel, err, nil)
		e.note("create %s: name %s", c.rel, name)
		if c.flags&zk.FlagSequence != 0 {
			assert.Regexp(t, "^"+regexp.QuoteMeta(e.p(c.rel))+`\d{10}$`, name)
		} else {
			assert.Equal(t, e.p(c.rel), name)
		}
		data, st, err := e.zc.Get(ctx, name)
		e.expect("get "+c.rel, err, nil)
		require.NotNil(t, st)
		assert.Equal(t, "data"+c.rel, string(data))
		e.note("get %s: %q %s", c.rel, data, statName(st))
		wantOwner := int64(0)
		if c.flags&zk.FlagEphemeral != 0 {
			wantOwner = e.zc.SessionID()
		}
		assert.Equal(t, wantOwner, st.EphemeralOwner, "owner of %s", c.rel)
	}
	name, err := e.zc.CreateContainer(ctx, e.p("/c"), []byte("box"), zk.FlagContainer, zk.WorldACL(zk.PermAll))
	e.expect("create container /c", err, nil)
	assert.Equal(t, e.p("/c"), name)
	e.note("create container /c: name %s", name)
	_, st, err := e.zc.Get(ctx, name)
	e.expect("get /c", err, nil)
	require.NotNil(t, st)
	assert.Zero(t, st.EphemeralOwner, "a container's owner: ZooKeeper shows clients 0")
	e.note("get /c: %s", statName(st))
}

func confCreateErrors(e *confEnv) {
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/x"), nil, 0, acl)
	e.expect("create /x", err, nil)
	name, err := e.zc.Create(ctx, e.p("/x"), nil, 0, acl)
	e.expect("create /x again", err, zk.ErrNodeExists)
	e.note("create /x again: name %q", name)
	_, err = e.zc.Create(ctx, e.p("/none/x"), nil, 0, acl)
	e.expect("create under a missing parent", err, zk.ErrNoNode)
	_, err = e.zc.Create(ctx, e.p("/eph"), nil, zk.FlagEphemeral, acl)
	e.expect("create /eph", err, nil)
	_, err = e.zc.Create(ctx, e.p("/eph/child"), nil, 0, acl)
	e.expect("create under an ephemeral", err, zk.ErrNoChildrenForEphemerals)
	_, err = e.zc.CreateContainer(ctx, e.p("/x"), nil, zk.FlagContainer, acl)
	e.expect("create container over /x", err, zk.ErrNodeExists)
	_, err = e.zc.CreateContainer(ctx, e.p("/none/c"), nil, zk.FlagContainer, acl)
	e.expect("create container under a missing parent", err, zk.ErrNoNode)
}

// confCreateInvalidFlags: flags that are not a create mode. Both
// transports refuse them before sending anything, but go-zookeeper's
// parseCreateMode error for an unknown value wraps no sentinel.
func confCreateInvalidFlags(e *confEnv) {
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/f99"), nil, 99, acl)
	e.expectSomeErr("create with flags 99", err)
	_, err = e.zc.Create(ctx, e.p("/ttl"), nil, zk.FlagTTL, acl)
	e.expect("create with the TTL flag", err, zk.ErrInvalidFlags)
	_, err = e.zc.CreateContainer(ctx, e.p("/c0"), nil, 0, acl)
	e.expect("create container with flags 0", err, zk.ErrInvalidFlags)
	_, err = e.zc.CreateContainer(ctx, e.p("/c99"), nil, 99, acl)
	e.expectSomeErr("create container with flags 99", err)
	// go-zookeeper sends a create (not createContainer) in container
	// mode, and ZooKeeper makes the container.
	name, err := e.zc.Create(ctx, e.p("/c4"), nil, zk.FlagContainer, acl)
	e.expect("create with the container flag", err, nil)
	assert.Equal(e.t, e.p("/c4"), name)
	ok, _, err := e.admin.Exists(e.p("/c4"))
	require.NoError(e.t, err)
	assert.True(e.t, ok, "create with the container flag made no node")
	for _, rel := range []string{"/f99", "/ttl", "/c0", "/c99"} {
		ok, _, err := e.admin.Exists(e.p(rel))
		require.NoError(e.t, err)
		assert.False(e.t, ok, "%s was created", rel)
	}
}

// confInvalidPath: paths that are not a znode's. go-zookeeper refuses
// them before sending anything (zk.ErrInvalidPath), except in a multi,
// which it does not check.
func confInvalidPath(e *confEnv) {
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	for _, p := range []string{"", "noslash", e.p("/trailing/"), e.p("//double"), e.p("/./dot")} {
		_, err := e.zc.Create(ctx, p, nil, 0, acl)
		e.expect("create "+p, err, zk.ErrInvalidPath)
		_, _, err = e.zc.Get(ctx, p)
		e.expect("get "+p, err, zk.ErrInvalidPath)
		_, err = e.zc.Multi(ctx, &zk.CheckVersionRequest{Path: p, Version: -1})
		e.note("multi check %s: %s", p, errName(err))
	}
}

func confGetSet(e *confEnv) {
	ctx, t := context.Background(), e.t
	_, err := e.zc.Create(ctx, e.p("/n"), []byte("a"), 0, zk.WorldACL(zk.PermAll))
	e.expect("create /n", err, nil)
	data, st, err := e.zc.Get(ctx, e.p("/n"))
	e.expect("get /n", err, nil)
	require.NotNil(t, st)
	assert.Equal(t, "a", string(data))
	assert.Equal(t, int32(0), st.Version)
	st, err = e.zc.Set(ctx, e.p("/n"), []byte("bb"), 0)
	e.expect("set /n version 0", err, nil)
	e.note("set /n version 0: %s", statName(st))
	require.NotNil(t, st)
	assert.Equal(t, int32(1), st.Version)
	assert.Equal(t, int32(2), st.DataLength)
	st, err = e.zc.Set(ctx, e.p("/n"), []byte("c"), 0)
	e.expect("set /n version 0 again", err, zk.ErrBadVersion)
	e.expectStatOnErr("set /n version 0 again", st)
	st, err = e.zc.Set(ctx, e.p("/n"), []byte("ccc"), -1)
	e.expect("set /n version -1", err, nil)
	require.NotNil(t, st)
	assert.Equal(t, int32(2), st.Version)
	data, st, err = e.zc.Get(ctx, e.p("/n"))
	e.expect("get /n after sets", err, nil)
	e.note("get /n after sets: %q %s", data, statName(st))
	assert.Equal(t, "ccc", string(data))
	_, err = e.zc.Set(ctx, e.p("/n"), nil, -1)
	e.expect("set /n to no data", err, nil)
	data, _, err = e.zc.Get(ctx, e.p("/n"))
	e.expect("get /n with no data", err, nil)
	assert.Empty(t, data)
	e.note("get /n with no data: len %d", len(data))
	data, st, err = e.zc.Get(ctx, e.p("/absent"))
	e.expect("get /absent", err, zk.ErrNoNode)
	e.note("get /absent: data %q", data)
	e.expectStatOnErr("get /absent", st)
	st, err = e.zc.Set(ctx, e.p("/absent"), nil, -1)
	e.expect("set /absent", err, zk.ErrNoNode)
	e.expectStatOnErr("set /absent", st)
}

func confExists(e *confEnv) {
	ctx, t := context.Background(), e.t
	_, err := e.zc.Create(ctx, e.p("/n"), []byte("abc"), 0, zk.WorldACL(zk.PermAll))
	e.expect("create /n", err, nil)
	ok, st, err := e.zc.Exists(ctx, e.p("/n"))
	e.expect("exists /n", err, nil)
	assert.True(t, ok)
	require.NotNil(t, st)
	assert.Equal(t, int32(3), st.DataLength)
	e.note("exists /n: %v %s", ok, statName(st))
	ok, st, err = e.zc.Exists(ctx, e.p("/absent"))
	e.expect("exists /absent", err, nil)
	assert.False(t, ok)
	if st != nil && *st != (zk.Stat{}) {
		t.Errorf("exists /absent: stat %+v, want nil or zero", *st)
	}
	e.note("exists /absent: %v", ok)
}

func confChildren(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/k"), nil, 0, acl)
	e.expect("create /k", err, nil)
	for _, c := range []string{"/k/b", "/k/a", "/k/c"} {
		_, err = e.zc.Create(ctx, e.p(c), nil, 0, acl)
		e.expect("create "+c, err, nil)
	}
	kids, st, err := e.zc.Children(ctx, e.p("/k"))
	e.expect("children /k", err, nil)
	slices.Sort(kids)
	assert.Equal(t, []string{"a", "b", "c"}, kids)
	require.NotNil(t, st)
	assert.Equal(t, int32(3), st.NumChildren)
	e.note("children /k: %v %s", kids, statName(st))
	kids, _, err = e.zc.Children(ctx, e.p("/k/a"))
	e.expect("children /k/a", err, nil)
	assert.Empty(t, kids)
	e.note("children /k/a: %d", len(kids))
	kids, st, err = e.zc.Children(ctx, e.p("/absent"))
	e.expect("children /absent", err, zk.ErrNoNode)
	e.note("children /absent: %v", kids)
	e.expectStatOnErr("children /absent", st)
}

func confDelete(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/d"), nil, 0, acl)
	e.expect("create /d", err, nil)
	_, err = e.zc.Create(ctx, e.p("/d/kid"), nil, 0, acl)
	e.expect("create /d/kid", err, nil)
	_, err = e.zc.Set(ctx, e.p("/d/kid"), []byte("x"), 0)
	e.expect("set /d/kid", err, nil)
	e.expect("delete /d/kid version 0", e.zc.Delete(ctx, e.p("/d/kid"), 0), zk.ErrBadVersion)
	e.expect("delete /d, not empty", e.zc.Delete(ctx, e.p("/d"), -1), zk.ErrNotEmpty)
	e.expect("delete /d/kid version 1", e.zc.Delete(ctx, e.p("/d/kid"), 1), nil)
	e.expect("delete /d/kid again", e.zc.Delete(ctx, e.p("/d/kid"), -1), zk.ErrNoNode)
	e.expect("delete /d version -1", e.zc.Delete(ctx, e.p("/d"), -1), nil)
	ok, _, err := e.zc.Exists(ctx, e.p("/d"))
	e.expect("exists /d", err, nil)
	assert.False(t, ok)
}

func confSync(e *confEnv) {
	ctx := context.Background()
	p, err := e.zc.Sync(ctx, e.root)
	e.expect("sync <root>", err, nil)
	assert.Equal(e.t, e.root, p)
	e.note("sync <root>: %s", p)
	p, err = e.zc.Sync(ctx, e.p("/absent"))
	e.expect("sync /absent", err, nil) // ZooKeeper syncs any path
	assert.Equal(e.t, e.p("/absent"), p)
	e.note("sync /absent: %s", p)
}

// confStat: the same node's Stat, read through either transport, is the
// same in every field; an ephemeral node's owner is its session.
func confStat(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/n"), []byte("one"), 0, acl)
	e.expect("create /n", err, nil)
	_, err = e.zc.Create(ctx, e.p("/n/eph"), []byte("x"), zk.FlagEphemeral, acl)
	e.expect("create /n/eph", err, nil)
	set, err := e.zc.Set(ctx, e.p("/n"), []byte("three"), 0)
	e.expect("set /n", err, nil)
	require.NotNil(t, set)
	e.note("set /n: %s", statName(set))
	readers := map[string]zkConn{}
	for _, tr := range confTransports {
		readers[tr.name], _ = tr.open(t, e.servers, confOpts{})
	}
	for name, zc := range readers {
		_, got, err := zc.Get(ctx, e.p("/n"))
		require.NoError(t, err)
		assert.Equal(t, *set, *got, "Get /n through %s: the Stat Set returned", name)
		_, ex, err := zc.Exists(ctx, e.p("/n"))
		require.NoError(t, err)
		assert.Equal(t, *set, *ex, "Exists /n through %s", name)
		_, ch, err := zc.Children(ctx, e.p("/n"))
		require.NoError(t, err)
		assert.Equal(t, *set, *ch, "Children /n through %s", name)
		_, eph, err := zc.Get(ctx, e.p("/n/eph"))
		require.NoError(t, err)
		assert.Equal(t, e.zc.SessionID(), eph.EphemeralOwner, "owner of /n/eph through %s", name)
		assert.NotZero(t, eph.Czxid)
		assert.NotZero(t, eph.Ctime)
		assert.Equal(t, eph.Czxid, eph.Mzxid)
		assert.Equal(t, eph.Czxid, set.Pzxid, "the parent's Pzxid is its child's creation")
	}
}

func confWatchGet(e *confEnv) {
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/n"), []byte("a"), 0, acl)
	e.expect("create /n", err, nil)
	_, _, w1, err := e.zc.GetW(ctx, e.p("/n"))
	e.expect("getw /n", err, nil)
	_, _, w2, err := e.zc.GetW(ctx, e.p("/n"))
	e.expect("getw /n again", err, nil)
	e.quiet("getw /n", w1)
	_, err = e.zc.Set(ctx, e.p("/n"), []byte("b"), -1)
	e.expect("set /n", err, nil)
	ev := e.nextEvent("getw /n, set", w1)
	assert.Equal(e.t, zk.EventNodeDataChanged, ev.Type)
	assert.Equal(e.t, zk.StateSyncConnected, ev.State, "a notification's state: the server's SyncConnected")
	assert.Equal(e.t, e.p("/n"), ev.Path)
	e.nextEvent("second getw /n, set", w2)
	_, _, w3, err := e.zc.GetW(ctx, e.p("/n"))
	e.expect("getw /n after set", err, nil)
	e.expect("delete /n", e.zc.Delete(ctx, e.p("/n"), -1), nil)
	ev = e.nextEvent("getw /n, delete", w3)
	assert.Equal(e.t, zk.EventNodeDeleted, ev.Type)
	assert.Equal(e.t, e.p("/n"), ev.Path)
}

func confWatchExists(e *confEnv) {
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	ok, _, w, err := e.zc.ExistsW(ctx, e.p("/n"))
	e.expect("existsw /n, absent", err, nil)
	assert.False(e.t, ok)
	e.quiet("existsw /n", w)
	_, err = e.zc.Create(ctx, e.p("/n"), nil, 0, acl)
	e.expect("create /n", err, nil)
	ev := e.nextEvent("existsw /n, create", w)
	assert.Equal(e.t, zk.EventNodeCreated, ev.Type)
	assert.Equal(e.t, zk.StateSyncConnected, ev.State)
	assert.Equal(e.t, e.p("/n"), ev.Path)
	ok, _, w, err = e.zc.ExistsW(ctx, e.p("/n"))
	e.expect("existsw /n, present", err, nil)
	assert.True(e.t, ok)
	_, err = e.zc.Set(ctx, e.p("/n"), []byte("x"), -1)
	e.expect("set /n", err, nil)
	ev = e.nextEvent("existsw /n, set", w)
	assert.Equal(e.t, zk.EventNodeDataChanged, ev.Type)
	_, _, w, err = e.zc.ExistsW(ctx, e.p("/n"))
	e.expect("existsw /n, present again", err, nil)
	e.expect("delete /n", e.zc.Delete(ctx, e.p("/n"), -1), nil)
	ev = e.nextEvent("existsw /n, delete", w)
	assert.Equal(e.t, zk.EventNodeDeleted, ev.Type)
}

func confWatchChildren(e *confEnv) {
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/k"), nil, 0, acl)
	e.expect("create /k", err, nil)
	_, _, w, err := e.zc.ChildrenW(ctx, e.p("/k"))
	e.expect("childrenw /k", err, nil)
	e.quiet("childrenw /k", w)
	_, err = e.zc.Set(ctx, e.p("/k"), []byte("data changes are not child changes"), -1)
	e.expect("set /k", err, nil)
	_, err = e.zc.Create(ctx, e.p("/k/a"), nil, 0, acl)
	e.expect("create /k/a", err, nil)
	ev := e.nextEvent("childrenw /k, create child", w)
	assert.Equal(e.t, zk.EventNodeChildrenChanged, ev.Type)
	assert.Equal(e.t, zk.StateSyncConnected, ev.State)
	assert.Equal(e.t, e.p("/k"), ev.Path)
	_, _, w, err = e.zc.ChildrenW(ctx, e.p("/k"))
	e.expect("childrenw /k again", err, nil)
	e.expect("delete /k/a", e.zc.Delete(ctx, e.p("/k/a"), -1), nil)
	ev = e.nextEvent("childrenw /k, delete child", w)
	assert.Equal(e.t, zk.EventNodeChildrenChanged, ev.Type)
	_, _, w, err = e.zc.ChildrenW(ctx, e.p("/k"))
	e.expect("childrenw /k, third", err, nil)
	e.expect("delete /k", e.zc.Delete(ctx, e.p("/k"), -1), nil)
	ev = e.nextEvent("childrenw /k, delete /k", w)
	assert.Equal(e.t, zk.EventNodeDeleted, ev.Type)
	assert.Equal(e.t, e.p("/k"), ev.Path)
}

// confWatchFailed: a watched read that fails sets no watch.
func confWatchFailed(e *confEnv) {
	ctx := context.Background()
	_, st, w, err := e.zc.GetW(ctx, e.p("/absent"))
	e.expect("getw /absent", err, zk.ErrNoNode)
	e.note("getw /absent: channel nil=%v", w == nil)
	e.expectStatOnErr("getw /absent", st)
	assert.Nil(e.t, w)
	_, st, w, err = e.zc.ChildrenW(ctx, e.p("/absent"))
	e.expect("childrenw /absent", err, zk.ErrNoNode)
	e.note("childrenw /absent: channel nil=%v", w == nil)
	e.expectStatOnErr("childrenw /absent", st)
	assert.Nil(e.t, w)
}

// confWatchClose: a watch still set when its connection closes ends with
// EventNotWatching and ErrClosing, then its channel closes.
func confWatchClose(e *confEnv) {
	ctx := context.Background()
	_, err := e.zc.Create(ctx, e.p("/n"), nil, 0, zk.WorldACL(zk.PermAll))
	e.expect("create /n", err, nil)
	zc, closeZC := e.open(confOpts{})
	_, _, w, err := zc.GetW(ctx, e.p("/n"))
	e.expect("getw /n", err, nil)
	_, _, cw, err := zc.ChildrenW(ctx, e.p("/n"))
	e.expect("childrenw /n", err, nil)
	closeZC()
	ev := e.nextEvent("getw /n, close", w)
	assert.Equal(e.t, zk.EventNotWatching, ev.Type)
	assert.ErrorIs(e.t, ev.Err, zk.ErrClosing)
	assert.Equal(e.t, zk.StateDisconnected, ev.State)
	assert.Equal(e.t, e.p("/n"), ev.Path)
	e.nextEvent("childrenw /n, close", cw)
}

func confMulti(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	for _, rel := range []string{"/set", "/del"} {
		_, err := e.zc.Create(ctx, e.p(rel), nil, 0, acl)
		e.expect("create "+rel, err, nil)
	}
	res, err := e.zc.Multi(ctx,
		&zk.CreateRequest{Path: e.p("/new"), Data: []byte("n"), Acl: acl},
		&zk.CreateRequest{Path: e.p("/seq-"), Acl: acl, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: e.p("/set"), Data: []byte("s"), Version: 0},
		&zk.DeleteRequest{Path: e.p("/del"), Version: 0},
		&zk.CheckVersionRequest{Path: e.p("/set"), Version: 1},
	)
	e.expect("multi", err, nil)
	e.noteMulti("multi", res)
	require.Len(t, res, 5)
	assert.Equal(t, e.p("/new"), res[0].String)
	assert.Regexp(t, seqName, res[1].String)
	require.NotNil(t, res[2].Stat, "a set's result has its Stat")
	assert.Equal(t, int32(1), res[2].Stat.Version)
	for i, r := range res {
		assert.NoError(t, r.Error, "op %d", i)
		if i != 2 {
			assert.Nil(t, r.Stat, "op %d: only a set's result has a Stat", i)
		}
	}
	data, _, err := e.zc.Get(ctx, e.p("/new"))
	e.expect("get /new", err, nil)
	assert.Equal(t, "n", string(data))
	ok, _, err := e.zc.Exists(ctx, e.p("/del"))
	e.expect("exists /del", err, nil)
	assert.False(t, ok)
	res, err = e.zc.Multi(ctx)
	e.expect("empty multi", err, nil)
	e.note("empty multi: %d results", len(res))
	assert.Empty(t, res)
}

// noteMulti notes each result of a multi.
func (e *confEnv) noteMulti(what string, res []zk.MultiResponse) {
	e.note("%s: %d results", what, len(res))
	for i, r := range res {
		s := r.String
		if seqName.MatchString(s) {
			s = seqName.ReplaceAllString(s, "-<seq>")
		}
		e.note("%s: op %d: string %q %s err %s", what, i, s, statName(r.Stat), multiErrName(r.Error))
	}
}

// multiErrName is errName, but for an error code go-zookeeper has no
// sentinel for (RuntimeInconsistency: an op after the failing one), which
// it reports as a bare "unknown error: -2", and zklock's session as
// zk.ErrUnknown wrapped with the code's name.
func multiErrName(err error) string {
	n := errName(err)
	if n == "ErrUnknown" || strings.HasPrefix(n, "unmatched") {
		return "an error of a code with no sentinel"
	}
	return n
}

// confMultiFailure: a failed transaction applies nothing; it returns the
// failing op's error, with per-op results: nil before it, its error, and
// an error for each op after it.
func confMultiFailure(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/x"), nil, 0, acl)
	e.expect("create /x", err, nil)
	res, err := e.zc.Multi(ctx,
		&zk.CreateRequest{Path: e.p("/new"), Acl: acl},
		&zk.SetDataRequest{Path: e.p("/x"), Data: []byte("s"), Version: -1},
		&zk.CheckVersionRequest{Path: e.p("/x"), Version: 7},
		&zk.DeleteRequest{Path: e.p("/x"), Version: -1},
	)
	e.expect("multi with a wrong check", err, zk.ErrBadVersion)
	e.noteMulti("multi with a wrong check", res)
	require.Len(t, res, 4)
	assert.NoError(t, res[0].Error)
	assert.NoError(t, res[1].Error)
	assert.ErrorIs(t, res[2].Error, zk.ErrBadVersion)
	assert.Error(t, res[3].Error, "an op after the failing one")
	t.Logf("%s: the op after the failing one: %v", e.tr.name, res[3].Error)
	for i, r := range res {
		assert.Nil(t, r.Stat, "op %d of a failed multi: no Stat", i)
		assert.Empty(t, r.String, "op %d of a failed multi: no name", i)
	}
	ok, _, err := e.zc.Exists(ctx, e.p("/new"))
	e.expect("exists /new", err, nil)
	assert.False(t, ok, "a failed multi created /new")
	_, st, err := e.zc.Get(ctx, e.p("/x"))
	e.expect("get /x", err, nil)
	assert.Equal(t, int32(0), st.Version, "a failed multi set /x")
	res, err = e.zc.Multi(ctx, &zk.CreateRequest{Path: e.p("/x"), Acl: acl})
	e.expect("multi create /x again", err, zk.ErrNodeExists)
	e.noteMulti("multi create /x again", res)
}

// confMultiBadOp: an op of a type go-zookeeper has no request for fails
// the call before anything is sent (the errors differ: logged).
func confMultiBadOp(e *confEnv) {
	res, err := e.zc.Multi(context.Background(),
		&zk.CreateRequest{Path: e.p("/new"), Acl: zk.WorldACL(zk.PermAll)}, "not an op")
	e.expectSomeErr("multi with a string op", err)
	e.note("multi with a string op: %d results", len(res))
	ok, _, err := e.admin.Exists(e.p("/new"))
	require.NoError(e.t, err)
	assert.False(e.t, ok)
}

// confACLDigest: a node under a digest ACL answers NoAuth to a session
// without the credentials, and its data to one with them.
func confACLDigest(e *confEnv) {
	ctx, t := context.Background(), e.t
	creds := confUser + ":" + confPassword
	acl := zk.DigestACL(zk.PermAll, confUser, confPassword)
	_, err := e.zc.Create(ctx, e.p("/secret"), []byte("s"), 0, acl)
	e.expect("create /secret, digest ACL", err, nil)
	_, err = e.zc.Create(ctx, e.p("/mine"), []byte("m"), 0, zk.AuthACL(zk.PermAll))
	e.expect("create /mine, auth ACL, no credentials", err, zk.ErrInvalidACL)
	_, _, err = e.zc.Get(ctx, e.p("/secret"))
	e.expect("get /secret, no credentials", err, zk.ErrNoAuth)
	_, err = e.zc.Set(ctx, e.p("/secret"), nil, -1)
	e.expect("set /secret, no credentials", err, zk.ErrNoAuth)
	_, _, err = e.zc.Children(ctx, e.p("/secret"))
	e.expect("children /secret, no credentials", err, zk.ErrNoAuth)
	_, err = e.zc.Create(ctx, e.p("/secret/kid"), nil, 0, zk.WorldACL(zk.PermAll))
	e.expect("create /secret/kid, no credentials", err, zk.ErrNoAuth)
	ok, _, err := e.zc.Exists(ctx, e.p("/secret"))
	e.expect("exists /secret, no credentials", err, nil)
	assert.True(t, ok, "exists needs no permission")
	authed, _ := e.open(confOpts{auth: []string{creds}})
	data, _, err := authed.Get(ctx, e.p("/secret"))
	e.expect("get /secret, credentials", err, nil)
	assert.Equal(t, "s", string(data))
	_, err = authed.Create(ctx, e.p("/mine"), []byte("m"), 0, zk.AuthACL(zk.PermAll))
	e.expect("create /mine, auth ACL, credentials", err, nil)
	_, _, err = e.zc.Get(ctx, e.p("/mine"))
	e.expect("get /mine, no credentials", err, zk.ErrNoAuth)
	wrong, _ := e.open(confOpts{auth: []string{confUser + ":wrong"}})
	_, _, err = wrong.Get(ctx, e.p("/secret"))
	e.expect("get /secret, wrong password", err, zk.ErrNoAuth)
}

func confACLInvalid(e *confEnv) {
	ctx := context.Background()
	_, err := e.zc.Create(ctx, e.p("/none"), nil, 0, nil)
	e.expect("create with no ACL", err, zk.ErrInvalidACL)
	_, err = e.zc.Create(ctx, e.p("/bad"), nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "nosuch", ID: "x"}})
	e.expect("create with an unknown scheme", err, zk.ErrInvalidACL)
	res, err := e.zc.Multi(ctx, &zk.CreateRequest{Path: e.p("/m"), Acl: nil})
	e.expect("multi create with no ACL", err, zk.ErrInvalidACL)
	e.noteMulti("multi create with no ACL", res)
}

// confSession: a connection has a session, which owns its ephemeral
// nodes, and closing it deletes them.
func confSession(e *confEnv) {
	ctx, t := context.Background(), e.t
	zc, closeZC := e.open(confOpts{})
	sid := zc.SessionID()
	assert.NotZero(t, sid)
	assert.NotEqual(t, e.zc.SessionID(), sid, "two connections, two sessions")
	_, err := zc.Create(ctx, e.p("/eph"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	e.expect("create /eph", err, nil)
	_, st, err := e.zc.Exists(ctx, e.p("/eph"))
	e.expect("exists /eph", err, nil)
	require.NotNil(t, st)
	assert.Equal(t, sid, st.EphemeralOwner)
	closeZC()
	ok, _, err := e.admin.Exists(e.p("/eph"))
	require.NoError(t, err)
	assert.False(t, ok, "the closed session's ephemeral node is still there once Close returned")
	e.note("after close: /eph exists=%v", ok)
}

// confClosed: every call on a closed connection fails at once: with
// zk.ErrConnectionClosed on go-zookeeper (its requests after Close), with
// zk.ErrClosing on zklock's session (which the engine tests for).
func confClosed(e *confEnv) {
	want := map[string]error{transportGo: zk.ErrConnectionClosed, transportSess: zk.ErrClosing}[e.tr.name]
	ctx, acl := context.Background(), zk.WorldACL(zk.PermAll)
	zc, closeZC := e.open(confOpts{})
	closeZC()
	p := e.p("/n")
	calls := []struct {
		name string
		call func() error
	}{
		{"create", func() error { _, err := zc.Create(ctx, p, nil, 0, acl); return err }},
		{"create container", func() error { _, err := zc.CreateContainer(ctx, p, nil, zk.FlagContainer, acl); return err }},
		{"get", func() error { _, _, err := zc.Get(ctx, p); return err }},
		{"getw", func() error { _, _, _, err := zc.GetW(ctx, p); return err }},
		{"exists", func() error { _, _, err := zc.Exists(ctx, p); return err }},
		{"existsw", func() error { _, _, _, err := zc.ExistsW(ctx, p); return err }},
		{"children", func() error { _, _, err := zc.Children(ctx, p); return err }},
		{"childrenw", func() error { _, _, _, err := zc.ChildrenW(ctx, p); return err }},
		{"set", func() error { _, err := zc.Set(ctx, p, nil, -1); return err }},
		{"delete", func() error { return zc.Delete(ctx, p, -1) }},
		{"multi", func() error { _, err := zc.Multi(ctx, &zk.CheckVersionRequest{Path: p, Version: -1}); return err }},
		{"sync", func() error { _, err := zc.Sync(ctx, p); return err }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call()
		if !errors.Is(err, want) {
			e.t.Errorf("%s after close: %v, want %v", c.name, err, want)
		}
		e.note("%s after close: fails", c.name)
		assert.Less(e.t, time.Since(start), time.Second, "%s after close", c.name)
	}
}

// confCtxCancelled: zklock's session returns ctx.Err() at once for a
// call whose context has ended, and sends nothing.
func confCtxCancelled(e *confEnv) {
	t, acl := e.t, zk.WorldACL(zk.PermAll)
	assert.True(t, e.zc.Native())
	assert.False(t, goConn{}.Native(), "go-zookeeper's calls ignore ctx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.zc.Create(ctx, e.p("/n"), nil, 0, acl)
	e.expect("create, cancelled", err, context.Canceled)
	assert.Equal(t, context.Canceled, err, "ctx.Err() itself")
	_, _, err = e.zc.Get(ctx, e.root)
	e.expect("get, cancelled", err, context.Canceled)
	_, err = e.zc.Multi(ctx, &zk.CreateRequest{Path: e.p("/m"), Acl: acl})
	e.expect("multi, cancelled", err, context.Canceled)
	_, _, w, err := e.zc.ExistsW(ctx, e.p("/w"))
	e.expect("existsw, cancelled", err, context.Canceled)
	assert.Nil(t, w)
	e.expect("delete, cancelled", e.zc.Delete(ctx, e.root, -1), context.Canceled)
	for _, rel := range []string{"/n", "/m"} {
		ok, _, err := e.admin.Exists(e.p(rel))
		require.NoError(t, err)
		assert.False(t, ok, "a cancelled call created %s", rel)
	}
}

// confCtxBlackhole: a call the server never answers returns when its
// context's deadline passes, with context.DeadlineExceeded; once the
// network is back, the session serves the calls behind it.
func confCtxBlackhole(e *confEnv) {
	ctx, t := context.Background(), e.t
	zc, _, link, sessions := e.openLinked()
	_, err := zc.Create(ctx, e.p("/n"), []byte("a"), 0, zk.WorldACL(zk.PermAll))
	e.expect("create /n", err, nil)
	link.Pause() // a blackhole: connections stay open, nothing passes
	for _, d := range []time.Duration{300 * time.Millisecond, 600 * time.Millisecond} {
		start := time.Now() // before the deadline is set: took >= d holds exactly
		dctx, cancel := context.WithTimeout(ctx, d)
		_, _, err := zc.Get(dctx, e.p("/n"))
		took := time.Since(start)
		cancel()
		e.expect("get in the blackhole", err, context.DeadlineExceeded)
		assert.GreaterOrEqual(t, took, d)
		assert.Less(t, took, d+time.Second, "a blocked call outlived its deadline")
	}
	link.Cut() // Restore: what the pause held is dropped; reconnect
	link.Resume()
	awaitSession(t, sessions)
	data, _, err := zc.Get(ctx, e.p("/n"))
	e.expect("get after restore", err, nil)
	assert.Equal(t, "a", string(data))
	_, err = zc.Set(ctx, e.p("/n"), []byte("b"), 0)
	e.expect("set after restore", err, nil)
}

// confWatchReconnect: watches outlive a lost connection; changes made
// while it was down fire them once the session is resumed.
func confWatchReconnect(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	for _, rel := range []string{"/n", "/k"} {
		_, err := e.zc.Create(ctx, e.p(rel), nil, 0, acl)
		e.expect("create "+rel, err, nil)
	}
	zc, _, link, sessions := e.openLinked()
	sid := zc.SessionID()
	_, _, wData, err := zc.GetW(ctx, e.p("/n"))
	e.expect("getw /n", err, nil)
	_, _, wExists, err := zc.ExistsW(ctx, e.p("/new"))
	e.expect("existsw /new", err, nil)
	_, _, wKids, err := zc.ChildrenW(ctx, e.p("/k"))
	e.expect("childrenw /k", err, nil)
	link.Pause() // a blackhole: the notifications are lost
	_, err = e.admin.Set(e.p("/n"), []byte("x"), -1)
	require.NoError(t, err)
	_, err = e.admin.Create(e.p("/new"), nil, 0, acl)
	require.NoError(t, err)
	_, err = e.admin.Create(e.p("/k/kid"), nil, 0, acl)
	require.NoError(t, err)
	e.quiet("getw /n while down", wData)
	link.Cut() // and Resume: the session resumes on a new connection
	link.Resume()
	awaitSession(t, sessions)
	assert.Equal(t, sid, zc.SessionID(), "the same session")
	ev := e.nextEvent("getw /n, set while down", wData)
	assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	ev = e.nextEvent("existsw /new, created while down", wExists)
	assert.Equal(t, zk.EventNodeCreated, ev.Type)
	ev = e.nextEvent("childrenw /k, child created while down", wKids)
	assert.Equal(t, zk.EventNodeChildrenChanged, ev.Type)
}

// confSessionExpiry: when the session expires, its ephemeral nodes go
// and its watches end with EventNotWatching and zk.ErrSessionExpired.
// Then go-zookeeper opens a new session by itself, where zklock's session
// stays expired (the Client replaces it).
func confSessionExpiry(e *confEnv) {
	ctx, t, acl := context.Background(), e.t, zk.WorldACL(zk.PermAll)
	_, err := e.zc.Create(ctx, e.p("/n"), nil, 0, acl)
	e.expect("create /n", err, nil)
	zc, _, link, sessions := e.openLinked()
	sid := zc.SessionID()
	_, err = zc.Create(ctx, e.p("/eph"), nil, zk.FlagEphemeral, acl)
	e.expect("create /eph", err, nil)
	_, _, w, err := zc.GetW(ctx, e.p("/n"))
	e.expect("getw /n", err, nil)
	_, _, wAbsent, err := zc.ExistsW(ctx, e.p("/absent"))
	e.expect("existsw /absent", err, nil)
	ectx, cancel := context.WithTimeout(ctx, confWait)
	defer cancel()
	require.NoError(t, link.ExpireSession(ectx))
	ok, _, err := e.admin.Exists(e.p("/eph"))
	require.NoError(t, err)
	assert.False(t, ok, "the expired session's ephemeral node")
	for _, wt := range []struct {
		what string
		ch   <-chan zk.Event
	}{{"getw /n, expiry", w}, {"existsw /absent, expiry", wAbsent}} {
		what := wt.what
		ev := e.nextEvent(what, wt.ch)
		assert.Equal(t, zk.EventNotWatching, ev.Type, what)
		assert.ErrorIs(t, ev.Err, zk.ErrSessionExpired, what)
		assert.Equal(t, zk.StateDisconnected, ev.State, "%s: go-zookeeper's state for an ended watch", what)
	}
	if e.tr.name == transportGo {
		awaitSession(t, sessions)
		assert.NotEqual(t, sid, zc.SessionID(), "a new session")
		_, _, err = zc.Get(ctx, e.root)
		assert.NoError(t, err, "go-zookeeper: a call in the new session")
		return
	}
	_, _, err = zc.Get(ctx, e.root)
	assert.ErrorIs(t, err, zk.ErrSessionExpired, "zksession: a call after expiry")
}
