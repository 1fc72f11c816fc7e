package zklock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

func (e *env) semaphore(c *zklock.Client, name string, max int) *zklock.Semaphore {
	e.t.Helper()
	s, err := zklock.NewSemaphore(c, e.root+name, max)
	require.NoError(e.t, err)
	return s
}

func TestIntegration_SemaphoreBoundsHolders(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		s := e.semaphore(e.client(), "/sem", 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				l, err := s.Acquire(context.Background())
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for old := most.Load(); n > old && !most.CompareAndSwap(old, n); old = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				if err := l.Release(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.LessOrEqual(t, most.Load(), int32(3), "never more than maxLeases holders")

	// Three sessions hold leases at once; a fourth waits for one of them.
	var held []*zklock.Lease
	for range 3 {
		l, err := e.semaphore(e.client(), "/sem", 3).Acquire(context.Background())
		require.NoError(t, err)
		held = append(held, l)
	}
	fourth := e.semaphore(e.client(), "/sem", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := fourth.Acquire(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	got := make(chan error, 1)
	go func() {
		l, err := fourth.Acquire(context.Background())
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	require.NoError(t, held[1].Release())
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a returned lease was not granted")
	}
	require.NoError(t, fourth.ReturnAll(held))
}

func TestIntegration_SemaphoreAcquireNAllOrNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.semaphore(e.client(), "/n", 4), e.semaphore(e.client(), "/n", 4)
	bg := context.Background()
	unused := e.semaphore(e.client(), "/never", 2)
	parts, err := unused.Participants(bg)
	require.NoError(t, err)
	assert.Empty(t, parts, "an unused semaphore has no participants")

	held, err := a.AcquireN(bg, 3)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	_, err = b.AcquireN(ctx, 2)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	parts, err = b.Participants(bg)
	require.NoError(t, err)
	assert.Len(t, parts, 3, "the failed AcquireN returned what it took")
	require.NoError(t, a.ReturnAll(held))

	// Two callers that each need 3 of 4 leases cannot deadlock.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, s := range []*zklock.Semaphore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ctx, cancel := context.WithTimeout(bg, 20*time.Second)
				ls, err := s.AcquireN(ctx, 3)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				errs2 := s.ReturnAll(ls)
				if errs2 != nil {
					errs <- errs2
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, err = a.AcquireN(bg, 5)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	_, err = zklock.NewSemaphore(e.client(), e.root+"/z", 0)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
}

func TestIntegration_LeaseAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(), e.root+"/lease", 2, zklock.WithLockData([]byte("worker-1")))
	require.NoError(t, err)
	bg := context.Background()
	l1, err := s.Acquire(bg)
	require.NoError(t, err)
	l2, err := s.Acquire(bg)
	require.NoError(t, err)
	assert.Greater(t, l2.Token(), l1.Token())
	assert.True(t, strings.HasPrefix(l1.Path(), e.root+"/lease/leases/_c_"), l1.Path())
	assert.True(t, zklock.IsProtected(l1.Node()))
	assert.Contains(t, l1.Node(), "-lease-")
	data, err := l1.Data(bg)
	require.NoError(t, err)
	assert.Equal(t, "worker-1", string(data))
	parts, err := s.Participants(bg)
	require.NoError(t, err)
	assert.Equal(t, []string{l1.Node(), l2.Node()}, parts)

	_, err = e.admin.Multi(l1.CheckOp())
	require.NoError(t, err)
	require.NoError(t, l1.Release())
	require.ErrorIs(t, l1.Release(), zklock.ErrNotHeld, "a lease is released once, as every Hold")
	require.ErrorIs(t, l1.Err(), zklock.ErrReleased)
	require.ErrorIs(t, context.Cause(l1.Context()), zklock.ErrReleased)
	select {
	case <-l1.Done():
	default:
		t.Fatal("Done not closed by Release")
	}
	_, err = e.admin.Multi(l1.CheckOp())
	require.ErrorIs(t, err, zk.ErrNoNode)

	// A lease deleted by someone else is lost.
	require.NoError(t, e.admin.Delete(l2.Path(), -1))
	select {
	case <-l2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed by the loss")
	}
	require.ErrorIs(t, l2.Err(), zklock.ErrLockLost, "the lease's cause says it was lost")
	_, err = l2.Hold().Token()
	require.ErrorIs(t, err, zklock.ErrLockLost, "a lost lease's Hold.Token says so")
	require.ErrorIs(t, l2.Release(), zklock.ErrLockLost)
	require.ErrorIs(t, l2.Release(), zklock.ErrNotHeld)
}

// A Lease's Token and CheckOp give its Hold's values while the lease
// stands: the same token and the same check, on a Client with a
// namespace too (the check's path is the full path). Once the lease has
// ended, the Hold's are the checked forms: ErrNotHeld after a release,
// ErrLockLost after a loss.
func TestIntegration_LeaseTokenAndCheckOpAreHolds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(zklock.WithNamespace(strings.TrimPrefix(e.root, "/") + "/ns"))
	s, err := zklock.NewSemaphore(c, "/tok", 2)
	require.NoError(t, err)
	bg := context.Background()
	released, err := s.AcquireN(bg, 1)
	require.NoError(t, err)
	lost, err := s.Acquire(bg)
	require.NoError(t, err)
	for _, l := range []*zklock.Lease{released[0], lost} {
		tok, err := l.Hold().Token()
		require.NoError(t, err)
		assert.NotZero(t, tok)
		assert.Equal(t, tok, l.Token(), "the Hold's token")
		check, err := l.Hold().CheckOp()
		require.NoError(t, err)
		assert.Equal(t, check, l.CheckOp(), "the Hold's check")
		assert.Equal(t, e.root+"/ns/tok/leases/"+l.Node(), l.CheckOp().Path, "the full path")
	}

	require.NoError(t, released[0].Release())
	_, err = released[0].Hold().Token()
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	_, err = released[0].Hold().CheckOp()
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	require.NoError(t, e.admin.Delete(e.root+"/ns"+lost.Path(), -1))
	select {
	case <-lost.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost when its node was deleted")
	}
	_, err = lost.Hold().Token()
	require.ErrorIs(t, err, zklock.ErrLockLost)
	_, err = lost.Hold().CheckOp()
	require.ErrorIs(t, err, zklock.ErrLockLost)
	require.ErrorIs(t, lost.Release(), zklock.ErrLockLost)
}

// A context with a cause must not make Semaphore or SemaphoreMutex panic:
// an Acquire that times out behind a queued waiter returns an error that
// wraps both context.DeadlineExceeded and the cause.
func TestIntegration_SemaphoreContextCause(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	causeCtx := func() (context.Context, context.CancelFunc, error) {
		cause := errors.New("test cause")
		ctx, cancel := context.WithTimeoutCause(bg, 300*time.Millisecond, cause)
		return ctx, cancel, cause
	}

	// semSetup: a Semaphore of one lease on /sem held by client A, client
	// B queued for it; returns the held lease, B's outcome, and a
	// Semaphore for client C.
	semSetup := func(t *testing.T, e *env) (*zklock.Lease, <-chan leased, *zklock.Semaphore) {
		held, err := e.semaphore(e.client(), "/sem", 1).Acquire(bg)
		require.NoError(t, err)
		queued := leaseAsync(bg, e.semaphore(e.client(), "/sem", 1))
		waitChildren(t, e, e.root+"/sem/leases", 2)
		return held, queued, e.semaphore(e.client(), "/sem", 1)
	}
	semCleanup := func(t *testing.T, held *zklock.Lease, queued <-chan leased) {
		require.NoError(t, held.Release())
		q := await(t, queued, 15*time.Second)
		require.NoError(t, q.err, "the queued waiter gets the lease")
		require.NoError(t, q.lease.Release())
	}

	t.Run("Semaphore.Acquire", func(t *testing.T) {
		e := setup(t)
		held, queued, third := semSetup(t, e)
		ctx, cancel, cause := causeCtx()
		defer cancel()
		var (
			l   *zklock.Lease
			err error
		)
		if noPanic(t, "Semaphore.Acquire with a cause context", func() { l, err = third.Acquire(ctx) }) {
			assert.Nil(t, l)
			if l != nil {
				assert.NoError(t, l.Release())
			}
			assert.Error(t, err)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, cause)
		}
		semCleanup(t, held, queued)
	})

	t.Run("Semaphore.AcquireN", func(t *testing.T) {
		e := setup(t)
		held, queued, third := semSetup(t, e)
		ctx, cancel, cause := causeCtx()
		defer cancel()
		var (
			leases []*zklock.Lease
			err    error
		)
		if noPanic(t, "Semaphore.AcquireN with a cause context", func() { leases, err = third.AcquireN(ctx, 1) }) {
			assert.Empty(t, leases)
			assert.NoError(t, third.ReturnAll(leases))
			assert.Error(t, err, "AcquireN that timed out must report it")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, cause)
		}
		semCleanup(t, held, queued)
	})

	t.Run("SemaphoreMutex.Acquire", func(t *testing.T) {
		e := setup(t)
		newSM := func() *zklock.SemaphoreMutex {
			m, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/semmutex")
			require.NoError(t, err)
			return m
		}
		holder, waiter, third := newSM(), newSM(), newSM()
		h, err := holder.Acquire(bg)
		require.NoError(t, err)
		queued := make(chan acquired, 1)
		go func() {
			c, err := waiter.Acquire(bg)
			queued <- acquired{c, err, time.Now()}
		}()
		waitChildren(t, e, e.root+"/semmutex/leases", 2)

		ctx, cancel, cause := causeCtx()
		defer cancel()
		var hc context.Context
		if noPanic(t, "SemaphoreMutex.Acquire with a cause context", func() { hc, err = third.Acquire(ctx) }) {
			assert.Nil(t, hc)
			if hc != nil && err == nil {
				assert.NoError(t, third.Release(hc))
			}
			assert.Error(t, err)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, cause)
		}

		require.NoError(t, holder.Release(h))
		a := await(t, queued, 15*time.Second)
		require.NoError(t, a.err, "the queued waiter gets the lock")
		require.NoError(t, waiter.Release(a.ctx))
	})
}

// A semaphore Acquire that is waiting must ride out a short connection
// blip (the same session comes back) and get its lease afterwards.
func TestIntegration_SemaphoreRidesOutBlip(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	held, err := e.semaphore(e.client(), "/blip", 1).Acquire(bg)
	require.NoError(t, err)

	faults := e.link()
	wc := e.client(zklock.WithSessionTimeout(4*time.Second), zklock.WithDialer(faults.Dial))
	got := leaseAsync(bg, e.semaphore(wc, "/blip", 1))
	waitChildren(t, e, e.root+"/blip/leases", 2)

	faults.Cut()
	waitState(t, wc, 10*time.Second, zklock.StateReconnected)
	require.NoError(t, held.Release())

	w := await(t, got, 15*time.Second)
	require.NoError(t, w.err, "the waiter must get the lease after a blip within its session")
	require.NoError(t, w.lease.Release())
}

// TryAcquire takes a free lease at once and, when none is free, returns
// ErrLocked at once and leaves no node behind.
func TestIntegration_SemaphoreTryAcquire(t *testing.T) {
	t.Parallel()
	e := setup(t)
	s := e.semaphore(e.client(), "/try", 1)
	bg := context.Background()
	l1, err := s.TryAcquire(bg)
	require.NoError(t, err)
	_, err = s.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	assert.Len(t, e.children(e.root+"/try/leases"), 1, "the refused TryAcquire left a node")
	require.NoError(t, l1.Release())
	l2, err := s.TryAcquire(bg)
	require.NoError(t, err)
	require.NoError(t, l2.Release())
}

// A Semaphore's acquire costs the requests its protocol needs and no
// more: the internal lock's create and the listing in its write, each
// lease's create with one listing in the last one's write, on which the
// lease rule decides; its release deletes the leases and the internal
// lock node. A full TryAcquire peeks and writes nothing. A waiting
// acquire lists the leases once more when they change. (getData, the leases' own watches, is left to
// their holds and may not be sent before a release.)
func TestIntegration_SemaphoreRequests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, cc := e.countingClient()
	s := e.semaphore(c, "/count", 4)
	bg := context.Background()
	first, err := s.Acquire(bg) // makes the paths, and checks for a kazoo Semaphore's signs
	require.NoError(t, err)
	require.NoError(t, first.Release())
	// settled returns what was sent since before, once the deletes are
	// (the internal lock's is queued before the acquire returns, its
	// reply not awaited), less getData: the leases' own watches, at most
	// one each, may not be sent before a release.
	settled := func(before map[string]int, deletes, leases int) map[string]int {
		t.Helper()
		if !assert.Eventually(t, func() bool { return delta(cc, before)["delete"] == deletes },
			10*time.Second, time.Millisecond, "the deletes") {
			t.Fatalf("requests: %v", delta(cc, before))
		}
		d := delta(cc, before)
		assert.LessOrEqual(t, d["getData"], leases, "at most a watch per lease")
		delete(d, "getData")
		return d
	}
	for _, n := range []int{1, 3} {
		_, before := cc.total()
		leases, err := s.AcquireN(bg, n)
		require.NoError(t, err)
		require.NoError(t, s.ReturnAll(leases))
		assert.Equal(t, map[string]int{"create": 1 + n, "getChildren": 2, "delete": 1 + n}, settled(before, 1+n, n),
			"AcquireN(%d): the internal lock's create and listing, the leases' creates and listing, the deletes", n)
	}

	others, err := e.semaphore(e.client(), "/count", 4).AcquireN(bg, 4)
	require.NoError(t, err)
	// Their internal lock is given up: the lock's own peek would see the
	// pool free; the Try must still refuse without writing.
	require.Eventually(t, func() bool { return len(e.children(e.root+"/count/locks")) == 0 }, 10*time.Second, time.Millisecond)
	_, before := cc.total()
	_, err = s.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	d := delta(cc, before)
	assert.Equal(t, map[string]int{"getChildren": 2, "getData": 1}, d,
		"a full TryAcquire: a peek of the leases, then the holder's listing and read; no write")

	leasesPath := e.root + "/count/leases"
	_, before = cc.total()
	listed := cc.at("getChildren", leasesPath)
	got := leaseAsync(bg, s)
	waitChildren(t, e, leasesPath, 5)
	require.NoError(t, others[0].Release())
	w := await(t, got, 10*time.Second)
	require.NoError(t, w.err)
	require.NoError(t, w.lease.Release())
	assert.LessOrEqual(t, cc.at("getChildren", leasesPath)-listed, 2, "a waiting acquire lists the leases once more when one goes")
	assert.Equal(t, map[string]int{"create": 2, "getChildren": 3, "delete": 2}, settled(before, 2, 1),
		"a wait: the internal lock's create and listing, the lease's, one more listing, the deletes")
	require.NoError(t, s.ReturnAll(others))
}

// A lease returned frees its place for every acquirer at once: a
// TryAcquire after Release, from this Client or another, is granted, in
// both layouts. The internal lock that orders acquirers is given up
// before Acquire returns, as Curator and kazoo give theirs up; a delete
// of it left to the background, here delayed as a busy machine delays a
// goroutine, was still there for the next acquirer, which was refused with
// ErrLocked while no lease was held.
func TestIntegration_SemaphoreFreeAfterRelease(t *testing.T) {
	t.Parallel()
	for _, layout := range []zklock.Layout{zklock.LayoutCurator, zklock.LayoutKazoo} {
		t.Run(layout.String(), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			c, f := e.faultClient()
			f.mu.Lock()
			f.beforeDelete = func(p string) {
				if strings.Contains(p, "/locks/") || strings.Contains(p, "-__lock__/") {
					time.Sleep(100 * time.Millisecond) // a slow goroutine, not a wait for anything
				}
			}
			f.mu.Unlock()
			s, err := zklock.NewSemaphore(c, e.root+"/free", 1, zklock.WithLayout(layout))
			require.NoError(t, err)
			other, err := zklock.NewSemaphore(e.client(), e.root+"/free", 1, zklock.WithLayout(layout))
			require.NoError(t, err)
			bg := context.Background()
			for i := range 3 {
				l, err := s.Acquire(bg)
				require.NoError(t, err)
				require.NoError(t, l.Release())
				l, err = other.TryAcquire(bg)
				require.NoError(t, err, "round %d: another Client's TryAcquire after Release", i)
				require.NoError(t, l.Release())
				l, err = s.TryAcquire(bg)
				require.NoError(t, err, "round %d: this Client's TryAcquire after Release", i)
				require.NoError(t, l.Release())
			}
		})
	}
}
