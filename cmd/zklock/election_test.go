package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// inspect recognises a leader latch: the leader first, as the holder,
// with the participants' ids as owners, and the leader's id apart.
func TestInspectLatch(t *testing.T) {
	e := setup(t)
	ids := []string{"node-a", "node-b", ""}
	var holds []*zklock.Hold
	var waiting sync.WaitGroup
	for i, id := range ids {
		el, err := zklock.NewElection(e.client(), e.path, id)
		require.NoError(t, err)
		if i == 0 {
			hd, err := el.Campaign(ctx(t))
			require.NoError(t, err)
			holds = append(holds, hd)
			continue
		}
		cctx := ctx(t)
		waiting.Add(1)
		go func() { // leads in turn once the first resigns, and resigns at once
			defer waiting.Done()
			if hd, err := el.Campaign(cctx); err == nil {
				assert.NoError(t, hd.Release())
			}
		}()
		waitFor(t, "participant "+id, func() bool { return len(e.children(e.path)) == i+1 })
	}
	v := e.inspectJSON(e.path)
	assert.Equal(t, "latch", v.Recipe)
	assert.Equal(t, 1, v.Holders)
	assert.Equal(t, 2, v.Waiters)
	assert.Equal(t, []string{"holder", "waiter", "waiter"}, v.column(func(i int) string { return v.Nodes[i].Role }))
	assert.Equal(t, ids, v.column(func(i int) string { return v.Nodes[i].Owner }))
	assert.Equal(t, holds[0].Path(), v.Nodes[0].Path)
	r := e.run("inspect", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "latch, 1 holder, 2 waiters")
	assert.Contains(t, r.stdout, `leader: "node-a"`)
	r = e.run("list", e.root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "latch")
	require.NoError(t, holds[0].Release())
	waiting.Wait()
}

// exec -latch runs the command only while it leads: behind a Go leader it
// waits; once the leader resigns it leads, with the token in its
// environment, and resigns when the command exits.
func TestExecLatch(t *testing.T) {
	e := setup(t)
	el, err := zklock.NewElection(e.client(), e.path, "go-leader")
	require.NoError(t, err)
	leader, err := el.Campaign(ctx(t))
	require.NoError(t, err)

	dir := t.TempDir()
	envFile, done := filepath.Join(dir, "env"), filepath.Join(dir, "done")
	script := `echo "$ZKLOCK_TOKEN $ZKLOCK_NODE" > "$1"; ` + untilFile
	p := e.start("exec", "-latch", "cli-node", e.path, "--", "sh", "-c", script, "sh", envFile, done)
	waitFor(t, "the CLI campaigns", func() bool { return len(e.children(e.path)) == 2 })
	ps, err := el.Participants(ctx(t))
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, "cli-node", ps[1].ID)
	_, statErr := os.Stat(envFile)
	assert.True(t, os.IsNotExist(statErr), "the command does not run while another leads")

	require.NoError(t, leader.Release())
	fields := strings.Fields(fileText(t, envFile))
	require.Len(t, fields, 2)
	id, err := el.Leader(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, "cli-node", id)
	_, stat, err := e.admin.Get(fields[1])
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatInt(stat.Czxid, 10), fields[0])

	require.NoError(t, os.WriteFile(done, nil, 0o644))
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Empty(t, e.children(e.path), "resigned on exit")
}

// exec -latch: a deleted leader node is a lost leadership; the command
// gets -signal and exec exits 3.
func TestExecLatchLost(t *testing.T) {
	e := setup(t)
	running := filepath.Join(t.TempDir(), "running")
	p := e.start("exec", "-latch", "x", e.path, "--", "sh", "-c", `trap 'exit 0' TERM; touch "$1"; while :; do sleep 0.02; done`, "sh", running)
	// Deleted once the command runs, that is once the CLI leads: deleted
	// while its Campaign is still deciding, the node is an acquire that
	// failed (exit 1), not a leadership lost.
	waitFor(t, "the command runs", func() bool { _, err := os.Stat(running); return err == nil })
	require.NoError(t, e.admin.Delete(e.path+"/"+e.children(e.path)[0], -1))
	assert.Equal(t, 3, p.wait(t), "stderr: %s", p.stderr)
}

func TestExecLatchBadFlags(t *testing.T) {
	e := setup(t)
	for _, extra := range [][]string{{"-n", "2"}, {"-read"}, {"-try"}, {"-revocable"}, {"-owner", "o"}} {
		args := append(append([]string{"exec", "-latch", "x"}, extra...), e.path, "--", "true")
		r := e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", extra, r.stderr)
	}
}
