package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// A lock below another lock's path: the lower lock's container is a
// child of the upper lock path, but not a participant.
func TestInspectParentWithSubLock(t *testing.T) {
	e := setup(t)
	top, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	h1, err := top.Acquire(ctx(t))
	require.NoError(t, err)
	sub, err := zklock.NewMutex(e.client(), e.path+"/sub")
	require.NoError(t, err)
	h2, err := sub.Acquire(ctx(t))
	require.NoError(t, err)

	r := e.run("inspect", "-json", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	var v struct {
		jsonView
		Others []string `json:"others"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	assert.Equal(t, 1, v.Holders)
	assert.Equal(t, 0, v.Waiters, "the container is not a waiter")
	require.Len(t, v.Nodes, 1)
	assert.Equal(t, top.LockPath(h1), v.Nodes[0].Path)
	assert.Equal(t, []string{"sub"}, v.Others)
	r = e.run("inspect", e.path)
	assert.Contains(t, r.stdout, "mutex, 1 holder, 0 waiters")
	assert.Contains(t, r.stdout, "not lock nodes, not counted: sub")
	assert.NotContains(t, r.stdout, "0x0 ")

	require.NoError(t, sub.Release(h2))
	require.NoError(t, top.Release(h1))
}

// One 'exec -n 2' queued behind two held leases is one waiter.
func TestInspectSemaphoreExecQueued(t *testing.T) {
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(), e.path, 2)
	require.NoError(t, err)
	leases, err := s.AcquireN(ctx(t), 2)
	require.NoError(t, err)
	p := e.start("exec", "-n", "2", e.path, "--", "true")
	waitFor(t, "exec queued", func() bool {
		return len(e.children(e.path+"/locks")) == 1 && len(e.children(e.path+"/leases")) == 3
	})
	v := e.inspectJSON(e.path)
	assert.Equal(t, 2, v.Holders)
	assert.Equal(t, 1, v.Waiters, "kinds %v, roles %v", v.kinds(), v.roles())
	require.NoError(t, s.ReturnAll(leases))
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

// A lock made by a Client with a namespace, inspected without -namespace:
// the path does not exist (exit 4), and inspect says a namespace may be
// why, and where the path exists when it can tell.
func TestInspectNamespaceHint(t *testing.T) {
	e := setup(t)
	ns := e.root[1:] + "/ns"
	top := "zklock-cli-ns-" + strings.ToLower(unsafeChars.ReplaceAllString(t.Name(), "-"))
	t.Cleanup(func() { assert.NoError(t, e.deleteTree("/"+top)) }) // after the releases below
	for _, n := range []string{ns, top} {
		c := e.client(zklock.WithNamespace(n))
		m, err := zklock.NewMutex(c, "/hinted/lock")
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Release(h) })
	}

	r := e.run("inspect", "/hinted/lock")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no node /hinted/lock; it exists under /"+top+": pass -namespace "+top)
	r = e.run("inspect", "/hinted/other")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no node /hinted/other; if the lock's Client uses a namespace, pass -namespace")
	r = e.run("inspect", "-namespace", ns, "/hinted/lock")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, regexp.MustCompile(`mutex, 1 holder, 0 waiters`), r.stdout)
}

// A mutex with a lock path named locks below it is a mutex, and locks is
// among its "not lock nodes"; a semaphore's own such nodes are too.
func TestInspectLocksChildIsNotASemaphore(t *testing.T) {
	e := setup(t)
	c := e.client()
	hold := func(p string) string {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, m.Release(h)) })
		return m.LockPath(h)
	}
	top := hold(e.path)
	hold(e.path + "/locks/x")

	r := e.run("inspect", "-json", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	var v struct {
		jsonView
		Others []string `json:"others"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	assert.Equal(t, "mutex", v.Recipe)
	assert.Equal(t, 1, v.Holders)
	require.Len(t, v.Nodes, 1)
	assert.Equal(t, top, v.Nodes[0].Path)
	assert.Equal(t, []string{"locks"}, v.Others)
	r = e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": mutex, 1 holder, 0 waiters")
	assert.Contains(t, r.stdout, "not lock nodes, not counted: locks\n")

	sem := e.root + "/sem"
	hold(sem + "/inner")
	s, err := zklock.NewSemaphore(c, sem, 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, lease.Release()) })
	r = e.run("inspect", sem)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, sem+": semaphore, 1 holder, 0 waiters")
	assert.Contains(t, r.stdout, "not lock nodes, not counted: inner\n")
}

// inspect / reads the root as any path, leaving out ZooKeeper's own
// /zookeeper, which the library refuses to read: it failed on it, exit 1,
// where list / skips it.
func TestInspectRoot(t *testing.T) {
	e := setup(t)
	for _, args := range [][]string{{"inspect", "/"}, {"inspect", "-json", "/"}} {
		r := e.run(args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.NotContains(t, r.stderr+r.stdout, "zookeeper", args)
	}
}
