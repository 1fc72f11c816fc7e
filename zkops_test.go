package zklock_test

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// A create whose response is lost is found again by its protected prefix:
// no second node, no orphan. go-zookeeper reports the loss either as
// ErrConnectionClosed or, when the request's write failed, as the socket's
// own error; the server may have read the request either way.
func TestIntegration_ProtectedCreateLostResponse(t *testing.T) {
	t.Parallel()
	for name, lost := range map[string]error{"closed": zk.ErrConnectionClosed, "broken-pipe": brokenPipe} {
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			e.create(e.root + "/lost-response") // so the first create is the one that loses its response
			c, f := e.faultClient()
			m := e.mutex(c, "/lost-response")
			f.setCreate(lostResponse(f, lost))
			h, err := m.Acquire(context.Background())
			require.NoError(t, err)
			assert.EqualValues(t, 1, f.creates.Load(), "the retry found the node instead of creating another")
			children := e.children(e.root + "/lost-response")
			require.Len(t, children, 1)
			assert.Equal(t, path.Base(m.LockPath(h)), children[0])
			require.NoError(t, m.Release(h))
		})
	}
}

// CURATOR-498: the node found by prefix belongs to another (dying) session.
// It is deleted, and a new node with a new UUID is created in ours.
func TestIntegration_ProtectedCreateFindsOtherSessionsNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	other := zktest.ConnectT(t, e.servers)
	e.create(e.root + "/stale-session")
	c, f := e.faultClient()
	m := e.mutex(c, "/stale-session")
	var stale string
	f.setCreate(func(_ context.Context, _ zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
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
	assert.Equal(t, zklock.ConnOf(c).SessionID(), st.EphemeralOwner)
	require.NoError(t, m.Release(h))
}

// When the retry policy gives up on a create whose outcome is unknown, the
// node it may have made is found and deleted in the background.
func TestIntegration_ProtectedCreateGivesUp(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, f := e.faultClient(zklock.WithRetryPolicy(zklock.RetryNTimes{N: 0}))
	m := e.mutex(c, "/gives-up")
	f.setCreate(func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		if _, err := real.Create(ctx, p, data, flags, acl); err != nil {
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
// node the create made is deleted. The hook plays the session's part: the
// server has applied the create, and its reply is dropped as the call
// returns when ctx ends.
func TestIntegration_ProtectedCreateAbandoned(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.create(e.root + "/abandoned-create")
	c, f := e.faultClient()
	m := e.mutex(c, "/abandoned-create")
	created := make(chan string, 1)
	f.setCreate(func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		name, _ := real.Create(ctx, p, data, flags, acl)
		created <- name
		<-ctx.Done()
		return "", ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	got := acquireAsync(ctx, m)
	require.NotEmpty(t, await(t, created, 10*time.Second))
	cancel()
	a := await(t, got, 5*time.Second)
	require.ErrorIs(t, a.err, context.Canceled)
	require.Eventually(t, func() bool { return len(e.children(e.root+"/abandoned-create")) == 0 },
		10*time.Second, 10*time.Millisecond, "the late node is deleted")
}

// A release whose delete fails on the network returns, and the delete goes
// on in the background until the node is gone.
func TestIntegration_GuaranteedDelete(t *testing.T) {
	t.Parallel()
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

// Operations that fail with a connection loss are retried under the retry
// policy, and fail with the connection error once it gives up.
func TestIntegration_ConnectionLossRetries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, f := e.faultClient(zklock.WithRetryPolicy(zklock.RetryNTimes{N: 2, Sleep: 10 * time.Millisecond}))
	m := e.mutex(c, "/retries")
	f.mu.Lock()
	f.listFails, f.listFailErr = 2, brokenPipe
	f.mu.Unlock()
	h, err := m.Acquire(context.Background())
	require.NoError(t, err, "two failures are within the policy, a failed write among them")
	parts, err := m.Participants(context.Background())
	require.NoError(t, err)
	assert.Len(t, parts, 1)

	f.mu.Lock()
	f.listFails, f.listFailErr = 3, nil
	f.mu.Unlock()
	_, err = m.Participants(context.Background())
	require.ErrorIs(t, err, zk.ErrConnectionClosed, "three failures exhaust it")
	assert.ErrorContains(t, err, e.root+"/retries")
	require.NoError(t, m.Release(h))
}

// Lock parents are CONTAINER nodes: the server reaps them once empty, and
// fencing tokens still increase across the re-creation, though the
// sequence numbers start again.
func TestIntegration_MutexContainerParentsReaped(t *testing.T) {
	t.Parallel()
	e := setupKit(t, kit.StartT(t, kit.Config{ContainerCheckInterval: 100 * time.Millisecond}))
	m := e.mutex(e.client(), "/reap/lock")
	bg := context.Background()

	var lastToken int64
	for round := range 2 {
		h, err := m.Acquire(bg)
		require.NoError(t, err)
		tok, err := m.Token(h)
		require.NoError(t, err)
		assert.Greater(t, tok, lastToken, "round %d", round)
		lastToken = tok
		assert.Regexp(t, `-lock-0000000000$`, path.Base(m.LockPath(h)), "a new container starts its sequence at 0")
		for _, p := range []string{e.root + "/reap", e.root + "/reap/lock"} {
			_, st, err := e.admin.Exists(p)
			require.NoError(t, err)
			// go-zk's Stat has no mode; containers report no ephemeral owner.
			assert.Zero(t, st.EphemeralOwner, p)
		}
		require.NoError(t, m.Release(h))
		require.Eventually(t, func() bool {
			ok, _, err := e.admin.Exists(e.root + "/reap")
			return err == nil && !ok
		}, 20*time.Second, 20*time.Millisecond, "empty containers are reaped")
	}
}

func TestProtectedNames(t *testing.T) {
	t.Parallel()
	for range 100 {
		id := zklock.NewUUIDForTest()
		require.Len(t, id, 36)
		assert.Equal(t, strings.ToLower(id), id)
		assert.Equal(t, byte('4'), id[14], "version 4")
		assert.Contains(t, "89ab", string(id[19]), "RFC 4122 variant")
		assert.True(t, zklock.IsProtected("_c_"+id+"-lock-0000000001"))
	}
	assert.False(t, zklock.IsProtected("_c_"+strings.Repeat("a", 36)+"-lock-"))
	assert.False(t, zklock.IsProtected("lock-0000000001"))
	assert.False(t, zklock.IsProtected("_c_0123456789abcdef0123456789abcdef-lock-0000000005"))
	assert.False(t, zklock.IsProtected(uuidA))
}

// protectedShape is the exact shape of a protected name: "_c_", a UUID in
// its 36-character form, "-", and at least one more character.
var protectedShape = regexp.MustCompile(`^_c_([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})-((?s).+)$`)

// FuzzProtectedName: parsing any name never panics; a name built from a
// uuid, a lock name and a sequence in Curator's "_c_<uuid>-" format parses
// back to the same parts (the sequence through the driver's sort key);
// IsProtected agrees with the parser; and a name parses as protected
// exactly when it has that shape.
func FuzzProtectedName(f *testing.F) {
	f.Add("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000001", make([]byte, 16), "lock-", int32(1))
	f.Add("_c_0123456789abcdef0123456789abcdef-lock-0000000005", []byte("0123456789abcdef"), "__READ__", int32(-2147483648))
	f.Add("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-", []byte{0xff}, "lease-", int32(2147483647))
	f.Add("lock-0000000001", []byte{}, "", int32(0))
	f.Add("_c_53345F98-9423-4E0C-A7B5-9F819E3EC2E1-x", []byte("\x00"), "__WRIT__", int32(-1))
	f.Fuzz(func(t *testing.T, name string, raw []byte, lockName string, seq int32) {
		id, rest, ok := zklock.ParseProtected(name)
		// A unique name is Curator's protected one or kazoo's, never both.
		kazoo := zklock.KazooProtected(name)
		if ok && kazoo || zklock.IsProtected(name) != (ok || kazoo) {
			t.Fatalf("ParseProtected(%q) ok=%v, KazooProtected=%v, IsProtected=%v", name, ok, kazoo, zklock.IsProtected(name))
		}
		m := protectedShape.FindStringSubmatch(name)
		if ok != (m != nil) {
			t.Fatalf("ParseProtected(%q) ok=%v, shape matches=%v", name, ok, m != nil)
		}
		if ok && (id != m[1] || rest != m[2] || "_c_"+id+"-"+rest != name) {
			t.Fatalf("ParseProtected(%q) = %q, %q", name, id, rest)
		}
		if !ok && (id != "" || rest != name) {
			t.Fatalf("ParseProtected(%q) = %q, %q, false", name, id, rest)
		}

		// Build a name the way Curator and ZooKeeper do, and take it apart.
		var b [16]byte
		copy(b[:], raw)
		uuid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		seqText := fmt.Sprintf("%010d", seq) // ZooKeeper's format, wrapping negative
		built := "_c_" + uuid + "-" + lockName + seqText
		id, rest, ok = zklock.ParseProtected(built)
		if !ok || id != uuid || rest != lockName+seqText {
			t.Fatalf("ParseProtected(%q) = %q, %q, %v", built, id, rest, ok)
		}
		if lockName != "" && !strings.Contains(lockName[1:]+seqText, lockName) { // ours is the last occurrence
			if got := (zklock.StandardDriver{}).SortKey(built, lockName); got != seqText {
				t.Fatalf("SortKey(%q, %q) = %q, want the sequence %q", built, lockName, got, seqText)
			}
		}
	})
}

// The connection drops between a create and its reply, on the wire, with
// one server: the server made the node, the client never heard. The
// acquire finds its node after the reconnect instead of making a second
// one. (go-zk's own CreateProtectedEphemeralSequential can fail here with
// ErrNoServer: with one server it fails requests sent before the redial.)
func TestIntegration_ProtectedCreateCutOnTheWire(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := zktest.NewFaultsT(t, e.servers)
	c := e.client(zklock.WithDialer(faults.Dial))
	sid := zklock.ConnOf(c).SessionID()
	ctx := context.Background()
	// The parents exist, so the first create is the lock node's.
	e.create(e.root + "/cut")
	e.create(e.root + "/sem/locks")
	e.create(e.root + "/sem/leases")

	m := e.mutex(c, "/cut")
	cut := faults.CutOnCreate()
	h, err := m.Acquire(ctx)
	require.NoError(t, err)
	await(t, cut, 10*time.Second) // the mutex's create was cut
	assert.Equal(t, []string{path.Base(m.LockPath(h))}, e.children(e.root+"/cut"))
	require.NoError(t, m.Release(h))
	assert.Empty(t, e.children(e.root+"/cut"))

	s, err := zklock.NewSemaphore(c, e.root+"/sem", 2)
	require.NoError(t, err)
	cut = faults.CutOnCreate() // the internal lock's create
	l, err := s.Acquire(ctx)
	require.NoError(t, err)
	await(t, cut, 10*time.Second) // the semaphore's create was cut
	assert.Equal(t, []string{l.Node()}, e.children(e.root+"/sem/leases"))
	// The internal lock is given up in the background.
	require.Eventually(t, func() bool { return len(e.children(e.root+"/sem/locks")) == 0 },
		10*time.Second, 5*time.Millisecond, "the internal lock was not released")
	require.NoError(t, l.Release())
	assert.Empty(t, e.children(e.root+"/sem/leases"))

	assert.Equal(t, sid, zklock.ConnOf(c).SessionID(), "the session outlived the cuts")
}

// CURATOR-498 on an ensemble, with local sessions (a session opened on a
// follower is that follower's alone until its first ephemeral create makes
// it global), and no fault client. Another Client holds a Mutex; a opens a
// session on f, a follower whose link to the leader lags, and queues. f
// forwards a's create, behind the upgrade of a's session, to the leader,
// where they arrive a lag later; a's connection to f drops at once, so it
// never hears back. Its next connection goes to g, which asks the leader:
// the leader has not heard of the session yet, so a is told it expired.
// Its next one goes to f again, with a new session, and looks for its node
// by the protection prefix, after a sync: the node is there, alive, of the
// old session, which no client will touch again. a must delete it at once
// and queue a node of its new session. One that adopted it would wait on a
// node that goes when the old session expires (its 20s timeout, counted
// from the upgrade), and lose its place in line then. Once the holder
// resigns, a acquires before b, who queued after it, and they never hold
// at once.
func TestIntegration_EnsembleProtectedCreateFindsOldSessionsNode(t *testing.T) {
	t.Parallel()
	// g must hear from the leader that a's session is unknown before the
	// leader hears of it from f: a lag after a's create.
	const lag = 1500 * time.Millisecond
	bg := context.Background()
	ens := startLaggingEnsemble(t)
	e := setupOn(t, ens.upToDate())
	plan := newDialPlan(t, ens.servers)
	name := "/moved-session"
	p := e.root + name
	holder, err := e.mutex(e.client(), name).Lock(bg)
	require.NoError(t, err)
	waitShown(t, ens.onF(t), holder.Path(), true)
	ens.lag(t, lag)

	plan.route(ens.f, ens.g, ens.f)
	ca := e.clientTo(ens.servers, // three addresses, which the session tries in turn
		zklock.WithSessionTimeout(20*time.Second),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: 30 * time.Second, Sleep: 100 * time.Millisecond}),
		zklock.WithDialer(plan.Dial),
	)
	oldSession := zklock.ConnOf(ca).SessionID()
	cut := plan.proxies[ens.f].CutOnRequest(100*time.Millisecond, 1, 15) // create, create2
	a := holdAsync(bg, e.mutex(ca, name))
	await(t, cut, 10*time.Second)
	require.Eventually(t, func() bool {
		s := zklock.ConnOf(ca).SessionID()
		return s != 0 && s != oldSession
	}, 10*time.Second, 5*time.Millisecond, "a is told its session expired and opens a new one, before the leader hears of the old one")

	// The old session's create reaches the leader a lag after it was sent.
	var old string
	require.Eventually(t, func() bool {
		old = otherChild(e, p, holder.Path())
		return old != ""
	}, 10*time.Second, 5*time.Millisecond, "the old session's create reaches the leader")
	require.Equal(t, oldSession, e.owner(old), "the node is the old session's")
	require.Eventually(t, func() bool { return e.owner(old) == 0 },
		10*time.Second, 5*time.Millisecond, "the old session's node is deleted at once, not left to expire with its session")
	ens.lag(t, 0)

	var mine string
	require.Eventually(t, func() bool {
		mine = otherChild(e, p, holder.Path())
		return mine != "" && e.owner(mine) == zklock.ConnOf(ca).SessionID()
	}, 10*time.Second, 5*time.Millisecond, "a queues a node of its new session")
	t.Logf("dials %v; a's sessions 0x%x, then 0x%x", plan.dials(), oldSession, zklock.ConnOf(ca).SessionID())
	b := holdAsync(bg, e.mutex(e.client(), name))
	waitChildren(t, e, p, 3)

	require.NoError(t, holder.Release())
	ga := await(t, a, 10*time.Second)
	require.NoError(t, ga.err)
	assert.Equal(t, mine, ga.hd.Path(), "a holds the node it queued")
	select {
	case gb := <-b:
		t.Fatalf("b holds beside a: %v", gb.err)
	default:
	}
	require.NoError(t, ga.hd.Release())
	gb := await(t, b, 10*time.Second)
	require.NoError(t, gb.err)
	require.NoError(t, gb.hd.Release())
	// The admin's server may not have applied b's delete yet (sync), and
	// a delete sent while b's connection moved goes on in the background.
	require.Eventually(t, func() bool {
		_, _ = e.admin.Sync(p)
		left, _, err := e.admin.Children(p)
		return err == nil && len(left) == 0
	}, 10*time.Second, 10*time.Millisecond, "no node is left")
}

// otherChild returns the path of a child of p other than the node at not,
// or "" if there is none.
func otherChild(e *env, p, not string) string {
	e.t.Helper()
	for _, ch := range e.children(p) {
		if p+"/"+ch != not {
			return p + "/" + ch
		}
	}
	return ""
}
