package zklock_test

import (
	"context"
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
	require.NoError(t, l1.Release(), "idempotent")
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
	require.ErrorIs(t, l2.Release(), zklock.ErrLockLost)
	require.NoError(t, l2.Release())
}

func TestIntegration_SemaphoreMutex(t *testing.T) {
	e := setup(t)
	m, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/sm")
	require.NoError(t, err)
	other, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/sm")
	require.NoError(t, err)
	var _ zklock.Locker = m
	bg := context.Background()

	h, err := m.Acquire(bg)
	require.NoError(t, err)
	assert.True(t, m.IsAcquiredInThisProcess())
	_, err = m.Acquire(h)
	require.ErrorIs(t, err, zklock.ErrNotReentrant)
	_, err = m.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "another context is another participant")
	_, err = other.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	assert.ElementsMatch(t, []string{"leases", "locks"}, e.children(e.root+"/sm"), "Curator's semaphore layout")

	got := make(chan acquired, 1)
	go func() {
		c, err := other.Acquire(bg)
		got <- acquired{c, err}
	}()
	require.NoError(t, m.Release(bg), "any context may release")
	assert.ErrorIs(t, context.Cause(h), zklock.ErrReleased)
	require.ErrorIs(t, m.Release(bg), zklock.ErrNotHeld)
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, other.Release(a.ctx))
}
