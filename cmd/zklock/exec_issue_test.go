package main

import (
	"errors"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// startLoop starts exec with args on the test's path, running a command
// that writes "TERM" to a file when it gets SIGTERM, then exits 0. It
// waits for the command to start and returns exec, the file, and the
// path of exec's lock node.
func (e *env) startLoop(args ...string) (*proc, string, string) {
	e.t.Helper()
	dir := e.t.TempDir()
	got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
	script := `trap 'echo TERM > "$1"; exit 0' TERM; touch "$2"; while :; do sleep 0.02; done`
	args = append(append([]string{"exec"}, args...), e.path, "--", "sh", "-c", script, "sh", got, ready)
	p := e.start(args...)
	waitFor(e.t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
	nodes := e.children(e.path)
	require.Len(e.t, nodes, 1)
	return p, got, path.Join(e.path, nodes[0])
}

// exec -revocable honours 'zklock revoke': the command gets -signal, and
// the lock is released when it exits, with the command's exit code.
func TestExecRevocable(t *testing.T) {
	e := setup(t)
	p, got, node := e.startLoop("-revocable")
	r := e.run("revoke", e.path, node)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 0, p.wait(t), "the command's own exit code; stderr: %s", p.stderr)
	assert.Equal(t, "TERM", fileText(t, got), "the command got SIGTERM")
	assert.Contains(t, p.stderr.String(), "revocation of lock "+e.path+" requested: sending terminated to the command")
	assert.Empty(t, e.children(e.path), "released after the command exited")
}

// Without -revocable, revoke does not claim success: it says the holder
// releases only if revocable, and with -wait it sees that it did not.
func TestRevokeNotRevocableHolder(t *testing.T) {
	e := setup(t)
	p, _, node := e.startLoop()
	r := e.run("revoke", e.path, node)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "the holder releases only if it is revocable")
	r = e.run("revoke", "-wait", "1s", e.path, node)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, node+" still held after 1s")
	assert.Len(t, e.children(e.path), 1, "the holder kept its lock")
	p.signal(t, 15)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

// revoke -wait reports a release by a revocable holder.
func TestRevokeWaitReleased(t *testing.T) {
	e := setup(t)
	p, _, node := e.startLoop("-revocable")
	r := e.run("revoke", "-wait", "20s", e.path, node)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "released: "+node)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

// -owner sets the node's data, which inspect shows as its owner.
func TestExecOwner(t *testing.T) {
	e := setup(t)
	p, _, node := e.startLoop("-owner", "nightly-billing@host7")
	v := e.inspectJSON(e.path)
	require.Len(t, v.Nodes, 1)
	assert.Equal(t, node, v.Nodes[0].Path)
	assert.Equal(t, "nightly-billing@host7", v.Nodes[0].Owner)
	p.signal(t, 15)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

// -n 0 and negative values are refused, not taken as a Mutex; -revocable
// excludes -n.
func TestExecBadLeases(t *testing.T) {
	e := setup(t)
	for _, args := range [][]string{
		{"exec", "-n", "0", e.path, "--", "true"},
		{"exec", "-n", "-2", e.path, "--", "true"},
		{"exec", "-revocable", "-n", "2", e.path, "--", "true"},
	} {
		r := e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "zklock exec: -", args)
	}
	assert.Empty(t, e.children(e.path), "nothing taken")
}

// An ACL that refuses the session: the error names the operation and the
// path once, and hints at -auth.
func TestExecNoAuthSaidOnce(t *testing.T) {
	e := setup(t)
	for _, p := range []string{path.Dir(e.root), e.root} {
		_, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
	acl := zk.DigestACL(zk.PermAll, "ops", "s3cret")
	c := e.client(zklock.WithAuth("digest", []byte("ops:s3cret")), zklock.WithACL(func(string) []zk.ACL { return acl }))
	m, err := zklock.NewMutex(c, e.path)
	require.NoError(t, err)
	h, err := m.Acquire(ctx(t))
	require.NoError(t, err)

	r := e.run("exec", e.path, "--", "true")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, e.path), "the path once: %s", r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "acquire"), "the operation once: %s", r.stderr)
	assert.NotContains(t, r.stderr, "zklock: ", "the tool's prefix only")
	assert.Contains(t, r.stderr, "zklock exec: acquire "+e.path+": zk: not authenticated")
	assert.Contains(t, r.stderr, "check -auth")

	require.NoError(t, m.Release(h))
	if err := c.Delete(ctx(t), e.path, -1); !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
}

// -connect-timeout bounds the wait for a session; the default session
// timeout is the library's, 30s.
func TestConnectTimeout(t *testing.T) {
	e := setup(t)
	// A server that accepts and never answers: the connect timeout ends
	// the wait.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	addr := silent.Addr().String()
	for _, args := range [][]string{
		{"inspect", "-servers", addr, "-connect-timeout", "300ms", e.path},
		{"exec", "-servers", addr, "-connect-timeout", "300ms", e.path, "--", "true"},
	} {
		r := e.run(args...)
		assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "connect to "+addr+": no ZooKeeper session within 300ms", args)
		// What the server did, as the library says it: it accepted the
		// connection and never answered.
		assert.Contains(t, r.stderr, "(-connect-timeout): "+addr+" accepted the connection but has not answered", args)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: one line: %s", args, r.stderr)
		// The error comes at the connect timeout; the connection that
		// go-zookeeper still holds in its handshake with the silent server
		// (for ten read timeouts: 200s) is cut within a second and a half.
		// The bound leaves room for the command's start on a busy machine.
		assert.Less(t, r.took, 10*time.Second, args)
	}
	// A refused address is said to be refused, at once.
	r := e.run("inspect", "-servers", "127.0.0.1:1", "-connect-timeout", "20s", e.path)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "connection refused")
	assert.Less(t, r.took, 10*time.Second, "refused early, not at the connect timeout")
	r = e.run("inspect", "-connect-timeout", "0s", e.path)
	assert.Equal(t, 2, r.code, r.stderr)
	for _, cmd := range []string{"inspect", "list", "revoke", "break", "exec"} {
		r := e.run("help", cmd)
		require.Equal(t, 0, r.code, cmd)
		assert.Regexp(t, `-connect-timeout duration\n.*\(default 10s\)`, r.stdout, cmd)
		assert.Regexp(t, `-session-timeout duration\n.*\(default 30s, as the library's\)\n`, r.stdout, cmd)
	}
}

// A revocation that comes while exec -revocable waits is honoured when
// the lock is granted: exec releases at once, runs nothing, and exits 3.
func TestExecRevokedWhileWaiting(t *testing.T) {
	e := setup(t)
	release := e.hold()
	ran := filepath.Join(t.TempDir(), "ran")
	p := e.start("exec", "-revocable", e.path, "--", "touch", ran)
	waitFor(t, "exec's node queued", func() bool { return len(e.children(e.path)) == 2 })
	nodes := e.children(e.path)
	v := e.inspectJSON(e.path)
	require.Len(t, v.Nodes, 2)
	waiter := v.Nodes[1].Path
	require.Contains(t, nodes, path.Base(waiter))
	r := e.run("revoke", e.path, waiter)
	require.Equal(t, 0, r.code, r.stderr)
	waitFor(t, "the revocation written", func() bool {
		data, _, err := e.admin.Get(waiter)
		return err == nil && string(data) == "__REVOKE__"
	})
	release()
	assert.Equal(t, 3, p.wait(t), "stderr: %s", p.stderr)
	assert.Contains(t, p.stderr.String(), "requested while waiting")
	_, err := os.Stat(ran)
	assert.True(t, os.IsNotExist(err), "the command did not run")
	assert.Empty(t, e.children(e.path), "released")
}
