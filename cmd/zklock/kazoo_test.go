package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// kazoo's node kinds: "__lock__" for Lock, WriteLock and Election,
// "__rlock__" for ReadLock.
const (
	kazooLock = "__lock__"
	kazooRead = "__rlock__"
)

// kazooLayout is the option that makes a zklock recipe kazoo's.
var kazooLayout = zklock.WithLayout(zklock.LayoutKazoo)

// uuidHex is a name as kazoo's uuid4().hex makes it: 32 hex digits.
func uuidHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ensure makes p and its parents, persistent, as kazoo's ensure_path does.
func (e *env) ensure(p string) {
	e.t.Helper()
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		_, err := e.admin.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll))
		if !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(e.t, err, p[:i])
		}
	}
}

// kazooCreate creates the node at p (its parents persistent) on c's
// session, with data id and flags, and returns its path. It deletes the
// node at the test's end, if it is still there.
func (e *env) kazooCreate(c *zklock.Client, p, id string, flags int32) string {
	e.t.Helper()
	e.ensure(path.Dir(p))
	n, err := c.Create(ctx(e.t), p, []byte(id), flags)
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		if err := e.admin.Delete(n, -1); !errors.Is(err, zk.ErrNoNode) {
			assert.NoError(e.t, err, n)
		}
	})
	return n
}

// kazooNode creates the node a kazoo 2.8 process creates to contend for
// the lock at dir, of kind kazooLock or kazooRead, on c's session, with
// its identifier id as data, and returns its path.
func (e *env) kazooNode(c *zklock.Client, dir, kind, id string) string {
	e.t.Helper()
	return e.kazooCreate(c, dir+"/"+uuidHex()+kind, id, zk.FlagEphemeral|zk.FlagSequence)
}

// kazooPool makes the pool node of a kazoo Semaphore at p with max
// leases, as kazoo makes it: persistent, the number as its data.
func (e *env) kazooPool(p string, max int) {
	e.t.Helper()
	e.ensure(p)
	_, err := e.admin.Set(p, []byte(fmt.Sprint(max)), -1)
	require.NoError(e.t, err)
}

// kazooLease creates a kazoo Semaphore's lease in the pool at p, on c's
// session, with the holder's identifier id as data, and returns its path.
func (e *env) kazooLease(c *zklock.Client, p, id string) string {
	e.t.Helper()
	return e.kazooCreate(c, p+"/"+uuidHex(), id, zk.FlagEphemeral)
}

// layouts lists the nodes' layouts of v in order.
func (v jsonView) layouts() []string {
	return v.column(func(i int) string { return v.Nodes[i].Layout })
}
func (v jsonView) owners() []string { return v.column(func(i int) string { return v.Nodes[i].Owner }) }

// inspect reads a kazoo Lock's queue (a zklock Mutex in kazoo's layout,
// then a kazoo process's node) with kazoo's rules: the first contender
// holds; a child that is no contender is not a participant. -selector
// reads it as a kazoo Election, whose holder leads.
func TestInspectKazooLock(t *testing.T) {
	e := setup(t)
	c1, c2 := e.client(), e.client()
	m, err := zklock.NewMutex(c1, e.path, kazooLayout, zklock.WithLockData([]byte("go-worker")))
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	token, err := m.Token(h)
	require.NoError(t, err)
	py := e.kazooNode(c2, e.path, kazooLock, "py-worker")
	e.ensure(e.path + "/config")

	v := e.inspectJSON(e.path)
	assert.Equal(t, "kazoo-lock", v.Recipe)
	assert.Equal(t, []string{"holder", "waiter"}, v.roles())
	assert.Equal(t, []string{"lock", "lock"}, v.kinds())
	assert.Equal(t, []string{"kazoo", "kazoo"}, v.layouts())
	assert.Equal(t, []string{"go-worker", "py-worker"}, v.owners())
	assert.Equal(t, []string{e.session(c1), e.session(c2)}, v.sessions())
	assert.Equal(t, []string{"config"}, v.Others)
	assert.Equal(t, 1, v.Holders)
	assert.Equal(t, 1, v.Waiters)
	require.Len(t, v.Nodes, 2)
	assert.Equal(t, m.LockPath(h), v.Nodes[0].Path)
	assert.Equal(t, py, v.Nodes[1].Path)
	assert.Equal(t, token, v.Nodes[0].Token)

	r := e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": kazoo-lock, 1 holder, 1 waiter\n")
	assert.Regexp(t, fmt.Sprintf(`0\s+lock\s+holder\s+%s\s+go-worker\s+.*\s+%d\s+%s\n`, e.session(c1), token, path.Base(m.LockPath(h))), r.stdout)
	assert.Regexp(t, `1\s+lock\s+waiter\s+\S+\s+py-worker\s+.*\s+`+path.Base(py)+`\n`, r.stdout)
	r = e.run("inspect", "-selector", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": kazoo-election, 1 holder, 1 waiter\nleader: \"go-worker\"\n")
	require.NoError(t, m.Release(h))
}

// A kazoo ReadLock and WriteLock: a writer waits for every contender
// before it, a reader for the writers before it only, with the library's
// predicate. Readers of a zklock ReadWriteLock in kazoo's layout share
// with each other, and queue behind a kazoo process's writer.
func TestInspectKazooReadWriteLock(t *testing.T) {
	e := setup(t)
	raw, c := e.root+"/raw", e.client()
	for _, n := range []struct{ kind, id string }{{kazooLock, "w1"}, {kazooRead, "r2"}, {kazooLock, "w3"}, {kazooRead, "r4"}} {
		e.kazooNode(c, raw, n.kind, n.id)
	}
	v := e.inspectJSON(raw)
	assert.Equal(t, "kazoo-rwlock", v.Recipe)
	assert.Equal(t, []string{"w1", "r2", "w3", "r4"}, v.owners())
	assert.Equal(t, []string{"write", "read", "write", "read"}, v.kinds())
	assert.Equal(t, []string{"holder", "waiter", "waiter", "waiter"}, v.roles())

	rw, err := zklock.NewReadWriteLock(e.client(), e.path, kazooLayout, zklock.WithLockData([]byte("go-reader")))
	require.NoError(t, err)
	r1, err := rw.ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	r2, err := rw.ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	e.kazooNode(e.client(), e.path, kazooLock, "py-writer")
	rw2, err := zklock.NewReadWriteLock(e.client(), e.path, kazooLayout, zklock.WithLockData([]byte("go-late")))
	require.NoError(t, err)
	w := e.queue(e.path, 4, func(ctx context.Context) error { _, err := rw2.ReadLock().Acquire(ctx); return err })

	v = e.inspectJSON(e.path)
	assert.Equal(t, "kazoo-rwlock", v.Recipe)
	assert.Equal(t, []string{"go-reader", "go-reader", "py-writer", "go-late"}, v.owners())
	assert.Equal(t, []string{"read", "read", "write", "read"}, v.kinds())
	assert.Equal(t, []string{"holder", "holder", "waiter", "waiter"}, v.roles())
	r := e.run("inspect", e.path)
	assert.Contains(t, r.stdout, e.path+": kazoo-rwlock, 2 holders, 2 waiters\n")
	w.stop(t)
	require.NoError(t, rw.ReadLock().Release(r1))
	require.NoError(t, rw.ReadLock().Release(r2))
}

// A kazoo Semaphore: its pool node's leases all hold, its max_leases is
// the pool's data, and the acquirers queued on its lock, the sibling
// PATH-__lock__, wait. A lease cannot be revoked, -holder cannot choose
// among the leases, and break deletes a lease named.
func TestInspectKazooSemaphore(t *testing.T) {
	e := setup(t)
	c1, c2, c3 := e.client(), e.client(), e.client()
	e.kazooPool(e.path, 2)
	l1 := e.kazooLease(c1, e.path, "py-1")
	e.kazooLease(c2, e.path, "py-2")
	acq := e.kazooNode(c3, e.path+"-__lock__", kazooLock, "py-3")

	v := e.inspectJSON(e.path)
	assert.Equal(t, "kazoo-semaphore", v.Recipe)
	assert.Equal(t, []string{"lease", "lease", "acquirer"}, v.kinds())
	assert.Equal(t, []string{"holder", "holder", "waiter"}, v.roles())
	require.Len(t, v.Nodes, 3)
	assert.ElementsMatch(t, []string{"py-1", "py-2"}, v.owners()[:2])
	assert.Equal(t, acq, v.Nodes[2].Path)
	assert.Equal(t, "locks", v.Nodes[2].Queue)
	assert.Equal(t, []string{"kazoo", "kazoo", "kazoo"}, v.layouts())
	if assert.NotNil(t, v.MaxLeases) {
		assert.Equal(t, 2, *v.MaxLeases)
	}
	assert.Equal(t, 2, v.Holders)
	assert.Equal(t, 1, v.Waiters)
	r := e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": kazoo-semaphore, 2 holders, 1 waiter\nmax leases: 2\n")
	assert.Regexp(t, `0\s+acquirer\s+waiter\s+.*\s+`+regexp.QuoteMeta(acq)+`\n`, r.stdout)

	r = e.run("revoke", e.path, path.Base(l1))
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "semaphore leases cannot be revoked")
	r = e.run("break", "-force", "-holder", e.path)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "whose 2 leases all hold")
	r = e.run("break", "-force", e.path, path.Base(l1))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+l1+" (session "+e.session(c1)+", owner py-1")
}

// A kazoo Semaphore whose lock, PATH-__lock__, an operator deleted while
// a lease is out: the lease still holds, and inspect and list show it.
func TestInspectKazooSemaphoreWithoutItsLock(t *testing.T) {
	e := setup(t)
	e.kazooPool(e.path, 2)
	e.kazooLease(e.client(), e.path, "py-1")

	v := e.inspectJSON(e.path)
	assert.Equal(t, "kazoo-semaphore", v.Recipe)
	assert.Equal(t, []string{"holder"}, v.roles())
	assert.Equal(t, []string{"py-1"}, v.owners())
	if assert.NotNil(t, v.MaxLeases) {
		assert.Equal(t, 2, *v.MaxLeases)
	}
	assert.Equal(t, []listJSON{
		{Path: e.path, Recipe: "kazoo-semaphore", Holders: 1, Owners: []string{"py-1"}},
	}, ignoreAge(e.listJSON(e.root)))
}

// Ephemeral nodes named with uuid hex that are no kazoo Semaphore's (a
// service registry's members: no lock beside them, no size in their
// parent's data) are not read as leases: no holder is shown.
func TestInspectHexNamesAreNoPool(t *testing.T) {
	e := setup(t)
	e.kazooLease(e.client(), e.path, "worker-1")
	v := e.inspectJSON(e.path)
	assert.NotEqual(t, "kazoo-semaphore", v.Recipe)
	assert.Zero(t, v.Holders)
	for _, l := range e.listJSON(e.root) {
		assert.NotEqual(t, "kazoo-semaphore", l.Recipe, l.Path)
	}
}

// list finds kazoo's locks beside Curator's: a Lock, a ReadLock's
// readers, and a Semaphore, whose lock (the sibling PATH-__lock__) is
// read as its acquirers and not listed again.
func TestListKazoo(t *testing.T) {
	e := setup(t)
	a, b, pool := e.root+"/a", e.root+"/b", e.root+"/c/pool"
	m, err := zklock.NewMutex(e.client(), a, kazooLayout, zklock.WithLockData([]byte("go-worker")))
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	e.kazooNode(e.client(), a, kazooLock, "py-waiter")
	e.kazooNode(e.client(), b, kazooRead, "py-r1")
	e.kazooNode(e.client(), b, kazooRead, "py-r2")
	e.kazooPool(pool, 2)
	e.kazooLease(e.client(), pool, "py-lease")
	e.kazooLease(e.client(), pool, "py-lease")
	e.kazooNode(e.client(), pool+"-__lock__", kazooLock, "py-acquirer")

	assert.Equal(t, []listJSON{
		{Path: a, Recipe: "kazoo-lock", Holders: 1, Waiters: 1, Owners: []string{"go-worker"}},
		{Path: b, Recipe: "kazoo-rwlock", Holders: 2, Owners: []string{"py-r1", "py-r2"}},
		{Path: pool, Recipe: "kazoo-semaphore", Holders: 2, Waiters: 1, Owners: []string{"py-lease", "py-lease"}},
	}, ignoreAge(e.listJSON(e.root)))
	r := e.run("list", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, a+`\s+kazoo-lock\s+1\s+1\s+\S+\s+go-worker\n`, r.stdout)
	assert.Regexp(t, pool+`\s+kazoo-semaphore\s+2\s+1\s`, r.stdout)
	assert.NotContains(t, r.stdout, "-__lock__")
	require.NoError(t, m.Release(h))
}

// A path that holds Curator's nodes and kazoo's is shown with both
// readings, each by its own rules: a Curator holder and a kazoo holder,
// which do not exclude each other. list shows it as one row of recipe
// mixed, with both holders; leader and -holder refuse to pick one.
func TestInspectMixedLayouts(t *testing.T) {
	e := setup(t)
	c1, c2 := e.client(zklock.WithNodeData([]byte("java-ish"))), e.client()
	m, err := zklock.NewMutex(c1, e.path)
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	py1 := e.kazooNode(c2, e.path, kazooLock, "py-1")
	e.kazooNode(c2, e.path, kazooLock, "py-2")

	v := e.inspectJSON(e.path)
	assert.Equal(t, "mixed", v.Recipe)
	assert.Equal(t, []string{"mutex", "kazoo-lock"}, v.Readings)
	assert.Equal(t, []string{"curator", "kazoo", "kazoo"}, v.layouts())
	assert.Equal(t, []string{"holder", "holder", "waiter"}, v.roles())
	require.Len(t, v.Nodes, 3)
	assert.Equal(t, []int{0, 0, 1}, []int{v.Nodes[0].Position, v.Nodes[1].Position, v.Nodes[2].Position})
	assert.Equal(t, m.LockPath(h), v.Nodes[0].Path)
	assert.Equal(t, py1, v.Nodes[1].Path)
	assert.Equal(t, 2, v.Holders)
	assert.Equal(t, 1, v.Waiters)
	r := e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": mixed, 2 holders, 1 waiter\n")
	assert.Contains(t, r.stdout, "two layouts on one path: mutex (curator) and kazoo-lock (kazoo)")
	assert.Regexp(t, `0\s+curator lock\s+holder\s+.*java-ish`, r.stdout)
	assert.Regexp(t, `0\s+kazoo lock\s+holder\s+.*py-1`, r.stdout)

	got := row(t, ignoreAge(e.listJSON(e.root)), e.path)
	assert.Equal(t, listJSON{Path: e.path, Recipe: "mixed", Holders: 2, Waiters: 1, Owners: []string{"java-ish", "py-1"}}, got)
	r = e.run("list", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, e.path+`\s+mixed:mutex\+kazoo-lock\s+2\s+1\s`, r.stdout)
	for _, args := range [][]string{{"leader", e.path}, {"inspect", "-selector", e.path}} {
		r = e.run(args...)
		assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, e.path+" holds the nodes of two layouts (mutex and kazoo-lock)", args)
	}
	r = e.run("break", "-force", "-holder", e.path)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "has 2 holders")
	require.NoError(t, m.Release(h))
}

// A Curator Semaphore and kazoo contenders on one path: list shows both
// readings, so that the kazoo holder is not hidden among the
// semaphore's other children.
func TestListMixedSemaphoreAndKazoo(t *testing.T) {
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(zklock.WithNodeData([]byte("java-ish"))), e.path, 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	e.kazooNode(e.client(), e.path, kazooLock, "py-1")
	assert.Equal(t, []listJSON{{Path: e.path, Recipe: "mixed", Holders: 2, Owners: []string{"java-ish", "py-1"}}},
		ignoreAge(e.listJSON(e.root)))
	require.NoError(t, lease.Release())
}

// revoke writes the revocation message into a kazoo node as into
// Curator's, and says that a kazoo process ignores it; a zklock holder in
// kazoo's layout that made its Mutex revocable releases.
func TestRevokeKazoo(t *testing.T) {
	e := setup(t)
	m, err := zklock.NewMutex(e.client(), e.path, kazooLayout, zklock.WithLockData([]byte("go-worker")))
	require.NoError(t, err)
	var hold = make(chan context.Context, 1)
	m.MakeRevocable(func(m *zklock.Mutex) { _ = m.Release(<-hold) })
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	hold <- h
	py := e.kazooNode(e.client(), e.path, kazooLock, "py-worker")
	note := "a kazoo process ignores revocation requests (kazoo has no revocation); a zklock holder that called MakeRevocable honours it"

	node := m.LockPath(h)
	r := e.run("revoke", "-wait", "20s", e.path, path.Base(node))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "revocation requested: "+node+" (owner go-worker")
	assert.Contains(t, r.stdout, note)
	assert.Contains(t, r.stdout, "released: "+node)
	released(t, h)

	r = e.run("revoke", e.path, py[len(py)-10:])
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "revocation requested: "+py+" (owner py-worker")
	assert.Contains(t, r.stdout, note)
	data, _, err := e.admin.Get(py)
	require.NoError(t, err)
	assert.Equal(t, "__REVOKE__", string(data))
	r = e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `0\s+lock\s+holder\s+\S+\s+\(revoked\)\s`, r.stdout)
}

// break deletes a kazoo holder's node, found by -holder as inspect finds
// it: a zklock holder in kazoo's layout loses its hold. A kazoo node made
// without ephemeral (kazoo's acquire(ephemeral=False)) holds too, and is
// broken alike. -holder refuses to choose among kazoo readers.
func TestBreakKazoo(t *testing.T) {
	e := setup(t)
	m, err := zklock.NewMutex(e.client(), e.path, kazooLayout, zklock.WithLockData([]byte("go-worker")))
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	node := m.LockPath(h)
	e.kazooNode(e.client(), e.path, kazooLock, "py-waiter")
	r := e.run("break", "-force", "-holder", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+node+" (session ")
	lostHold(t, h)

	p, c := e.root+"/persistent", e.client()
	stuck := e.kazooCreate(c, p+"/"+uuidHex()+kazooLock, "py-cron", zk.FlagSequence)
	waiter := e.kazooNode(c, p, kazooLock, "py-next")
	v := e.inspectJSON(p)
	assert.Equal(t, []string{"holder", "waiter"}, v.roles())
	assert.Equal(t, []string{"0x0", e.session(c)}, v.sessions())
	r = e.run("break", "-force", "-holder", p)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+stuck+" (not ephemeral, owner py-cron")
	v = e.inspectJSON(p)
	require.Len(t, v.Nodes, 1)
	assert.Equal(t, waiter, v.Nodes[0].Path)
	assert.Equal(t, "holder", v.Nodes[0].Role)

	rw := e.root + "/rw"
	e.kazooNode(c, rw, kazooRead, "py-r1")
	e.kazooNode(c, rw, kazooRead, "py-r2")
	r = e.run("break", "-force", "-holder", rw)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "has 2 holders")
}

// leader reads a kazoo Lock's path as a kazoo Election's (a zklock
// Election in kazoo's layout, a kazoo process's node): the first
// contender leads. A kazoo ReadLock's path is no election.
func TestLeaderKazooElection(t *testing.T) {
	e := setup(t)
	el, err := zklock.NewElection(e.client(), e.path, "go-1", kazooLayout)
	require.NoError(t, err)
	hd, err := el.Campaign(ctx(t))
	require.NoError(t, err)
	e.kazooNode(e.client(), e.path, kazooLock, "py-2")

	r := e.run("leader", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^leader: "go-1" \(kazoo-election, 2 participants\)\nnode: `+regexp.QuoteMeta(hd.Path())+` \(session `, r.stdout)
	lv := e.leaderJSON(e.path, 0)
	require.NotNil(t, lv.Leader)
	assert.Equal(t, "go-1", *lv.Leader)
	assert.Equal(t, "kazoo-election", lv.Recipe)
	assert.Equal(t, hd.Path(), lv.Node.Path)
	require.NoError(t, hd.Release())

	rw := e.root + "/rw"
	e.kazooNode(e.client(), rw, kazooRead, "py-r")
	r = e.run("leader", rw)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, rw+" is a kazoo-rwlock, not an election")
}

// inspect -watch sees a kazoo Semaphore's acquirers come and go: its
// lock, the sibling PATH-__lock__, is watched too.
func TestInspectWatchKazooSemaphore(t *testing.T) {
	e := setup(t)
	c := e.client()
	e.kazooPool(e.path, 1)
	e.kazooLease(c, e.path, "py-1")
	e.ensure(e.path + "-__lock__")
	p := e.start("inspect", "-watch", e.path)
	p.readUntil(t, regexp.MustCompile(`kazoo-semaphore, 1 holder, 0 waiters`))
	acq := e.kazooNode(c, e.path+"-__lock__", kazooLock, "py-2")
	p.readUntil(t, regexp.MustCompile(`kazoo-semaphore, 1 holder, 1 waiter$`))
	require.NoError(t, e.admin.Delete(acq, -1))
	p.readUntil(t, regexp.MustCompile(`kazoo-semaphore, 1 holder, 0 waiters`))
	p.signal(t, syscall.SIGINT)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}
