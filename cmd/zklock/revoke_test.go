package main

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// revocable acquires a Mutex on the test's path whose revocation listener
// releases the hold, and returns the hold.
func (e *env) revocable() (*zklock.Mutex, context.Context) {
	e.t.Helper()
	m, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(e.t, err)
	var (
		mu   sync.Mutex
		hold context.Context
	)
	m.MakeRevocable(func(m *zklock.Mutex) {
		mu.Lock()
		h := hold
		mu.Unlock()
		_ = m.Release(h)
	})
	h, err := m.Acquire(ctx(e.t))
	require.NoError(e.t, err)
	mu.Lock()
	hold = h
	mu.Unlock()
	return m, h
}

// released waits for the hold to end by a Release.
func released(t *testing.T, h context.Context) {
	t.Helper()
	select {
	case <-h.Done():
		assert.True(t, errors.Is(context.Cause(h), zklock.ErrReleased), "cause: %v", context.Cause(h))
	case <-time.After(waitTimeout):
		t.Fatalf("the holder did not release within %v", waitTimeout)
	}
}

func TestRevokeByName(t *testing.T) {
	e := setup(t)
	m, h := e.revocable()
	node := m.LockPath(h)
	r := e.run("revoke", e.path, path.Base(node))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "revocation requested: "+node)
	released(t, h)
}

func TestRevokeByPathAndSequence(t *testing.T) {
	e := setup(t)
	m, h := e.revocable()
	r := e.run("revoke", e.path, m.LockPath(h))
	require.Equal(t, 0, r.code, r.stderr)
	released(t, h)

	m, h = e.revocable()
	name := path.Base(m.LockPath(h))
	r = e.run("revoke", e.path, name[len(name)-10:]) // the sequence number
	require.Equal(t, 0, r.code, r.stderr)
	released(t, h)
}

func TestRevokeMissing(t *testing.T) {
	e := setup(t)
	r := e.run("revoke", e.path, "lock-0000000000")
	assert.Equal(t, 4, r.code)
	assert.Contains(t, r.stderr, "lock path "+e.path+" does not exist")

	m, h := e.revocable()
	r = e.run("revoke", e.path, "_c_nosuch-lock-0000000099")
	assert.Equal(t, 4, r.code)
	assert.Contains(t, r.stderr, "node _c_nosuch-lock-0000000099 not found under "+e.path)
	r = e.run("revoke", e.path, "/elsewhere/node")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "/elsewhere/node is not a child of lock path "+e.path)
	for _, args := range [][]string{{"revoke", e.path}, {"revoke", "nopath", "x"}, {"revoke", e.path, "a", "b"}} {
		r := e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
	require.NoError(t, m.Release(h))
}

// A semaphore's leases do not listen for revocation: revoke refuses them,
// however NODE is named, and writes nothing.
func TestRevokeSemaphoreLeaseRefused(t *testing.T) {
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(), e.path, 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	for _, node := range []string{lease.Path(), path.Base(lease.Path()), "leases", "locks", e.path + "/locks/x"} {
		r := e.run("revoke", e.path, node)
		assert.Equal(t, 1, r.code, "%s: %s", node, r.stderr)
		assert.Contains(t, r.stderr, "semaphore leases cannot be revoked", node)
		assert.NotContains(t, r.stdout, "revocation requested", node)
	}
	data, _, err := e.admin.Get(lease.Path())
	require.NoError(t, err)
	assert.NotContains(t, string(data), "__REVOKE__")
	require.NoError(t, lease.Release())
}

// revoke says whose data it overwrites: the owner and session it replaced.
// inspect, list and break then show the owner as "(revoked)", and inspect's
// JSON marks the node revoked. A second request says the owner is gone.
func TestRevokeReplacesOwner(t *testing.T) {
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte("10.0.0.7")))
	m, err := zklock.NewMutex(c, e.path) // not revocable: it keeps its node
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)
	node := m.LockPath(h)
	r := e.run("revoke", e.path, path.Base(node))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "revocation requested: "+node+" (owner 10.0.0.7, session "+e.session(c)+
		"; its node data now reads __REVOKE__)\nthe holder releases only if it is revocable (-wait D tells)\n", r.stdout)

	r = e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `0\s+lock\s+holder\s+`+e.session(c)+`\s+\(revoked\)\s`, r.stdout)
	assert.NotContains(t, r.stdout, "__REVOKE__")
	r = e.run("inspect", "-json", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	var v struct {
		Nodes []struct {
			Owner   string `json:"owner"`
			Revoked bool   `json:"revoked"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	require.Len(t, v.Nodes, 1)
	assert.True(t, v.Nodes[0].Revoked)
	assert.Equal(t, "__REVOKE__", v.Nodes[0].Owner, "the JSON keeps the node's data")
	r = e.run("list", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `mutex\s+1\s+0\s+\S+\s+\(revoked\)\n`, r.stdout)

	r = e.run("revoke", "-wait", "1ms", e.path, path.Base(node))
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "revocation requested: "+node+" (session "+e.session(c)+"; already revoked: its owner is no longer recorded)\n")
	assert.NotContains(t, r.stdout, "releases only if")
	r = e.run("break", "-force", e.path, path.Base(node))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+node+" (session "+e.session(c)+", owner (revoked), age ")
	lostHold(t, h)
}

// A lock path with another lock's path named locks below it is no
// semaphore: revoke asks its holder, and break -holder breaks it.
func TestRevokeBesideLocksChild(t *testing.T) {
	e := setup(t)
	m, h := e.revocable()
	inner, err := zklock.NewMutex(e.client(), e.path+"/locks/x")
	require.NoError(t, err)
	hi, err := inner.Acquire(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, inner.Release(hi)) })

	r := e.run("revoke", e.path, path.Base(m.LockPath(h)))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "revocation requested: "+m.LockPath(h))
	released(t, h)

	top, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	ht, err := top.Acquire(ctx(t))
	require.NoError(t, err)
	r = e.run("break", "-force", "-holder", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+top.LockPath(ht))
	select {
	case <-ht.Done():
	case <-time.After(waitTimeout):
		t.Fatalf("the hold outlived its broken node for %v", waitTimeout)
	}
}
