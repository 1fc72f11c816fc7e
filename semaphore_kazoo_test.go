package zklock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path"
	"regexp"
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

// kazooLeaseName is the name of a kazoo 2.8 Semaphore's lease, exactly:
// kazoo's uuid4().hex.
var kazooLeaseName = regexp.MustCompile(`^[0-9a-f]{32}$`)

// kazooSemaphore makes a Semaphore of max leases in kazoo's layout on the
// test's root joined with name.
func (e *env) kazooSemaphore(c *zklock.Client, name string, max int, opts ...zklock.LockOption) *zklock.Semaphore {
	e.t.Helper()
	s, err := zklock.NewSemaphore(c, e.root+name, max, append(opts, zklock.WithLayout(zklock.LayoutKazoo))...)
	require.NoError(e.t, err)
	return s
}

// kazooLease creates, through the admin's session, the lease a kazoo 2.8
// Semaphore takes in the pool at p (which must exist), with id as its
// data, and returns its full path.
func kazooLease(t *testing.T, e *env, p, id string) string {
	t.Helper()
	var b [16]byte
	_, _ = rand.Read(b[:])
	name, err := e.admin.Create(p+"/"+hex.EncodeToString(b[:]), []byte(id), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	return name
}

// A Semaphore in kazoo's layout makes kazoo's nodes: the pool, persistent,
// holding max_leases in decimal; each lease an ephemeral "<uuid hex>" in
// it holding the lease data; the lock that orders acquirers at
// "<path>-__lock__", a kazoo Lock. It counts kazoo's leases, says how
// many are out when none is free, and grants when one goes.
func TestIntegration_KazooSemaphore(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/sem"
	s := e.kazooSemaphore(e.client(), "/sem", 2, zklock.WithLockData([]byte("go-worker")))

	l, err := s.Acquire(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, kazooLeaseName, l.Node())
	assert.Equal(t, p+"/"+l.Node(), l.Path())
	data, st, err := e.admin.Get(l.Path())
	require.NoError(t, err)
	assert.Equal(t, "go-worker", string(data))
	assert.NotZero(t, st.EphemeralOwner)
	data, st, err = e.admin.Get(p)
	require.NoError(t, err)
	assert.Equal(t, "2", string(data), "the pool holds max_leases, as kazoo writes it")
	assert.Zero(t, st.EphemeralOwner)
	_, st, err = e.admin.Get(p + "-__lock__")
	require.NoError(t, err, "the lock that orders acquirers is kazoo's")
	assert.Zero(t, st.EphemeralOwner)
	assert.Zero(t, st.NumChildren, "the lock is given up once the lease is taken")
	assert.NotZero(t, l.Token())

	py := kazooLease(t, e, p, "py-worker")
	_, err = s.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "the kazoo lease counts")
	he := holderAs(t, err)
	assert.Equal(t, 2, he.Leases)
	assert.Equal(t, 2, he.MaxLeases)

	got := leaseAsync(context.Background(), s)
	waitChildren(t, e, p+"-__lock__", 1) // it holds the lock, and waits for a lease
	select {
	case a := <-got:
		t.Fatalf("granted with no lease free: %v", a.err)
	default:
	}
	require.NoError(t, e.admin.Delete(py, -1))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, a.lease.Release())
	require.NoError(t, l.Release())
	assert.Empty(t, e.children(p))
}

// The lock at "<path>-__lock__" orders acquirers: a kazoo process that
// holds it (and so may be about to take the last lease) makes a Try fail
// and an Acquire wait, though leases are free.
func TestIntegration_KazooSemaphoreQueuesBehindKazooLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/sem"
	s := e.kazooSemaphore(e.client(), "/sem", 3)
	py := kazooContender(t, e, p+"-__lock__", "__lock__", "py-acquirer")

	_, err := s.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	got := leaseAsync(context.Background(), s)
	waitChildren(t, e, p+"-__lock__", 2)
	select {
	case a := <-got:
		t.Fatalf("granted while the kazoo acquirer holds the lock: %v", a.err)
	default:
	}
	require.NoError(t, e.admin.Delete(py, -1))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, a.lease.Release())
}

// kazoo's max_leases rule: a pool that records another number refuses the
// acquire with a MaxLeasesError, which leaves no node behind; data that
// is no number is ignored, as kazoo ignores it.
func TestIntegration_KazooSemaphoreMaxLeasesMismatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/sem"
	pool(t, e, p, "3")
	s := e.kazooSemaphore(e.client(), "/sem", 2)
	for name, acquire := range map[string]func(context.Context) (*zklock.Lease, error){"Acquire": s.Acquire, "TryAcquire": s.TryAcquire} {
		_, err := acquire(context.Background())
		var me *zklock.MaxLeasesError
		require.True(t, errors.As(err, &me), "%s: %v", name, err)
		assert.Equal(t, 2, me.MaxLeases, name)
		assert.Equal(t, 3, me.Stored, name)
		assert.Equal(t, p, me.Path, name)
		assert.ErrorIs(t, err, zklock.ErrInvalidArgument, name)
		assert.Contains(t, err.Error(), p, name)
		assert.Empty(t, e.children(p), name)
		assert.Empty(t, e.children(p+"-__lock__"), name)
	}

	_, err := e.admin.Set(p, []byte("used by something else"), -1)
	require.NoError(t, err)
	l, err := s.Acquire(context.Background())
	require.NoError(t, err, "data that is no number is not checked")
	require.NoError(t, l.Release())
}

// A pool of Curator's layout (its "leases" and "locks" children) under a
// kazoo Semaphore: the acquire refuses, naming both layouts, and leaves
// no node of its own.
func TestIntegration_KazooSemaphoreLayoutMismatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	curator := e.semaphore(c, "/sem", 2)
	l, err := curator.Acquire(context.Background())
	require.NoError(t, err)
	defer l.Release()
	s := e.kazooSemaphore(c, "/sem", 2)
	for name, acquire := range map[string]func(context.Context) (*zklock.Lease, error){"Acquire": s.Acquire, "TryAcquire": s.TryAcquire} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = acquire(ctx)
		cancel()
		require.ErrorIs(t, err, zklock.ErrLayoutMismatch, name)
		assert.Contains(t, err.Error(), "kazoo", name)
		assert.Contains(t, err.Error(), "curator", name)
		assert.Contains(t, err.Error(), e.root+"/sem", name)
		assert.ElementsMatch(t, []string{"leases", "locks"}, e.children(e.root+"/sem"), name)
		waitChildren(t, e, e.root+"/sem-__lock__", 0) // its lock node, deleted in the background as the lock is given up
	}
}

// The other way round: a kazoo lease in the pool (a kazoo process's, or
// a Semaphore's in kazoo's layout) under a Semaphore of Curator's layout,
// which counts its leases under path/leases and would not see it. The
// acquire refuses, naming both layouts and the lease, and leaves no node
// of its own; so does a SemaphoreMutex.
func TestIntegration_CuratorSemaphoreRefusesKazooLeases(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	kazoo := e.kazooSemaphore(c, "/sem", 1)
	l, err := kazoo.Acquire(context.Background())
	require.NoError(t, err)
	curator := e.semaphore(c, "/sem", 1)
	mutex, err := zklock.NewSemaphoreMutex(c, e.root+"/sem")
	require.NoError(t, err)
	for name, acquire := range map[string]func(context.Context) error{
		"Acquire":    func(ctx context.Context) error { _, err := curator.Acquire(ctx); return err },
		"TryAcquire": func(ctx context.Context) error { _, err := curator.TryAcquire(ctx); return err },
		"Mutex.Lock": func(ctx context.Context) error { _, err := mutex.Lock(ctx); return err },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = acquire(ctx)
		cancel()
		require.ErrorIs(t, err, zklock.ErrLayoutMismatch, name)
		assert.Contains(t, err.Error(), "kazoo", name)
		assert.Contains(t, err.Error(), "curator", name)
		assert.Contains(t, err.Error(), path.Base(l.Node()), name)
		assert.Equal(t, []string{path.Base(l.Node())}, e.children(e.root+"/sem"), name)
	}
	require.NoError(t, l.Release())
}

// A lease create whose reply is lost is found again by its uuid, as
// kazoo finds it (by its name): one lease node, no orphan.
func TestIntegration_KazooSemaphoreLostLeaseCreate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/sem"
	c, f := e.faultClient()
	s := e.kazooSemaphore(c, "/sem", 2)
	l, err := s.Acquire(context.Background()) // the pool and the lock's path exist hereafter
	require.NoError(t, err)
	require.NoError(t, l.Release())

	// The lease's create, in a transaction with the check of the lock's
	// node (see Semaphore), or alone: applied, its reply lost, once.
	var lost atomic.Int32
	isLease := func(q string) bool { return path.Dir(q) == p }
	f.setMulti(func(ctx context.Context, real zklock.ZKConn, ops ...any) ([]zk.MultiResponse, error) {
		res, err := real.Multi(ctx, ops...)
		if cr, ok := ops[len(ops)-1].(*zk.CreateRequest); ok && err == nil && isLease(cr.Path) && lost.Add(1) == 1 {
			return nil, zk.ErrConnectionClosed
		}
		return res, err
	})
	f.setCreate(func(ctx context.Context, real zklock.ZKConn, q string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		name, err := real.Create(ctx, q, data, flags, acl)
		if err == nil && isLease(q) && lost.Add(1) == 1 {
			return "", zk.ErrConnectionClosed
		}
		return name, err
	})
	l, err = s.Acquire(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 1, lost.Load(), "the lease's create was sent once: the retry found it")
	children := e.children(p)
	require.Len(t, children, 1)
	assert.Equal(t, l.Node(), children[0])
	require.NoError(t, l.Release())
}

// What is no kazoo Semaphore's is not refused, and an idle one is: a
// persistent child named with 32 hex digits (a lock path named by a
// hash) under a Semaphore of Curator's layout takes nothing from it; a
// kazoo Semaphore with no lease out leaves its lock, path-__lock__, and
// a Semaphore of Curator's layout refuses the path (its leases and locks
// nodes in kazoo's pool would count as two of kazoo's leases).
func TestIntegration_CuratorSemaphoreKazooSigns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	hashed := e.root + "/sem/0123456789abcdef0123456789abcdef"
	e.create(hashed)
	l, err := e.semaphore(c, "/sem", 1).Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, l.Release())

	kazoo := e.kazooSemaphore(c, "/idle", 1)
	l, err = kazoo.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, l.Release())
	waitChildren(t, e, e.root+"/idle", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = e.semaphore(c, "/idle", 1).Acquire(ctx)
	require.ErrorIs(t, err, zklock.ErrLayoutMismatch)
	assert.Contains(t, err.Error(), e.root+"/idle-__lock__")
	assert.Empty(t, e.children(e.root+"/idle"), "the refused acquire made nodes in kazoo's pool")
}

// The pool deleted (an operator's cleanup, while no lease is out) after
// the acquirer counted it and before its lease's create: the acquire
// makes the pool again as kazoo would, holding its size, and takes its
// lease in it. A pool made empty by the lease's create would crash a
// kazoo process, which reads the size with int().
func TestIntegration_KazooSemaphorePoolDeletedBeforeLease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/sem"
	c, f := e.faultClient()
	s := e.kazooSemaphore(c, "/sem", 2)
	l, err := s.Acquire(context.Background()) // the pool is checked, once
	require.NoError(t, err)
	require.NoError(t, l.Release())
	waitChildren(t, e, p, 0)

	var deleted atomic.Int32
	f.setMulti(func(ctx context.Context, real zklock.ZKConn, ops ...any) ([]zk.MultiResponse, error) {
		if cr, ok := ops[len(ops)-1].(*zk.CreateRequest); ok && path.Dir(cr.Path) == p && deleted.Add(1) == 1 {
			require.NoError(t, e.admin.Delete(p, -1))
		}
		return real.Multi(ctx, ops...)
	})
	l, err = s.Acquire(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 2, deleted.Load(), "a lease create found no pool, and the next found one")
	data, _, err := e.admin.Get(p)
	require.NoError(t, err)
	assert.Equal(t, "2", string(data), "the pool made again holds its size")
	assert.Equal(t, []string{path.Base(l.Node())}, e.children(p))
	require.NoError(t, l.Release())
}

// AcquireN in kazoo's layout takes n leases at once, or none; a
// SemaphoreMutex in kazoo's layout is a kazoo Semaphore of one lease.
func TestIntegration_KazooSemaphoreAcquireNAndMutex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/sem"
	s := e.kazooSemaphore(e.client(), "/sem", 3)
	py := kazooLease(t, e, pool(t, e, p, "3"), "py")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := s.AcquireN(ctx, 3)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, e.children(p), 1, "none taken")
	leases, err := s.AcquireN(context.Background(), 2)
	require.NoError(t, err)
	require.Len(t, leases, 2)
	assert.Len(t, e.children(p), 3)
	require.NoError(t, s.ReturnAll(leases))
	require.NoError(t, e.admin.Delete(py, -1))

	c := e.client()
	m, err := zklock.NewSemaphoreMutex(c, e.root+"/mutex", zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	other, err := zklock.NewSemaphoreMutex(e.client(), e.root+"/mutex", zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, kazooLeaseName, path.Base(h.Path()))
	data, _, err := e.admin.Get(e.root + "/mutex")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))
	_, err = other.TryAcquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	require.NoError(t, h.Release())
	hctx, err := other.TryAcquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, other.Release(hctx))
}

// pool makes the pool at p as a kazoo Semaphore of size does, and
// returns p.
func pool(t *testing.T, e *env, p, size string) string {
	t.Helper()
	e.create(p)
	_, err := e.admin.Set(p, []byte(size), -1)
	require.NoError(t, err)
	return p
}

// A kazoo lease's CheckOp, in a Client with a namespace, goes into
// Hold.Multi as it is (its path is full already), as a Curator lease's.
func TestIntegration_KazooLeaseCheckOpInMulti(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ns := strings.TrimPrefix(e.root, "/") + "/ns"
	c := e.client(zklock.WithNamespace(ns))
	s, err := zklock.NewSemaphore(c, "/sem", 1, zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	l, err := s.Acquire(context.Background())
	require.NoError(t, err)
	_, err = l.Hold().Multi(context.Background(), l.CheckOp(), &zk.CreateRequest{Path: "/written", Acl: zk.WorldACL(zk.PermAll)})
	require.NoError(t, err)
	require.NoError(t, e.admin.Delete(e.root+"/ns/written", -1))
	require.NoError(t, l.Release())
}

// Many acquirers of one kazoo Semaphore, of several Clients, never hold
// more than max_leases leases at once.
func TestIntegration_KazooSemaphoreBoundsHolders(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		s := e.kazooSemaphore(e.client(), "/sem", 2)
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
	assert.LessOrEqual(t, most.Load(), int32(2), "never more than max_leases holders")
}

// A lease is added only by the acquirer at the head of the queue: one
// whose lock node was deleted (by `zklock break`, say) while it waited for
// a lease, and behind which a kazoo acquirer now holds the lock, adds no
// lease when one frees up; it queues again, behind the kazoo acquirer.
func TestIntegration_KazooSemaphoreLeaseOnlyUnderTheLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p, lockPath := e.root+"/sem", e.root+"/sem-__lock__"
	s := e.kazooSemaphore(e.client(), "/sem", 1)
	py := kazooLease(t, e, pool(t, e, p, "1"), "py-worker")

	got := leaseAsync(context.Background(), s)
	waitChildren(t, e, lockPath, 1) // ours: it holds the lock, and waits for a lease
	ours := e.children(lockPath)[0]
	require.NoError(t, e.admin.Delete(lockPath+"/"+ours, -1))
	head := kazooContender(t, e, lockPath, "__lock__", "py-acquirer")
	require.NoError(t, e.admin.Delete(py, -1))

	waitChildren(t, e, lockPath, 2) // it queued again, behind the kazoo acquirer
	assert.Empty(t, e.children(p), "no lease added without the lock")
	select {
	case a := <-got:
		t.Fatalf("granted without the lock: %v", a.err)
	default:
	}
	require.NoError(t, e.admin.Delete(head, -1))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, a.lease.Release())
}

// Lease data kazoo cannot read: its lease_holders() decodes every lease's
// data as UTF-8, so a kazoo-layout Semaphore refuses data that is not,
// naming the path, before any node is made; Curator's layout takes any
// bytes.
func TestIntegration_KazooLeaseDataMustBeUTF8(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bin := zklock.WithLockData([]byte{0xff, 0xfe})
	_, err := zklock.NewSemaphore(c, "/s", 2, zklock.WithLayout(zklock.LayoutKazoo), bin)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "/s")
	assert.Contains(t, err.Error(), "not UTF-8")
	_, err = zklock.NewSemaphoreMutex(e.client(zklock.WithNodeData([]byte{0xff})), "/m", zklock.WithLayout(zklock.LayoutKazoo))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "not UTF-8")
	_, err = zklock.NewSemaphore(c, "/s", 2, bin)
	require.NoError(t, err)
}

// A kazoo Semaphore's lock nodes hold its identifier, the leases' data,
// as kazoo's Semaphore makes its Lock, not the Client's node data: an
// acquirer queued on the lock shows it, whatever the Client's data is.
func TestIntegration_KazooSemaphoreLockNodesHoldItsData(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(zklock.WithNodeData([]byte{0xff})) // no text: kazoo could not read it
	s := e.kazooSemaphore(c, "/sem", 1, zklock.WithLockData([]byte("go-worker")))
	l, err := s.Acquire(context.Background())
	require.NoError(t, err)
	queued := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, err := s.Acquire(ctx); queued <- err }()
	defer cancel()
	lock := e.root + "/sem-__lock__"
	var data []byte
	require.Eventually(t, func() bool { // the queued acquirer's node; the first's goes once it is granted
		for _, ch := range e.children(lock) {
			if d, _, err := e.admin.Get(lock + "/" + ch); err == nil {
				data = d
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "go-worker", string(data))
	cancel()
	require.ErrorIs(t, <-queued, context.Canceled)
	require.NoError(t, l.Release())
}
