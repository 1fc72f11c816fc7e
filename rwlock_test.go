package zklock_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

func (e *env) rwlock(c *zklock.Client, name string) *zklock.ReadWriteLock {
	e.t.Helper()
	rw, err := zklock.NewReadWriteLock(c, e.root+name)
	require.NoError(e.t, err)
	return rw
}

func TestIntegration_RWReadersShareWritersExclude(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.rwlock(e.client(), "/rw"), e.rwlock(e.client(), "/rw")
	bg := context.Background()

	ra, err := a.ReadLock().Acquire(bg)
	require.NoError(t, err)
	rb, err := b.ReadLock().TryAcquire(bg)
	require.NoError(t, err, "readers share")
	_, err = b.WriteLock().TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "a writer waits for readers")
	require.NoError(t, a.ReadLock().Release(ra))
	require.NoError(t, b.ReadLock().Release(rb))

	wa, err := a.WriteLock().Acquire(bg)
	require.NoError(t, err)
	_, err = b.ReadLock().TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "a reader waits for the writer")
	_, err = b.WriteLock().TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	w2, err := a.WriteLock().Acquire(wa)
	require.NoError(t, err, "the write side re-enters")
	require.NoError(t, a.WriteLock().Release(w2))
	require.NoError(t, a.WriteLock().Release(wa))
	assert.Empty(t, e.children(e.root+"/rw"))
}

// Readers behind a queued writer wait for it, so writers do not starve.
func TestIntegration_RWFairQueue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r1, w, r2 := e.rwlock(e.client(), "/fair"), e.rwlock(e.client(), "/fair"), e.rwlock(e.client(), "/fair")
	bg := context.Background()
	h1, err := r1.ReadLock().Acquire(bg)
	require.NoError(t, err)
	gotW := acquireAsync(bg, w.WriteLock())
	waitParticipants(t, w.WriteLock(), 1)
	gotR2 := acquireAsync(bg, r2.ReadLock())
	waitParticipants(t, r1.ReadLock(), 2)
	select {
	case <-gotR2:
		t.Fatal("a reader overtook a queued writer")
	case <-gotW:
		t.Fatal("the writer got in beside a reader")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, r1.ReadLock().Release(h1))
	aw := await(t, gotW, 10*time.Second)
	require.NoError(t, aw.err)
	select {
	case <-gotR2:
		t.Fatal("the reader got in beside the writer")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, w.WriteLock().Release(aw.ctx))
	ar := await(t, gotR2, 10*time.Second)
	require.NoError(t, ar.err)
	require.NoError(t, r2.ReadLock().Release(ar.ctx))
}

// Downgrade: the write holder takes the read lock at once; its read node
// takes the write node's sequence, so a writer already queued stays behind
// it after the write lock is released (CURATOR-621).
func TestIntegration_RWDowngrade(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rw, other := e.rwlock(e.client(), "/down"), e.rwlock(e.client(), "/down")
	bg := context.Background()
	wctx, err := rw.WriteLock().Acquire(bg)
	require.NoError(t, err)
	gotW := acquireAsync(bg, other.WriteLock())
	waitParticipants(t, other.WriteLock(), 2)

	rctx, err := rw.ReadLock().TryAcquire(wctx)
	require.NoError(t, err, "a writer takes the read lock at once")
	wname, rname := path.Base(rw.WriteLock().LockPath(wctx)), path.Base(rw.ReadLock().LockPath(rctx))
	assert.True(t, strings.HasSuffix(rname, "__READ__"+wname[len(wname)-10:]), "%s takes the place of %s", rname, wname)
	assert.True(t, zklock.IsProtected(rname))

	require.NoError(t, rw.WriteLock().Release(wctx))
	assert.True(t, rw.ReadLock().IsOwnedBy(rctx), "the read hold outlives the write hold")
	select {
	case <-gotW:
		t.Fatal("a queued writer got in while the downgraded reader holds")
	case <-time.After(300 * time.Millisecond):
	}
	_, err = other.ReadLock().TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "new readers queue behind the waiting writer")
	require.NoError(t, rw.ReadLock().Release(rctx))
	a := await(t, gotW, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, other.WriteLock().Release(a.ctx))
}

// The write node vanishes while the downgrade's read node is being created
// (an operator, or a session in trouble), and another session's writer
// takes the lock. The read node must not be granted: it would sort before
// that writer, and a reader and a writer would hold at once.
func TestIntegration_RWDowngradeAfterWriteNodeGone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, f := e.faultClient()
	rw, other := e.rwlock(c, "/gone"), e.rwlock(e.client(), "/gone")
	bg := context.Background()
	wctx, err := rw.WriteLock().Acquire(bg)
	require.NoError(t, err)
	gotW := acquireAsync(bg, other.WriteLock())
	waitParticipants(t, other.WriteLock(), 2)

	writeNode := e.root + "/gone/" + path.Base(rw.WriteLock().LockPath(wctx))
	var a acquired
	hookErr := make(chan error, 1)
	f.setBeforeCreate(func(p string) {
		if !strings.Contains(p, "__READ__") {
			return
		}
		f.setBeforeCreate(nil)
		err := e.admin.Delete(writeNode, -1)
		if err == nil {
			// The other writer now holds; only then does the create go on.
			select {
			case a = <-gotW:
				err = a.err
			case <-time.After(10 * time.Second):
				err = errors.New("the other writer did not get the lock")
			}
		}
		hookErr <- err
	})
	// A context with the write hold's values but not its cancellation, so
	// that the outcome rests on the create alone, not on how fast the
	// write hold's loss cancels wctx.
	_, err = rw.ReadLock().Acquire(context.WithoutCancel(wctx))
	select {
	case herr := <-hookErr:
		require.NoError(t, herr)
	case <-time.After(10 * time.Second):
		t.Fatal("the read node was never created")
	}
	require.ErrorIs(t, err, zklock.ErrLockLost, "no read hold without the write node")
	assert.False(t, rw.ReadLock().IsAcquiredInThisProcess())
	for _, ch := range e.children(e.root + "/gone") {
		assert.NotContains(t, ch, "__READ__", "the refused read node is not left behind")
	}
	require.NoError(t, other.WriteLock().Release(a.ctx))
	waitDone(t, wctx, 10*time.Second)
	require.ErrorIs(t, rw.WriteLock().Release(wctx), zklock.ErrLockLost)
}

func TestIntegration_RWUpgradeRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rw := e.rwlock(e.client(), "/up")
	rctx, err := rw.ReadLock().Acquire(context.Background())
	require.NoError(t, err)
	start := time.Now()
	_, err = rw.WriteLock().Acquire(rctx)
	require.ErrorIs(t, err, zklock.ErrLockUpgrade)
	assert.Less(t, time.Since(start), time.Second, "at once, not a deadlock")
	assert.Len(t, e.children(e.root+"/up"), 1, "no write node was queued")
	// Another context of the same process is simply a new participant.
	_, err = rw.WriteLock().TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	require.NoError(t, rw.ReadLock().Release(rctx))
}

func TestIntegration_RWParticipantsOwnKind(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.rwlock(e.client(), "/kinds"), e.rwlock(e.client(), "/kinds")
	bg := context.Background()
	r, err := a.ReadLock().Acquire(bg)
	require.NoError(t, err)
	got := acquireAsync(bg, b.WriteLock())
	writers := waitParticipants(t, a.WriteLock(), 1)
	readers := waitParticipants(t, a.ReadLock(), 1)
	assert.Contains(t, writers[0], "__WRIT__")
	assert.Equal(t, a.ReadLock().LockPath(r), readers[0])
	require.NoError(t, a.ReadLock().Release(r))
	w := await(t, got, 10*time.Second)
	require.NoError(t, w.err)
	require.NoError(t, b.WriteLock().Release(w.ctx))

	_, err = zklock.NewReadWriteLock(e.client(), "/x", zklock.WithDriver(zklock.StandardDriver{}))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
}
