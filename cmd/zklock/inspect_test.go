package main

import (
	"context"
	"encoding/json"
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

// jsonView is inspect's documented JSON, spelled out here so that a
// renamed field fails the test.
type jsonView struct {
	Path    string `json:"path"`
	Recipe  string `json:"recipe"`
	Exists  bool   `json:"exists"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
	// A mixed path's readings, one per layout; a kazoo Semaphore's
	// max_leases.
	Readings  []string `json:"readings"`
	MaxLeases *int     `json:"max_leases"`
	Others    []string `json:"others"`
	Nodes     []struct {
		Position int    `json:"position"`
		Queue    string `json:"queue"`
		Layout   string `json:"layout"`
		Kind     string `json:"kind"`
		Role     string `json:"role"`
		Name     string `json:"name"`
		Path     string `json:"path"`
		Session  string `json:"session"`
		Owner    string `json:"owner"`
		Created  string `json:"created"`
		AgeMS    int64  `json:"age_ms"`
		Token    int64  `json:"token"`
	} `json:"nodes"`
}

// inspectJSON runs inspect -json on p and decodes its output.
func (e *env) inspectJSON(p string) jsonView {
	e.t.Helper()
	r := e.run("inspect", "-json", p)
	require.Equal(e.t, 0, r.code, "stderr: %s", r.stderr)
	var v jsonView
	require.NoError(e.t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	return v
}

// roles lists the nodes' roles, or kinds, of v in order.
func (v jsonView) column(f func(i int) string) []string {
	out := make([]string, len(v.Nodes))
	for i := range v.Nodes {
		out[i] = f(i)
	}
	return out
}

func (v jsonView) roles() []string { return v.column(func(i int) string { return v.Nodes[i].Role }) }
func (v jsonView) kinds() []string { return v.column(func(i int) string { return v.Nodes[i].Kind }) }
func (v jsonView) sessions() []string {
	return v.column(func(i int) string { return v.Nodes[i].Session })
}

// session returns c's session id as inspect shows it: the owner of an
// ephemeral node that c makes under the test's root, and deletes.
func (e *env) session(c *zklock.Client) string {
	e.t.Helper()
	p, err := c.Create(ctx(e.t), e.root+"/session-", nil, zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(e.t, err)
	_, st, err := c.Get(ctx(e.t), p)
	require.NoError(e.t, err)
	require.NoError(e.t, c.Delete(ctx(e.t), p, -1))
	return fmt.Sprintf("0x%x", st.EphemeralOwner)
}

// waiting is an Acquire queued in the background.
type waiting struct {
	cancel context.CancelFunc
	done   chan error
}

// queue starts acquire on a goroutine and waits until the lock path (or
// dir) has n children, so that it is queued.
func (e *env) queue(dir string, n int, acquire func(ctx context.Context) error) *waiting {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &waiting{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- acquire(ctx) }()
	waitFor(e.t, fmt.Sprintf("%d children of %s", n, dir), func() bool { return len(e.children(dir)) == n })
	return w
}

// stop cancels the waiting Acquire and waits for it to give up.
func (w *waiting) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	require.Error(t, <-w.done)
}

func TestInspectMutex(t *testing.T) {
	e := setup(t)
	c1, c2, c3 := e.client(), e.client(), e.client()
	m1, err := zklock.NewMutex(c1, e.path)
	require.NoError(t, err)
	h1, err := m1.Acquire(ctx(t))
	require.NoError(t, err)
	token, err := m1.Token(h1)
	require.NoError(t, err)
	var waiters []*waiting
	for i, c := range []*zklock.Client{c2, c3} {
		m, err := zklock.NewMutex(c, e.path)
		require.NoError(t, err)
		waiters = append(waiters, e.queue(e.path, i+2, func(ctx context.Context) error { _, err := m.Acquire(ctx); return err }))
	}

	r := e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": mutex, 1 holder, 2 waiters")
	assert.Regexp(t, `POS\s+KIND\s+ROLE\s+SESSION\s+OWNER\s+AGE\s+TOKEN\s+NODE`, r.stdout)
	assert.Regexp(t, fmt.Sprintf(`0\s+lock\s+holder\s+%s\s+.*\s+%d\s+%s`, e.session(c1), token, path.Base(m1.LockPath(h1))), r.stdout)

	v := e.inspectJSON(e.path)
	assert.Equal(t, "mutex", v.Recipe)
	assert.True(t, v.Exists)
	assert.Equal(t, []string{"holder", "waiter", "waiter"}, v.roles())
	assert.Equal(t, []string{e.session(c1), e.session(c2), e.session(c3)}, v.sessions())
	assert.Equal(t, 1, v.Holders)
	assert.Equal(t, 2, v.Waiters)
	holder := v.Nodes[0]
	assert.Equal(t, m1.LockPath(h1), holder.Path)
	assert.Equal(t, token, holder.Token, "the token is what Mutex.Token returns")
	data, _, err := e.admin.Get(holder.Path)
	require.NoError(t, err)
	assert.Equal(t, string(data), holder.Owner)
	assert.NotEmpty(t, holder.Created)
	assert.GreaterOrEqual(t, holder.AgeMS, int64(0))

	for _, w := range waiters {
		w.stop(t)
	}
	require.NoError(t, m1.Release(h1))
}

func TestInspectReadWriteLock(t *testing.T) {
	e := setup(t)
	var rws []*zklock.ReadWriteLock
	for range 4 {
		rw, err := zklock.NewReadWriteLock(e.client(), e.path)
		require.NoError(t, err)
		rws = append(rws, rw)
	}
	r1, err := rws[0].ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	r2, err := rws[1].ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	writer := e.queue(e.path, 3, func(ctx context.Context) error { _, err := rws[2].WriteLock().Acquire(ctx); return err })
	reader := e.queue(e.path, 4, func(ctx context.Context) error { _, err := rws[3].ReadLock().Acquire(ctx); return err })

	v := e.inspectJSON(e.path)
	assert.Equal(t, "rwlock", v.Recipe)
	assert.Equal(t, []string{"read", "read", "write", "read"}, v.kinds())
	assert.Equal(t, []string{"holder", "holder", "waiter", "waiter"}, v.roles(), "readers behind a writer wait")
	r := e.run("inspect", e.path)
	assert.Contains(t, r.stdout, "rwlock, 2 holders, 2 waiters")

	reader.stop(t)
	writer.stop(t)
	require.NoError(t, rws[0].ReadLock().Release(r1))
	require.NoError(t, rws[1].ReadLock().Release(r2))
}

func TestInspectSemaphore(t *testing.T) {
	e := setup(t)
	c1, c2 := e.client(), e.client()
	s1, err := zklock.NewSemaphore(c1, e.path, 2)
	require.NoError(t, err)
	leases, err := s1.AcquireN(ctx(t), 2)
	require.NoError(t, err)
	s2, err := zklock.NewSemaphore(c2, e.path, 2)
	require.NoError(t, err)
	// The third acquirer holds the internal lock and has made its lease
	// node, which waits for a free lease.
	w := e.queue(e.path+"/leases", 3, func(ctx context.Context) error { _, err := s2.Acquire(ctx); return err })
	waitFor(t, "the acquirer's internal lock node", func() bool { return len(e.children(e.path+"/locks")) == 1 })

	v := e.inspectJSON(e.path)
	assert.Equal(t, "semaphore", v.Recipe)
	assert.Equal(t, []string{"lease", "lease", "lease", "acquirer"}, v.kinds())
	assert.Equal(t, []string{"holder", "holder", "waiter", "waiter"}, v.roles())
	assert.Equal(t, []string{e.session(c1), e.session(c1), e.session(c2), e.session(c2)}, v.sessions())
	assert.Equal(t, leases[0].Token(), v.Nodes[0].Token)
	assert.Equal(t, leases[1].Path(), v.Nodes[1].Path)
	assert.Equal(t, "locks", v.Nodes[3].Queue)
	assert.Equal(t, 2, v.Holders)
	assert.Equal(t, 1, v.Waiters, "one acquirer waits: its lease node being granted is not another waiter")
	r := e.run("inspect", e.path)
	assert.Contains(t, r.stdout, "semaphore, 2 holders, 1 waiter\n")
	assert.Regexp(t, `leases/_c_`, r.stdout)

	w.stop(t)
	require.NoError(t, s1.ReturnAll(leases))
}

func TestInspectWatch(t *testing.T) {
	e := setup(t)
	p := e.start("inspect", "-watch", e.path)
	p.readUntil(t, regexp.MustCompile(`no such node`))

	m1, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	h1, err := m1.Acquire(ctx(t))
	require.NoError(t, err)
	p.readUntil(t, regexp.MustCompile(`mutex, 1 holder, 0 waiters`))

	m2, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	w := e.queue(e.path, 2, func(ctx context.Context) error { _, err := m2.Acquire(ctx); return err })
	p.readUntil(t, regexp.MustCompile(`mutex, 1 holder, 1 waiter$`))
	w.stop(t)
	require.NoError(t, m1.Release(h1))
	p.readUntil(t, regexp.MustCompile(`free: no participants|no such node`))

	p.signal(t, syscall.SIGINT)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

func TestInspectWatchJSON(t *testing.T) {
	e := setup(t)
	p := e.start("inspect", "-watch", "-json", e.path)
	p.readUntil(t, regexp.MustCompile(`^\{.*"exists":false`))
	m, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	lines := p.readUntil(t, regexp.MustCompile(`"holders":1`))
	var v jsonView
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &v))
	assert.Equal(t, m.LockPath(h), v.Nodes[0].Path)
	require.NoError(t, m.Release(h))
	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

func TestInspectBadInput(t *testing.T) {
	e := setup(t)
	r := e.run("inspect", e.path)
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "zklock inspect: no node "+e.path)
	assert.NotContains(t, r.stderr, "free")
	r = e.run("inspect", "-json", e.path)
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"exists": false`)
	for _, args := range [][]string{
		{"inspect"},
		{"inspect", "relative/path"},
		{"inspect", e.path, "extra"},
		{"inspect", "-bogus", e.path},
		{"inspect", "-servers", "", e.path},
	} {
		r := e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "zklock inspect: ", args)
	}
	r = e.run("inspect", "-h")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Usage: zklock inspect")
}

// Paths are relative to -namespace, as the library's are to WithNamespace.
func TestNamespaceAndAuth(t *testing.T) {
	e := setup(t)
	ns := e.root[1:] + "/ns"
	c, err := zklock.Connect(e.servers, zklock.WithNamespace(ns))
	require.NoError(t, err)
	defer c.Close()
	m, err := zklock.NewMutex(c, "/lock")
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)

	r := e.run("inspect", "-json", "-namespace", ns, "-auth", "ops:secret", "/lock")
	require.Equal(t, 0, r.code, r.stderr)
	var v jsonView
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.Len(t, v.Nodes, 1)
	assert.Equal(t, m.LockPath(h), v.Nodes[0].Path)
	r = e.run("exec", "-namespace", ns, "-try", "/lock", "--", "true")
	assert.Equal(t, 75, r.code, r.stderr)
	r = e.run("inspect", "-auth", "nocolon", "/lock")
	assert.Equal(t, 2, r.code, r.stderr)
	require.NoError(t, m.Release(h))
}

// A lock whose nodes carry a digest ACL is inspected with -auth; without
// the right credentials inspect fails, naming the path, with exit 1.
func TestInspectDigestACL(t *testing.T) {
	e := setup(t)
	// The test's root stays open, so that the admin connection can clean
	// up under it; the lock path and its nodes are the owner's alone.
	for _, p := range []string{path.Dir(e.root), e.root} {
		_, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
	acl := zk.DigestACL(zk.PermAll, "ops", "s3cret")
	c := e.client(zklock.WithAuth("digest", []byte("ops:s3cret")),
		zklock.WithACL(func(string) []zk.ACL { return acl }), zklock.WithNodeData([]byte("owner-42")))
	m, err := zklock.NewMutex(c, e.path)
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)

	r := e.run("inspect", "-json", "-auth", "ops:s3cret", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	var v jsonView
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.Len(t, v.Nodes, 1)
	assert.Equal(t, "owner-42", v.Nodes[0].Owner)
	assert.Equal(t, "holder", v.Nodes[0].Role)
	// -watch sets its watches on a connection of its own, which
	// authenticates as the Client does.
	p := e.start("inspect", "-watch", "-json", "-auth", "ops:s3cret", e.path)
	p.readUntil(t, regexp.MustCompile(`"owner":"owner-42"`))
	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)

	for _, auth := range [][]string{nil, {"-auth", "ops:wrong"}} {
		r := e.run(append(append([]string{"inspect"}, auth...), e.path)...)
		assert.Equal(t, 1, r.code, "%v: %s", auth, r.stderr)
		assert.Contains(t, r.stderr, "zklock inspect: list "+e.path+": zk: not authenticated", auth)
		assert.Contains(t, r.stderr, "check -auth", auth)
		assert.Empty(t, r.stdout, auth)
	}
	require.NoError(t, m.Release(h))
	// Only the owner may list the lock path: delete it now, for the clean-up.
	if err := c.Delete(ctx(t), e.path, -1); !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
}
