package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// leaderJSON is leader's documented JSON, spelled out here so that a
// renamed field fails the test.
type leaderJSON struct {
	Path         string  `json:"path"`
	Recipe       string  `json:"recipe"`
	Exists       bool    `json:"exists"`
	Participants int     `json:"participants"`
	Leader       *string `json:"leader"`
	Node         *struct {
		Path    string `json:"path"`
		Role    string `json:"role"`
		Owner   string `json:"owner"`
		Session string `json:"session"`
		Token   int64  `json:"token"`
	} `json:"node"`
}

// leaderJSON runs leader -json on p, wants exit code code, and decodes
// its output.
func (e *env) leaderJSON(p string, code int) leaderJSON {
	e.t.Helper()
	r := e.run("leader", "-json", p)
	require.Equal(e.t, code, r.code, "stderr: %s", r.stderr)
	var v leaderJSON
	require.NoError(e.t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	return v
}

// lead makes a Selector on the test's path lead as id until the test
// ends, and returns the path of its node.
func (e *env) lead(id string) string {
	e.t.Helper()
	sel, err := zklock.NewSelector(e.client(), e.path, id)
	require.NoError(e.t, err)
	leading, done := make(chan struct{}), make(chan error, 1)
	lctx, cancel := context.WithCancel(context.Background())
	go func() {
		done <- sel.Lead(lctx, func(ctx context.Context) error {
			close(leading)
			<-ctx.Done()
			return nil
		})
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	select {
	case <-leading:
	case <-ctx(e.t).Done():
		e.t.Fatalf("%s did not lead", id)
	}
	return e.nodeOf(id)
}

// nodeOf returns the path of the child of the test's path whose data is
// id.
func (e *env) nodeOf(id string) string {
	e.t.Helper()
	for _, ch := range e.children(e.path) {
		data, _, err := e.admin.Get(e.path + "/" + ch)
		require.NoError(e.t, err)
		if string(data) == id {
			return e.path + "/" + ch
		}
	}
	e.t.Fatalf("no node of %s under %s", id, e.path)
	return ""
}

// A Selector's layout is a mutex's: inspect shows it as a mutex, without
// a leader, unless -selector says it is a Selector; leader finds its
// leader.
func TestLeaderSelector(t *testing.T) {
	e := setup(t)
	node := e.lead("sel-a")
	sel, err := zklock.NewSelector(e.client(), e.path, "sel-b")
	require.NoError(t, err)
	w := e.queue(e.path, 2, func(ctx context.Context) error {
		return sel.Lead(ctx, func(context.Context) error { return nil })
	})
	defer w.stop(t)

	r := e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": mutex, 1 holder, 1 waiter\n")
	assert.NotContains(t, r.stdout, "leader")
	r = e.run("inspect", "-selector", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, e.path+": selector, 1 holder, 1 waiter\nleader: \"sel-a\"\n")
	r = e.run("inspect", "-selector", "-json", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	var v struct {
		jsonView
		Leader string `json:"leader"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	assert.Equal(t, "selector", v.Recipe)
	assert.Equal(t, "sel-a", v.Leader)

	_, stat, err := e.admin.Get(node)
	require.NoError(t, err)
	r = e.run("leader", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, fmt.Sprintf(`^leader: "sel-a" \(selector, 2 participants\)\nnode: %s \(session 0x%x, age \S+, token %d\)\n$`,
		regexp.QuoteMeta(node), stat.EphemeralOwner, stat.Czxid), r.stdout)
	lv := e.leaderJSON(e.path, 0)
	require.NotNil(t, lv.Leader)
	require.NotNil(t, lv.Node)
	assert.Equal(t, "sel-a", *lv.Leader)
	assert.Equal(t, leaderJSON{Path: e.path, Recipe: "selector", Exists: true, Participants: 2}, leaderJSON{
		Path: lv.Path, Recipe: lv.Recipe, Exists: lv.Exists, Participants: lv.Participants})
	assert.Equal(t, node, lv.Node.Path)
	assert.Equal(t, "holder", lv.Node.Role)
	assert.Equal(t, stat.Czxid, lv.Node.Token)
}

// leader names a latch's leader: its first participant's id.
func TestLeaderLatch(t *testing.T) {
	e := setup(t)
	a, err := zklock.NewElection(e.client(), e.path, "node-a")
	require.NoError(t, err)
	hd, err := a.Campaign(ctx(t))
	require.NoError(t, err)
	b, err := zklock.NewElection(e.client(), e.path, "node-b")
	require.NoError(t, err)
	w := e.queue(e.path, 2, func(ctx context.Context) error { _, err := b.Campaign(ctx); return err })

	r := e.run("leader", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^leader: "node-a" \(latch, 2 participants\)\nnode: `+regexp.QuoteMeta(hd.Path())+` \(session `, r.stdout)
	lv := e.leaderJSON(e.path, 0)
	require.NotNil(t, lv.Leader)
	assert.Equal(t, "node-a", *lv.Leader)
	assert.Equal(t, "latch", lv.Recipe)
	assert.Equal(t, hd.Path(), lv.Node.Path)
	w.stop(t)
	require.NoError(t, hd.Release())
}

// No leader: a missing path exits 4, a path without participants exits 1
// with "no leader" (the JSON says so too), and another recipe's path
// exits 1, for inspect -selector too.
func TestLeaderNone(t *testing.T) {
	e := setup(t)
	r := e.run("leader", e.path)
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, "zklock leader: no node "+e.path)
	assert.Empty(t, r.stdout)
	lv := e.leaderJSON(e.path, 4)
	assert.Equal(t, leaderJSON{Path: e.path, Recipe: "none"}, lv)

	_, err := e.admin.Create(e.path, nil, 0, zk.WorldACL(zk.PermAll)) // under the root setup made
	require.NoError(t, err)
	r = e.run("leader", e.path)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Equal(t, "zklock leader: no leader: "+e.path+" has no participants\n", r.stderr)
	assert.Empty(t, r.stdout)
	lv = e.leaderJSON(e.path, 1)
	assert.Equal(t, leaderJSON{Path: e.path, Recipe: "none", Exists: true}, lv)

	rw, err := zklock.NewReadWriteLock(e.client(), e.path)
	require.NoError(t, err)
	h, err := rw.WriteLock().Acquire(ctx(t))
	require.NoError(t, err)
	for _, args := range [][]string{{"leader", e.path}, {"leader", "-json", e.path}, {"inspect", "-selector", e.path}} {
		r = e.run(args...)
		assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, e.path+" is a rwlock, not an election", args)
		assert.Empty(t, r.stdout, args)
	}
	require.NoError(t, rw.WriteLock().Release(h))
	for _, args := range [][]string{{"leader"}, {"leader", "rel"}, {"leader", e.path, "extra"}} {
		r = e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
}
