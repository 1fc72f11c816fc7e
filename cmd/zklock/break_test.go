package main

import (
	"context"
	"errors"
	"path"
	"strings"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// holdWithOwner takes the Mutex on the test's path with node data owner,
// and returns the Mutex and the hold.
func (e *env) holdWithOwner(owner string) (*zklock.Mutex, context.Context) {
	e.t.Helper()
	c := e.client(zklock.WithNodeData([]byte(owner)))
	m, err := zklock.NewMutex(c, e.path)
	require.NoError(e.t, err)
	h, err := m.Acquire(ctx(e.t))
	require.NoError(e.t, err)
	return m, h
}

// lostHold waits for the hold to end by a loss.
func lostHold(t *testing.T, h context.Context) {
	t.Helper()
	select {
	case <-h.Done():
		assert.ErrorIs(t, context.Cause(h), zklock.ErrLockLost)
	case <-ctx(t).Done():
		t.Fatalf("the hold did not end within %v", waitTimeout)
	}
}

// break -force deletes the holder's node, says whose it was, and the
// holder's hold ends.
func TestBreakForce(t *testing.T) {
	e := setup(t)
	m, h := e.holdWithOwner("stuck-job")
	node := m.LockPath(h)
	v := e.inspectJSON(e.path)
	require.Len(t, v.Nodes, 1)
	r := e.run("break", "-force", e.path, node[len(node)-10:])
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+node+" (session "+v.Nodes[0].Session+", owner stuck-job")
	assert.Empty(t, e.children(e.path))
	lostHold(t, h)
}

// Without -force, break asks on a terminal, and refuses without one.
func TestBreakConfirm(t *testing.T) {
	e := setup(t)
	m, h := e.holdWithOwner("stuck-job")
	node := m.LockPath(h)
	r := e.run("break", e.path, path.Base(node)) // stdin: /dev/null
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "stdin is not a terminal")
	assert.Contains(t, r.stderr, "-force")
	assert.Len(t, e.children(e.path), 1, "nothing deleted")

	for _, answer := range []string{"n", ""} {
		code, stdout, stderr := e.breakOnTerminal(t, answer, path.Base(node))
		assert.Equal(t, 1, code, "answer %q: %s", answer, stderr)
		assert.Contains(t, stderr, "delete "+node+" (session 0x", answer)
		assert.Contains(t, stderr, "not confirmed", answer)
		assert.Empty(t, stdout, answer)
		assert.Len(t, e.children(e.path), 1, "answer %q: nothing deleted", answer)
	}
	code, stdout, stderr := e.breakOnTerminal(t, "y", path.Base(node))
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "deleted "+node)
	lostHold(t, h)
}

// breakOnTerminal runs break PATH NODE with a pseudo-terminal on stdin,
// answers the prompt, and returns the exit code, stdout and stderr.
func (e *env) breakOnTerminal(t *testing.T, answer, node string) (int, string, string) {
	t.Helper()
	master, slave := openPTY(t)
	cmd := e.command("break", e.path, node)
	var stdout syncBuffer
	cmd.Stdin, cmd.Stdout = slave, &stdout
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	})
	waitFor(t, "the prompt", func() bool { return strings.Contains(p.stderr.String(), "[y/N]") })
	_, err := master.Write([]byte(answer + "\n"))
	require.NoError(t, err)
	return p.wait(t), stdout.String(), p.stderr.String()
}

// break finds a semaphore's nodes under leases/ and locks/, and refuses
// nodes that are not lock nodes; a missing path or node exits 4.
func TestBreakSemaphoreAndMissing(t *testing.T) {
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(), e.path, 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	r := e.run("break", "-force", e.path, "leases/"+path.Base(lease.Path()))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+lease.Path())
	select {
	case <-lease.Done():
	case <-ctx(t).Done():
		t.Fatal("the lease did not end")
	}
	assert.Empty(t, e.children(e.path+"/leases"))
	err = lease.Release()
	assert.True(t, err == nil || errors.Is(err, zklock.ErrLockLost), "%v", err)

	r = e.run("break", "-force", e.path, "lock-0000000099")
	assert.Equal(t, 4, r.code, r.stderr)
	r = e.run("break", "-force", e.root+"/nosuch", "lock-0000000000")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, "does not exist")
	for _, args := range [][]string{{"break", e.path}, {"break", "rel", "x"}, {"break", "-force", e.path, "a", "b"}} {
		r := e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
}

// break -holder deletes the holder's node without its name, as break
// NODE does: it asks on a terminal, refuses without one unless -force, and
// the next in the queue gets the lock.
func TestBreakHolder(t *testing.T) {
	e := setup(t)
	m, h := e.holdWithOwner("stuck-job")
	node := m.LockPath(h)
	m2, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	next := e.queue(e.path, 2, func(ctx context.Context) error {
		h2, err := m2.Acquire(ctx)
		if err == nil {
			err = m2.Release(h2)
		}
		return err
	})

	r := e.run("break", "-holder", e.path)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "stdin is not a terminal")
	code, stdout, stderr := e.breakOnTerminal(t, "n", "-holder")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "delete "+node+" (session 0x")
	assert.Empty(t, stdout)
	assert.Len(t, e.children(e.path), 2, "nothing deleted")

	r = e.run("break", "-force", "-holder", e.path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "deleted "+node+" (session ")
	assert.Contains(t, r.stdout, "owner stuck-job")
	lostHold(t, h)
	select {
	case err := <-next.done:
		assert.NoError(t, err, "the next in the queue got the lock")
	case <-ctx(t).Done():
		t.Fatal("the waiter did not get the lock")
	}
}

// -holder refuses where several hold (a semaphore's leases, readers) and
// deletes nothing; a lock without a holder, or without a path, exits 4;
// -holder and NODE exclude each other.
func TestBreakHolderRefused(t *testing.T) {
	e := setup(t)
	sem := e.root + "/sem"
	s, err := zklock.NewSemaphore(e.client(), sem, 3)
	require.NoError(t, err)
	leases, err := s.AcquireN(ctx(t), 2)
	require.NoError(t, err)
	r := e.run("break", "-force", "-holder", sem)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "zklock break: "+sem+" is a semaphore, whose 2 leases all hold (leases/")
	assert.Contains(t, r.stderr, "name the lease to break, as leases/NAME")
	assert.Len(t, e.children(sem+"/leases"), 2, "nothing deleted")
	require.NoError(t, s.ReturnAll(leases))

	for range 2 { // two readers hold
		rw, err := zklock.NewReadWriteLock(e.client(), e.path)
		require.NoError(t, err)
		h, err := rw.ReadLock().Acquire(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, rw.ReadLock().Release(h)) })
	}
	r = e.run("break", "-force", "-holder", e.path)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, e.path+" has 2 holders (_c_")
	assert.Contains(t, r.stderr, "name the node to break")
	assert.Len(t, e.children(e.path), 2, "nothing deleted")

	free := e.root + "/free" // persistent: ZooKeeper does not reap it, as it may an empty lock's container
	_, err = e.admin.Create(free, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	r = e.run("break", "-force", "-holder", free)
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, free+" has no holder: nothing to break")
	r = e.run("break", "-force", "-holder", e.root+"/nosuch")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stderr, "lock path "+e.root+"/nosuch does not exist")
	r = e.run("break", "-force", "-holder", e.path, "lock-0000000000")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, `-holder finds the node to delete: give PATH alone, not NODE "lock-0000000000"`)
}
