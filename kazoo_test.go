package zklock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// kazooNode is the name of a kazoo 2.8 contender, exactly: kazoo's
// uuid4().hex, the kind, and ZooKeeper's 10-digit sequence.
var kazooNode = regexp.MustCompile(`^[0-9a-f]{32}(__lock__|__rlock__)\d{10}$`)

// kazooContender creates, through the admin's go-zookeeper session, the
// node a kazoo 2.8 process creates to contend for the lock at p (kind
// "__lock__" for Lock, WriteLock and Election, "__rlock__" for ReadLock),
// with id as its data, and returns its full path. Its parents are made
// as kazoo makes them: persistent.
func kazooContender(t *testing.T, e *env, p, kind, id string) string {
	t.Helper()
	parts := ""
	for _, seg := range regexp.MustCompile(`[^/]+`).FindAllString(p, -1) {
		parts += "/" + seg
		if _, err := e.admin.Create(parts, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	name, err := e.admin.Create(p+"/"+hex.EncodeToString(b[:])+kind, []byte(id), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	return name
}

// A Mutex in kazoo's layout makes kazoo's node (name, data, persistent
// parent), queues behind a kazoo Lock's node, names it when busy, ignores
// a kazoo reader (as a kazoo Lock does), and is granted when the kazoo
// holder's node goes. Its hold has a token and guards writes, as any.
func TestIntegration_KazooMutex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	p := e.root + "/kazoo"
	m := e.mutex(c, "/kazoo", zklock.WithLayout(zklock.LayoutKazoo), zklock.WithLockData([]byte("go-worker")))

	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, kazooNode, path.Base(h.Path()))
	assert.Contains(t, path.Base(h.Path()), "__lock__")
	data, _, err := e.admin.Get(h.Path())
	require.NoError(t, err)
	assert.Equal(t, "go-worker", string(data), "the node holds the lock data, as kazoo's holds its identifier")
	_, st, err := e.admin.Get(p)
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner)
	tok, err := h.Token()
	require.NoError(t, err)
	assert.NotZero(t, tok)
	_, err = h.Multi(context.Background(), &zk.CreateRequest{Path: "/zklock-test/" + t.Name() + "-guarded", Acl: zk.WorldACL(zk.PermAll)})
	require.NoError(t, err, "a kazoo hold guards a write")
	require.NoError(t, e.admin.Delete("/zklock-test/"+t.Name()+"-guarded", -1))
	require.NoError(t, h.Release())

	reader := kazooContender(t, e, p, "__rlock__", "py-reader")
	holder := kazooContender(t, e, p, "__lock__", "py-holder")
	_, err = m.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	he := holderAs(t, err)
	assert.Equal(t, "py-holder", string(he.Data), "the kazoo holder is named, not the reader")

	got := make(chan error, 1)
	go func() {
		h, err := m.Lock(context.Background())
		if err == nil {
			err = h.Release()
		}
		got <- err
	}()
	waitChildren(t, e, p, 3)
	select {
	case err := <-got:
		t.Fatalf("granted while the kazoo holder stands: %v", err)
	default:
	}
	require.NoError(t, e.admin.Delete(holder, -1))
	require.NoError(t, await(t, got, 10*time.Second))
	require.NoError(t, e.admin.Delete(reader, -1))
}

// Curator's nodes and kazoo's on one path: an acquire of either layout
// refuses to take part, names both layouts, the path and the other's
// node, and leaves no node of its own.
func TestIntegration_LayoutMismatchRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()

	curator := e.mutex(c, "/curator")
	h, err := curator.Lock(context.Background())
	require.NoError(t, err)
	defer h.Release()
	kazoo := e.mutex(c, "/curator", zklock.WithLayout(zklock.LayoutKazoo))
	for name, try := range map[string]func(context.Context) (*zklock.Hold, error){"Lock": kazoo.Lock, "TryLock": kazoo.TryLock} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = try(ctx)
		cancel()
		require.ErrorIs(t, err, zklock.ErrLayoutMismatch, name)
		assert.Contains(t, err.Error(), "kazoo", name)
		assert.Contains(t, err.Error(), "curator", name)
		assert.Contains(t, err.Error(), path.Base(h.Path()), name)
		waitChildren(t, e, e.root+"/curator", 1)
	}

	py := kazooContender(t, e, e.root+"/kazoo", "__lock__", "py")
	m := e.mutex(c, "/kazoo")
	for name, try := range map[string]func(context.Context) (*zklock.Hold, error){"Lock": m.Lock, "TryLock": m.TryLock} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = try(ctx)
		cancel()
		require.ErrorIs(t, err, zklock.ErrLayoutMismatch, name)
		assert.Contains(t, err.Error(), path.Base(py), name)
		waitChildren(t, e, e.root+"/kazoo", 1)
	}
	require.NoError(t, e.admin.Delete(py, -1))
}

// A ReadWriteLock in kazoo's layout: readers share; a writer waits for
// the readers before it; a reader waits for a kazoo writer before it but
// not for one after it (ZooKeeper's recipe: kazoo 2.8's ReadLock waits
// for that one too, and can deadlock with it); a writer that downgrades
// leaves a kazoo reader's node.
func TestIntegration_KazooReadWriteLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	p := e.root + "/rw"
	rw, err := zklock.NewReadWriteLock(c, p, zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)

	r1, err := rw.ReadLock().Lock(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, kazooNode, path.Base(r1.Path()))
	assert.Contains(t, path.Base(r1.Path()), "__rlock__")
	r2, err := rw.ReadLock().TryLock(context.Background())
	require.NoError(t, err, "readers share")
	_, err = rw.WriteLock().TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "a writer waits for the readers")

	later := kazooContender(t, e, p, "__lock__", "py-writer") // queued behind our readers
	r3, err := rw.ReadLock().TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "a reader queues behind a writer before it")
	assert.Nil(t, r3)
	require.NoError(t, r1.Release())
	require.NoError(t, r2.Release())
	require.NoError(t, e.admin.Delete(later, -1))

	w, err := rw.WriteLock().Lock(context.Background())
	require.NoError(t, err)
	assert.Contains(t, path.Base(w.Path()), "__lock__")
	_, err = rw.ReadLock().TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "a reader waits for the writer")
	rd, err := rw.ReadLock().Lock(w.Context())
	require.NoError(t, err, "the writer downgrades")
	assert.Regexp(t, kazooNode, path.Base(rd.Path()))
	assert.Equal(t, path.Base(w.Path())[32+len("__lock__"):], path.Base(rd.Path())[32+len("__rlock__"):],
		"the read node takes the write node's sequence")
	py := kazooContender(t, e, p, "__lock__", "py-writer")
	require.NoError(t, w.Release())
	_, err = rw.WriteLock().TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked, "writers stay behind the downgraded reader")
	require.NoError(t, rd.Release())
	require.NoError(t, e.admin.Delete(py, -1))

	// kazoo issue 649's order: a reader queued behind a writer, then a
	// writer queued behind the reader. The reader is granted when the
	// first writer goes, whatever stands after it.
	w, err = rw.WriteLock().Lock(context.Background())
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		h, err := rw.ReadLock().Lock(context.Background())
		if err == nil {
			err = h.Release()
		}
		read <- err
	}()
	waitChildren(t, e, p, 2)
	py = kazooContender(t, e, p, "__lock__", "py-writer-after")
	require.NoError(t, w.Release())
	require.NoError(t, await(t, read, 10*time.Second), "the reader does not wait for the writer after it")
	require.NoError(t, e.admin.Delete(py, -1))
}

// An Election and a Selector in kazoo's layout are kazoo Elections: a
// kazoo Lock on the path with the participant's id as data. A kazoo
// contender created first leads; Leader and Participants read kazoo's
// contenders in order, and nothing else under the path.
func TestIntegration_KazooElection(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	p := e.root + "/election"
	py := kazooContender(t, e, p, "__lock__", "py-leader")
	_, err := e.admin.Create(p+"/not-a-contender", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	el, err := zklock.NewElection(c, p, "go-candidate", zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)
	sel, err := zklock.NewSelector(c, p, "go-selector", zklock.WithLayout(zklock.LayoutKazoo))
	require.NoError(t, err)

	leader, err := el.Leader(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "py-leader", leader)
	won := make(chan error, 1)
	go func() {
		h, err := el.Campaign(context.Background())
		if err == nil {
			assert.Regexp(t, kazooNode, path.Base(h.Path()))
			err = h.Release()
		}
		won <- err
	}()
	waitChildren(t, e, p, 3)
	ps, err := sel.Participants(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []string{"py-leader", "go-candidate"}, []string{ps[0].ID, ps[1].ID})
	assert.True(t, ps[0].Leader)
	require.NoError(t, e.admin.Delete(py, -1))
	require.NoError(t, await(t, won, 10*time.Second))
	require.NoError(t, e.admin.Delete(p+"/not-a-contender", -1))
}

// A kazoo contender on an election of Curator's layout: Leader refuses,
// and Observe reports the mix-up (ErrLayoutMismatch, the node named)
// rather than a leader of either layout's order; once the kazoo node is
// gone it reports the election's own leader, woken by the path's watch.
func TestIntegration_ElectionObserveRefusesLayoutMixUp(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	p := e.root + "/election"
	el := e.election(c, "/election", "go-leader")
	h, err := el.Campaign(context.Background())
	require.NoError(t, err)
	py := kazooContender(t, e, p, "__lock__", "py")

	_, err = el.Leader(context.Background())
	require.ErrorIs(t, err, zklock.ErrLayoutMismatch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := el.Observe(ctx)
	l := <-obs
	require.ErrorIs(t, l.Err, zklock.ErrLayoutMismatch, "leader %+v", l)
	assert.Contains(t, l.Err.Error(), path.Base(py))
	assert.Empty(t, l.ID)

	require.NoError(t, e.admin.Delete(py, -1))
	select {
	case l = <-obs:
		require.NoError(t, l.Err)
		assert.Equal(t, "go-leader", l.ID)
	case <-time.After(10 * time.Second):
		t.Fatal("Observe did not report the leader once the kazoo node was gone")
	}
	require.NoError(t, h.Release())
}

// The parents the library makes hold empty data, not null, as kazoo's
// ensure_path and Curator make them: kazoo reads a null as None, and its
// Semaphore, finding a pool of null data, fails on None.decode.
func TestIntegration_ParentsHoldEmptyData(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client() // Connect: its reads tell null (nil) from empty
	for _, l := range []zklock.Layout{zklock.LayoutCurator, zklock.LayoutKazoo} {
		parent := fmt.Sprintf("%s/%v/a", e.root, l)
		m, err := zklock.NewMutex(c, parent+"/lock", zklock.WithLayout(l))
		require.NoError(t, err)
		h, err := m.Lock(context.Background())
		require.NoError(t, err)
		for _, p := range []string{parent, parent + "/lock"} {
			data, _, err := c.Get(context.Background(), p)
			require.NoError(t, err, p)
			assert.NotNil(t, data, "%v layout: %s holds null data", l, p)
		}
		require.NoError(t, h.Release())
	}
}

// WithLayout's bad input: an unknown layout, a layout beside a Driver,
// each refused with ErrInvalidArgument naming the path, by every recipe
// that takes a layout.
func TestIntegration_WithLayoutInput(t *testing.T) {
	t.Parallel()
	c := setup(t).client()
	_, err := zklock.NewMutex(c, "/l", zklock.WithLayout(zklock.Layout(7)))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "/l")
	assert.Contains(t, err.Error(), "unknown layout Layout(7)")
	_, err = zklock.NewMutex(c, "/l", zklock.WithLayout(zklock.LayoutKazoo), zklock.WithDriver(zklock.StandardDriver{}))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "cannot be combined with WithDriver")
	_, err = zklock.NewSemaphore(c, "/s", 2, zklock.WithLayout(zklock.Layout(-1)))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "/s")
	assert.Contains(t, err.Error(), "unknown layout")
	_, err = zklock.NewSemaphoreMutex(c, "/s", zklock.WithLayout(zklock.Layout(2)))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "/s")
	assert.Equal(t, "kazoo", zklock.LayoutKazoo.String())
	assert.Equal(t, "curator", zklock.LayoutCurator.String())
}

// Node data kazoo cannot read: its contenders() decodes every contender's
// data as UTF-8, so a kazoo-layout lock refuses data that is not, naming
// the path, before any node is made; Curator's layout takes any bytes.
func TestIntegration_KazooLockDataMustBeUTF8(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bin := zklock.WithLockData([]byte{0xff, 0xfe})
	_, err := zklock.NewMutex(c, "/l", zklock.WithLayout(zklock.LayoutKazoo), bin)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "/l")
	assert.Contains(t, err.Error(), "not UTF-8")
	_, err = zklock.NewReadWriteLock(c, "/rw", zklock.WithLayout(zklock.LayoutKazoo), bin)
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "not UTF-8")
	_, err = zklock.NewSelector(e.client(zklock.WithNodeData([]byte{0xff})), "/s", "", zklock.WithLayout(zklock.LayoutKazoo))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "not UTF-8")
	_, err = zklock.NewMutex(c, "/l", bin)
	require.NoError(t, err)
}

// A kazoo-layout create whose response is lost is found again by its
// uuid, as kazoo finds its own (no second node); one found in another,
// dying session is deleted and a new uuid is taken (CURATOR-498's case,
// which kazoo 2.8 does not guard against).
func TestIntegration_KazooProtectedCreate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	kazoo := zklock.WithLayout(zklock.LayoutKazoo)
	e.create(e.root + "/lost")
	c, f := e.faultClient()
	m := e.mutex(c, "/lost", kazoo)
	f.setCreate(lostResponse(f, zk.ErrConnectionClosed))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a second node would wait behind the first for ever
	defer cancel()
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, f.creates.Load(), "the retry found the node instead of creating another")
	children := e.children(e.root + "/lost")
	require.Len(t, children, 1)
	assert.Equal(t, path.Base(h.Path()), children[0])
	assert.Regexp(t, kazooNode, children[0])
	require.NoError(t, h.Release())

	other := zktest.ConnectT(t, e.servers)
	var stale string
	f.setCreate(func(_ context.Context, _ zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		f.setCreate(nil)
		var err error
		stale, err = other.Create(p, data, flags, acl) // as if made by the old session
		if err != nil {
			return "", err
		}
		return "", zk.ErrConnectionClosed
	})
	h, err = m.Lock(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, stale)
	assert.NotEqual(t, path.Base(stale)[:32], path.Base(h.Path())[:32], "a new uuid")
	ok, _, err := e.admin.Exists(stale)
	require.NoError(t, err)
	assert.False(t, ok, "the other session's node was deleted")
	require.NoError(t, h.Release())
}

// A kazoo Lock and a kazoo WriteLock name their nodes alike, but a Lock
// counts no readers: a context that holds a Mutex in kazoo's layout does
// not hold the write side of a ReadWriteLock on its path, and its write
// Acquire does not re-enter while a reader reads; it queues.
func TestIntegration_KazooMutexHoldIsNoWriteHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	kz := zklock.WithLayout(zklock.LayoutKazoo)
	readers, err := zklock.NewReadWriteLock(e.client(), e.root+"/rw", kz)
	require.NoError(t, err)
	r, err := readers.ReadLock().Lock(context.Background())
	require.NoError(t, err)
	defer r.Release()

	m := e.mutex(c, "/rw", kz)
	h, err := m.Lock(context.Background()) // a kazoo Lock ignores the reader
	require.NoError(t, err)
	defer h.Release()
	rw, err := zklock.NewReadWriteLock(c, e.root+"/rw", kz)
	require.NoError(t, err)
	assert.False(t, rw.WriteLock().IsOwnedBy(h.Context()))
	ctx, cancel := context.WithTimeout(h.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = rw.WriteLock().Acquire(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a writer waits while a reader reads")
}

// A waiting Mutex in kazoo's layout names as the holder the kazoo Lock
// contender it waits for, not a reader queued before it, which a kazoo
// Lock does not count.
func TestIntegration_KazooMutexWaitNamesTheLockHolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/kazoo"
	reader := kazooContender(t, e, p, "__rlock__", "py-reader")
	holder := kazooContender(t, e, p, "__lock__", "py-holder")
	m := e.mutex(e.client(), "/kazoo", zklock.WithLayout(zklock.LayoutKazoo))
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	_, err := m.Lock(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	he := holderAs(t, err)
	assert.Equal(t, holder, he.Node)
	assert.Equal(t, "py-holder", string(he.Data))
	require.NoError(t, e.admin.Delete(holder, -1))
	require.NoError(t, e.admin.Delete(reader, -1))
}
