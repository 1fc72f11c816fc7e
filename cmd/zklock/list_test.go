package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// listJSON is list's documented JSON, spelled out here so that a renamed
// field fails the test.
type listJSON struct {
	Path    string   `json:"path"`
	Recipe  string   `json:"recipe"`
	Holders int      `json:"holders"`
	Waiters int      `json:"waiters"`
	Owners  []string `json:"owners"`
	Error   string   `json:"error"`
}

// list finds the mutexes, read/write locks and semaphores under a prefix,
// at any depth, a lock below another lock too, with their holders.
func TestList(t *testing.T) {
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte("owner-a")))
	var releases []func()
	mutex := func(p string) {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		h, err := m.Acquire(ctx(t))
		require.NoError(t, err)
		releases = append(releases, func() { require.NoError(t, m.Release(h)) })
	}
	mutex(e.root + "/a/m")
	mutex(e.root + "/a/m/sub") // a lock below a lock
	rw, err := zklock.NewReadWriteLock(c, e.root+"/b/rw")
	require.NoError(t, err)
	hr, err := rw.ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	s, err := zklock.NewSemaphore(c, e.root+"/c/d/sem", 3)
	require.NoError(t, err)
	leases, err := s.AcquireN(ctx(t), 2)
	require.NoError(t, err)
	m2, err := zklock.NewMutex(e.client(), e.root+"/a/m")
	require.NoError(t, err)
	w := e.queue(e.root+"/a/m", 3, func(ctx context.Context) error { _, err := m2.Acquire(ctx); return err })

	r := e.run("list", "-json", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	var got []listJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, []listJSON{
		{Path: e.root + "/a/m", Recipe: "mutex", Holders: 1, Waiters: 1, Owners: []string{"owner-a"}},
		{Path: e.root + "/a/m/sub", Recipe: "mutex", Holders: 1, Owners: []string{"owner-a"}},
		{Path: e.root + "/b/rw", Recipe: "rwlock", Holders: 1, Owners: []string{"owner-a"}},
		{Path: e.root + "/c/d/sem", Recipe: "semaphore", Holders: 2, Owners: []string{"owner-a", "owner-a"}},
	}, got)
	r = e.run("list", e.root+"/a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `PATH\s+RECIPE\s+HOLDERS\s+WAITERS\s+OWNERS\n`, r.stdout)
	assert.Regexp(t, e.root+`/a/m\s+mutex\s+1\s+1\s+owner-a\n`, r.stdout)
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
