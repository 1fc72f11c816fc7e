package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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
