package main

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// listJSON is list's documented JSON, spelled out here so that a renamed
// field fails the test.
type listJSON struct {
	Path      string     `json:"path"`
	Recipe    string     `json:"recipe"`
	Holders   int        `json:"holders"`
	Waiters   int        `json:"waiters"`
	AgeMS     int64      `json:"age_ms"`
	HeldSince *time.Time `json:"held_since"`
	Owners    []string   `json:"owners"`
	Error     string     `json:"error"`
}

// listJSON runs list -json with args and decodes its output.
func (e *env) listJSON(args ...string) []listJSON {
	e.t.Helper()
	r := e.run(append([]string{"list", "-json"}, args...)...)
	require.Equal(e.t, 0, r.code, r.stderr)
	var got []listJSON
	require.NoError(e.t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	return got
}

// paths lists the locks' paths.
func paths(locks []listJSON) []string {
	out := []string{}
	for _, l := range locks {
		out = append(out, l.Path)
	}
	return out
}

// ctime is the creation time of the node at p, as ZooKeeper stamped it.
func (e *env) ctime(p string) time.Time {
	e.t.Helper()
	_, stat, err := e.admin.Get(p)
	require.NoError(e.t, err)
	return time.UnixMilli(stat.Ctime)
}

// list finds the mutexes, read/write locks and semaphores under a prefix,
// at any depth, a lock below another lock too, with their holders and
// the oldest holder's age.
func TestList(t *testing.T) {
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte("owner-a")))
	var releases []func()
	held := map[string]string{} // lock path: its oldest holder's node
	mutex := func(p string) {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		held[p] = m.LockPath(h)
		releases = append(releases, func() { require.NoError(t, m.Release(h)) })
	}
	mutex(e.root + "/a/m")
	mutex(e.root + "/a/m/sub") // a lock below a lock
	rw, err := zklock.NewReadWriteLock(c, e.root+"/b/rw")
	require.NoError(t, err)
	hr, err := rw.ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	held[e.root+"/b/rw"] = rw.ReadLock().LockPath(hr)
	s, err := zklock.NewSemaphore(c, e.root+"/c/d/sem", 3)
	require.NoError(t, err)
	leases, err := s.AcquireN(ctx(t), 2)
	require.NoError(t, err)
	held[e.root+"/c/d/sem"] = leases[0].Path()
	m2, err := zklock.NewMutex(e.client(), e.root+"/a/m")
	require.NoError(t, err)
	w := e.queue(e.root+"/a/m", 3, func(ctx context.Context) error { _, err := m2.Acquire(ctx); return err })

	start := time.Now()
	got := e.listJSON(e.root)
	took := time.Since(start)
	for i, l := range got {
		since := e.ctime(held[l.Path])
		if assert.NotNil(t, l.HeldSince, l.Path) {
			assert.True(t, since.Equal(*l.HeldSince), "%s: held since %v, want %v", l.Path, l.HeldSince, since)
		}
		// The age is taken while list runs: at least the age at its start,
		// at most the age at its end.
		assert.GreaterOrEqual(t, l.AgeMS, start.Sub(since).Milliseconds()-1, l.Path)
		assert.LessOrEqual(t, l.AgeMS, start.Add(took).Sub(since).Milliseconds()+1, l.Path)
		got[i].AgeMS, got[i].HeldSince = 0, nil
	}
	assert.Equal(t, []listJSON{
		{Path: e.root + "/a/m", Recipe: "mutex", Holders: 1, Waiters: 1, Owners: []string{"owner-a"}},
		{Path: e.root + "/a/m/sub", Recipe: "mutex", Holders: 1, Owners: []string{"owner-a"}},
		{Path: e.root + "/b/rw", Recipe: "rwlock", Holders: 1, Owners: []string{"owner-a"}},
		{Path: e.root + "/c/d/sem", Recipe: "semaphore", Holders: 2, Owners: []string{"owner-a", "owner-a"}},
	}, got)
	r := e.run("list", e.root+"/a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `PATH\s+RECIPE\s+HOLDERS\s+WAITERS\s+AGE\s+OWNERS\n`, r.stdout)
	assert.Regexp(t, e.root+`/a/m\s+mutex\s+1\s+1\s+[0-9.]+m?s\s+owner-a\n`, r.stdout)
	assert.NotContains(t, r.stdout, "/b/rw")

	w.stop(t)
	require.NoError(t, s.ReturnAll(leases))
	require.NoError(t, rw.ReadLock().Release(hr))
	for i := len(releases) - 1; i >= 0; i-- {
		releases[i]()
	}
	r = e.run("list", e.root+"/a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "no locks with participants under "+e.root+"/a")
	r = e.run("list", e.root+"/nosuch")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no node "+e.root+"/nosuch")
	r = e.run("list", "rel")
	assert.Equal(t, 2, r.code, r.stderr)
}

// -waiting lists the locks with waiters only; -older-than D those whose
// holder has held longer than D: all held locks for 0, none for an hour.
// Flags combine.
func TestListFilters(t *testing.T) {
	e := setup(t)
	busy, idle := e.root+"/busy", e.root+"/idle"
	c := e.client()
	for _, p := range []string{busy, idle} {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, m.Release(h)) })
	}
	m, err := zklock.NewMutex(e.client(), busy)
	require.NoError(t, err)
	w := e.queue(busy, 2, func(ctx context.Context) error { _, err := m.Acquire(ctx); return err })
	defer w.stop(t)

	assert.Equal(t, []string{busy, idle}, paths(e.listJSON(e.root)))
	assert.Equal(t, []string{busy}, paths(e.listJSON("-waiting", e.root)))
	assert.Equal(t, []string{busy, idle}, paths(e.listJSON("-older-than", "0s", e.root)))
	assert.Equal(t, []string{}, paths(e.listJSON("-older-than", "1h", e.root)))
	assert.Equal(t, []string{}, paths(e.listJSON("-waiting", "-older-than", "1h", e.root)))

	r := e.run("list", "-waiting", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, busy+`\s+mutex\s+1\s+1\s`, r.stdout)
	assert.NotContains(t, r.stdout, idle)
	r = e.run("list", "-waiting", "-older-than", "1h", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "no locks under "+e.root+" with waiters, held longer than 1h0m0s\n", r.stdout)
	r = e.run("list", "-older-than", "-1s", e.root)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "zklock list: -older-than -1s: want a duration of 0 or more")
}

// A filter's bounds: held exactly D is not longer than D; a lock without
// a holder has held for no time.
func TestListKeep(t *testing.T) {
	f := newListFlags()
	_, _, err := f.parse([]string{"-older-than", "2s", "/a"}, argPath)
	require.NoError(t, err)
	since := time.Now()
	assert.False(t, f.keep(lockSummary{AgeMS: 2000, HeldSince: &since}))
	assert.True(t, f.keep(lockSummary{AgeMS: 2001, HeldSince: &since}))
	assert.False(t, f.keep(lockSummary{Waiters: 3}))
	f.waiting = true
	assert.False(t, f.keep(lockSummary{AgeMS: 2001, HeldSince: &since}))
	assert.True(t, f.keep(lockSummary{AgeMS: 2001, HeldSince: &since, Waiters: 1}))
}

// list's help names the recipes it lists: latches too.
func TestListHelp(t *testing.T) {
	r := offline(t).run("help", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "(mutex, rwlock, semaphore or latch:")
	assert.Contains(t, r.stdout, "-older-than D")
	assert.Contains(t, r.stdout, "-waiting")
}

// row returns the lock at p among locks, failing the test if it is not
// listed.
func row(t *testing.T, locks []listJSON, p string) listJSON {
	t.Helper()
	for _, l := range locks {
		if l.Path == p {
			return l
		}
	}
	t.Fatalf("%s not listed; listed: %v", p, locks)
	return listJSON{}
}

// The review's first story: 'zklock exec /locks/billing -- sleep 30 &',
// then 'zklock list /'. A node named locks is a path segment, not a
// semaphore: list shows the held lock below it, and no error row for /.
func TestListLocksPathSegment(t *testing.T) {
	e := setup(t)
	lock := "/locks/billing-" + strings.ToLower(unsafeChars.ReplaceAllString(t.Name(), "-"))
	t.Cleanup(func() {
		assert.NoError(t, e.deleteTree(lock))
		if err := e.admin.Delete("/locks", -1); !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
			assert.NoError(t, err)
		}
	})
	p := e.start("exec", "-owner", "billing-host", lock, "--", "sleep", "30")
	waitFor(t, "exec holds "+lock, func() bool { return len(e.children(lock)) == 1 })

	got := e.listJSON("/")
	for _, l := range got {
		assert.Empty(t, l.Error, "%s: an error row", l.Path)
	}
	l := row(t, got, lock)
	assert.Equal(t, "mutex", l.Recipe)
	assert.Equal(t, 1, l.Holders)
	assert.Equal(t, []string{"billing-host"}, l.Owners)
	r := e.run("list", "/")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, lock+`\s+mutex\s+1\s+0\s`, r.stdout)
	assert.NotContains(t, r.stdout, "error:")

	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 128+int(syscall.SIGTERM), p.wait(t), "stderr: %s", p.stderr)
}

// The review's second story: an empty node /app/locks does not make /app a
// semaphore, nor hide /app/jobs/nightly, which is held.
func TestListEmptyLocksNode(t *testing.T) {
	e := setup(t)
	app := e.root + "/app"
	for _, p := range []string{app, app + "/locks"} {
		_, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	m, err := zklock.NewMutex(e.client(zklock.WithNodeData([]byte("cron-1"))), app+"/jobs/nightly")
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)

	assert.Equal(t, []listJSON{{Path: app + "/jobs/nightly", Recipe: "mutex", Holders: 1, Owners: []string{"cron-1"}}},
		ignoreAge(e.listJSON(app)))
	r := e.run("list", app)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, app+`/jobs/nightly\s+mutex\s+1\s+0\s`, r.stdout)
	assert.NotContains(t, r.stdout, "no locks")
	require.NoError(t, m.Release(h))
}

// A held Mutex named locks beside an empty node named leases looks just
// like a Semaphore whose acquirer queues before any lease is made: list
// shows both readings, so that the held lock and its owner are never
// hidden behind a Semaphore that holds nothing.
func TestListMutexNamedLocksBesideEmptyLeases(t *testing.T) {
	e := setup(t)
	app := e.root + "/app"
	for _, p := range []string{app, app + "/leases"} {
		_, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	m, err := zklock.NewMutex(e.client(zklock.WithNodeData([]byte("cron-1"))), app+"/locks")
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	got := ignoreAge(e.listJSON(app))
	assert.Contains(t, got, listJSON{Path: app + "/locks", Recipe: "mutex", Holders: 1, Owners: []string{"cron-1"}}, "%+v", got)
	require.NoError(t, m.Release(h))
}

// ignoreAge zeroes the ages of locks, for a comparison of the rest.
func ignoreAge(locks []listJSON) []listJSON {
	for i := range locks {
		locks[i].AgeMS, locks[i].HeldSince = 0, nil
	}
	return locks
}

// A semaphore is known by its lease and lock nodes, not by a child's name:
// a mutex whose path ends in leases, or in locks beside other lock paths,
// is a mutex; a semaphore whose leases node is empty while an acquirer
// queues on its internal lock is a semaphore; and the locks below a
// semaphore's path, beside its leases and locks nodes or inside them, are
// listed too.
func TestListSemaphoreByItsNodes(t *testing.T) {
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte("o")))
	hold := func(p string) {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, m.Release(h)) })
	}
	hold(e.root + "/q/leases")       // a mutex named leases
	hold(e.root + "/r/locks/a")      // locks, a path segment
	hold(e.root + "/r/locks/b/c")    // ... at any depth
	hold(e.root + "/sem/inner")      // a lock below a semaphore's path
	hold(e.root + "/sem/locks/deep") // ... and inside its locks node
	s, err := zklock.NewSemaphore(c, e.root+"/sem", 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, lease.Release()) })
	// A semaphore whose leases are all returned, with an acquirer queued
	// on its internal lock before it makes its lease.
	idle := e.root + "/idle"
	for _, p := range []string{idle, idle + "/leases", idle + "/locks"} {
		_, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	acquirer, err := c.Create(ctx(t), idle+"/locks/_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-", []byte("o"),
		zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Delete(context.Background(), acquirer, -1)) })

	got := ignoreAge(e.listJSON(e.root))
	one := []string{"o"}
	assert.Equal(t, []listJSON{
		{Path: e.root + "/idle", Recipe: "semaphore", Waiters: 1, Owners: []string{}},
		// ... read as a mutex named locks too: the two look alike (see
		// TestListMutexNamedLocksBesideEmptyLeases).
		{Path: e.root + "/idle/locks", Recipe: "mutex", Holders: 1, Owners: one},
		{Path: e.root + "/q/leases", Recipe: "mutex", Holders: 1, Owners: one},
		{Path: e.root + "/r/locks/a", Recipe: "mutex", Holders: 1, Owners: one},
		{Path: e.root + "/r/locks/b/c", Recipe: "mutex", Holders: 1, Owners: one},
		{Path: e.root + "/sem", Recipe: "semaphore", Holders: 1, Owners: one},
		{Path: e.root + "/sem/inner", Recipe: "mutex", Holders: 1, Owners: one},
		{Path: e.root + "/sem/locks/deep", Recipe: "mutex", Holders: 1, Owners: one},
	}, got)
}

// ownerOnly returns a Client whose nodes at the paths secret picks carry
// an ACL that only this Client's credentials pass, and the hold function
// of a Mutex that releases at the test's end. The owner deletes dirs (the
// secret nodes it made, deepest first) at the end, after the releases.
func (e *env) ownerOnly(secret func(p string) bool, dirs ...string) (*zklock.Client, func(*zklock.Client, string)) {
	t := e.t
	acl := zk.DigestACL(zk.PermAll, "ops", "s3cret")
	c := e.client(zklock.WithAuth("digest", []byte("ops:s3cret")), zklock.WithNodeData([]byte("o")),
		zklock.WithACL(func(p string) []zk.ACL {
			if secret(p) {
				return acl
			}
			return zk.WorldACL(zk.PermAll)
		}))
	t.Cleanup(func() {
		for _, d := range dirs {
			if err := c.Delete(context.Background(), d, -1); !errors.Is(err, zk.ErrNoNode) { // a container the server reaped
				assert.NoError(t, err, d)
			}
		}
	})
	return c, func(c *zklock.Client, p string) {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, m.Release(h)) })
	}
}

// A node that cannot be listed is listed with the error, and the walk
// goes on to the other subtrees. A leases node that cannot be listed
// is such a node: its parent is not read as a semaphore.
func TestListUnreadableSubtree(t *testing.T) {
	e := setup(t)
	secret, leases := e.root+"/a/secret", e.root+"/c/sem/leases"
	c, hold := e.ownerOnly(func(p string) bool { return p == secret || p == leases }, secret+"/m", secret, leases)
	hold(c, secret+"/m")
	s, err := zklock.NewSemaphore(c, e.root+"/c/sem", 1)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, lease.Release()) })
	hold(e.client(), e.root+"/d/m")

	r := e.run("list", "-json", e.root)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "zklock list: 2 paths under "+e.root+" could not be read", r.stdout)
	var got []listJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, []string{secret, leases, e.root + "/d/m"}, paths(got))
	for _, p := range []string{secret, leases} {
		l := row(t, got, p)
		assert.Equal(t, "unknown", l.Recipe)
		assert.Equal(t, "list "+p+": zk: not authenticated (the node's ACL refuses this session: check -auth)", l.Error)
	}
	assert.Equal(t, 1, row(t, got, e.root+"/d/m").Holders)
	r = e.run("list", e.root)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Regexp(t, secret+`\s+unknown\s+0\s+0\s+-\s+error: list `+secret+`: zk: not authenticated`, r.stdout)
	assert.Regexp(t, e.root+`/d/m\s+mutex\s+1\s+0\s`, r.stdout)
}

// Below a lock whose nodes cannot be read, listed with the error, the
// walk goes on to the locks below it.
func TestListUnreadableLockGoesOn(t *testing.T) {
	e := setup(t)
	c, hold := e.ownerOnly(func(p string) bool { return path.Base(p) == "lock-" }) // the lock nodes
	hold(c, e.root+"/m")
	hold(e.client(zklock.WithNodeData([]byte("o"))), e.root+"/m/sub")

	r := e.run("list", "-json", e.root)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "zklock list: 1 path under "+e.root+" could not be read", r.stdout)
	var got []listJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, []string{e.root + "/m", e.root + "/m/sub"}, paths(got))
	assert.Equal(t, "mutex", row(t, got, e.root+"/m").Recipe)
	assert.Contains(t, row(t, got, e.root+"/m").Error, "zk: not authenticated")
	assert.Equal(t, []string{"o"}, row(t, got, e.root+"/m/sub").Owners)
}
