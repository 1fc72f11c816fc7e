package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// maxHoldTest is a maximum hold time short enough for a test and long
// enough to be told from an at-once loss.
const maxHoldTest = 500 * time.Millisecond

// recipeUnderTest takes a lock of one recipe on a Client: hold takes it
// and returns the hold (for a Selector, a term whose function is stuck
// until the test ends), wait takes it from another participant and
// returns its release.
type recipeUnderTest struct {
	name string
	hold func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike
	wait func(t *testing.T, c *zklock.Client, p string) func() error
}

// heldLike is what the test sees of a hold: a *zklock.Hold, or a Selector's
// term.
type heldLike interface {
	Context() context.Context
	Err() error
	Release() error
}

// stuckTerm is a Selector's term whose function is stuck until Release.
type stuckTerm struct {
	ctx     context.Context
	unstick chan struct{}
	done    chan error
}

func (tm *stuckTerm) Context() context.Context { return tm.ctx }
func (tm *stuckTerm) Err() error               { return context.Cause(tm.ctx) }
func (tm *stuckTerm) Release() error           { close(tm.unstick); return <-tm.done }

func recipesUnderTest() []recipeUnderTest {
	bg := context.Background()
	mutex := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		m, err := zklock.NewMutex(c, p, opts...)
		require.NoError(t, err)
		h, err := m.Lock(bg)
		require.NoError(t, err)
		return h
	}
	waitMutex := func(t *testing.T, c *zklock.Client, p string) func() error {
		return mutex(t, c, p).Release
	}
	rwRead := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		rw, err := zklock.NewReadWriteLock(c, p, opts...)
		require.NoError(t, err)
		h, err := rw.ReadLock().Lock(bg)
		require.NoError(t, err)
		return h
	}
	waitWrite := func(t *testing.T, c *zklock.Client, p string) func() error {
		rw, err := zklock.NewReadWriteLock(c, p)
		require.NoError(t, err)
		h, err := rw.WriteLock().Lock(bg)
		require.NoError(t, err)
		return h.Release
	}
	rwWrite := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		rw, err := zklock.NewReadWriteLock(c, p, opts...)
		require.NoError(t, err)
		h, err := rw.WriteLock().Lock(bg)
		require.NoError(t, err)
		return h
	}
	waitRead := func(t *testing.T, c *zklock.Client, p string) func() error {
		rw, err := zklock.NewReadWriteLock(c, p)
		require.NoError(t, err)
		h, err := rw.ReadLock().Lock(bg)
		require.NoError(t, err)
		return h.Release
	}
	lease := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		s, err := zklock.NewSemaphore(c, p, 1, opts...)
		require.NoError(t, err)
		l, err := s.Acquire(bg)
		require.NoError(t, err)
		return l.Hold()
	}
	waitLease := func(t *testing.T, c *zklock.Client, p string) func() error {
		return lease(t, c, p).Release
	}
	semMutex := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		m, err := zklock.NewSemaphoreMutex(c, p, opts...)
		require.NoError(t, err)
		h, err := m.Lock(bg)
		require.NoError(t, err)
		return h
	}
	waitSemMutex := func(t *testing.T, c *zklock.Client, p string) func() error {
		return semMutex(t, c, p).Release
	}
	leader := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		e, err := zklock.NewElection(c, p, "stuck", opts...)
		require.NoError(t, err)
		h, err := e.Campaign(bg)
		require.NoError(t, err)
		return h
	}
	waitLeader := func(t *testing.T, c *zklock.Client, p string) func() error {
		e, err := zklock.NewElection(c, p, "next")
		require.NoError(t, err)
		h, err := e.Campaign(bg)
		require.NoError(t, err)
		return h.Release
	}
	selector := func(t *testing.T, c *zklock.Client, p string, opts ...zklock.LockOption) heldLike {
		s, err := zklock.NewSelector(c, p, "stuck", opts...)
		require.NoError(t, err)
		tm := &stuckTerm{unstick: make(chan struct{}), done: make(chan error, 1)}
		leading := make(chan context.Context)
		go func() {
			tm.done <- s.Lead(bg, func(ctx context.Context) error {
				leading <- ctx
				<-tm.unstick // stuck, whatever its context says
				return nil
			})
		}()
		tm.ctx = <-leading
		return tm
	}
	waitSelector := func(t *testing.T, c *zklock.Client, p string) func() error {
		s, err := zklock.NewSelector(c, p, "next")
		require.NoError(t, err)
		leading, led := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- s.Lead(bg, func(context.Context) error { close(leading); <-led; return nil })
		}()
		<-leading // it leads
		return func() error { close(led); return <-done }
	}
	return []recipeUnderTest{
		{"mutex", mutex, waitMutex},
		{"read-write", rwRead, waitWrite},
		{"write-read", rwWrite, waitRead},
		{"semaphore", lease, waitLease},
		{"semaphore-mutex", semMutex, waitSemMutex},
		{"election", leader, waitLeader},
		{"selector", selector, waitSelector},
	}
}

// A holder that never releases (its goroutine stuck) loses its hold when
// the maximum hold time passes, whatever the recipe: its context ends with
// ErrLockLost and ErrMaxHold, its node goes, the next participant is
// granted within the bound, Release reports the loss, and the Observer
// sees CauseMaxHold.
func TestIntegration_MaxHoldEndsAStuckHolder(t *testing.T) {
	t.Parallel()
	for _, r := range recipesUnderTest() {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			log := newEventLog()
			stuck := e.client(zklock.WithObserver(log.observe))
			next := e.client()
			p := e.root + "/lock"
			h := r.hold(t, stuck, p, zklock.WithMaxHold(maxHoldTest))
			granted := time.Now()
			release := r.wait(t, next, p) // blocks until the stuck hold ends
			waited := time.Since(granted)
			assert.GreaterOrEqual(t, waited, maxHoldTest-50*time.Millisecond, "not before the bound")
			assert.Less(t, waited, maxHoldTest+3*time.Second, "the next participant is granted within the bound")
			require.ErrorIs(t, h.Err(), zklock.ErrLockLost)
			require.ErrorIs(t, context.Cause(h.Context()), zklock.ErrMaxHold)
			err := h.Release()
			require.ErrorIs(t, err, zklock.ErrMaxHold)
			assert.Contains(t, err.Error(), "maximum hold time passed")
			lost := log.await(t, 10*time.Second, "lost", func(ev zklock.Event) bool { return ev.Kind == zklock.EventLost })
			assert.Equal(t, zklock.CauseMaxHold, lost.Cause)
			require.NoError(t, release())
		})
	}
}

// ContextWithMaxHold bounds one acquire's hold, and the smaller bound of
// the lock's and the call's applies; a hold's context does not pass it on
// to the acquires made with it; a hold released in time is not touched.
func TestIntegration_MaxHoldPerCall(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bg := context.Background()
	m := e.mutex(c, "/call", zklock.WithMaxHold(time.Hour))
	h, err := m.Lock(zklock.ContextWithMaxHold(bg, maxHoldTest))
	require.NoError(t, err)
	nested, err := e.mutex(c, "/nested").Lock(h.Context())
	require.NoError(t, err)
	waitDone(t, h.Context(), 10*time.Second) // the call's bound ends the hold
	require.ErrorIs(t, h.Err(), zklock.ErrMaxHold)
	require.ErrorIs(t, h.Release(), zklock.ErrLockLost)
	assert.NoError(t, nested.Err(), "the nested acquire had no bound of its own")
	require.NoError(t, nested.Release())

	quick := e.mutex(c, "/quick", zklock.WithMaxHold(maxHoldTest))
	h, err = quick.Lock(bg)
	require.NoError(t, err)
	require.NoError(t, h.Release(), "released in time: the bound never fires")
	h, err = quick.Lock(bg) // and the next hold has a bound of its own
	require.NoError(t, err)
	<-h.Done()
	require.ErrorIs(t, h.Err(), zklock.ErrMaxHold)
	waitParticipants(t, quick, 0)
	_ = h.Release()
}

// ContextWithMaxHold bounds one acquire's hold in the other recipes too: a
// Semaphore's lease and an Election's leadership, each below its lock's
// own, larger bound. The hold ends with ErrMaxHold while its owner does
// nothing, its node goes, and the next participant is granted.
func TestIntegration_MaxHoldPerCallLeaseAndLeadership(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, next := e.client(), e.client()
	bg := context.Background()
	bounded := zklock.ContextWithMaxHold(bg, maxHoldTest)

	sem, err := zklock.NewSemaphore(c, e.root+"/sem", 1, zklock.WithMaxHold(time.Hour))
	require.NoError(t, err)
	lease, err := sem.Acquire(bounded)
	require.NoError(t, err)
	nextSem, err := zklock.NewSemaphore(next, e.root+"/sem", 1)
	require.NoError(t, err)
	w := leaseAsync(bg, nextSem)
	waitChildren(t, e, e.root+"/sem/locks", 1) // it waits for the bounded lease, holding the internal lock
	waitDone(t, lease.Hold().Context(), 10*time.Second)
	require.ErrorIs(t, lease.Hold().Err(), zklock.ErrMaxHold)
	l := await(t, w, 10*time.Second)
	require.NoError(t, l.err, "the next participant is granted")
	require.ErrorIs(t, lease.Release(), zklock.ErrLockLost)
	require.NoError(t, l.lease.Release())

	el, err := zklock.NewElection(c, e.root+"/el", "bounded", zklock.WithMaxHold(time.Hour))
	require.NoError(t, err)
	leader, err := el.Campaign(bounded)
	require.NoError(t, err)
	nextEl, err := zklock.NewElection(next, e.root+"/el", "next")
	require.NoError(t, err)
	campaign := make(chan error, 1)
	go func() {
		h, err := nextEl.Campaign(bg)
		if err == nil {
			err = h.Release()
		}
		campaign <- err
	}()
	waitChildren(t, e, e.root+"/el", 2) // it waits behind the bounded leader
	waitDone(t, leader.Context(), 10*time.Second)
	require.ErrorIs(t, leader.Err(), zklock.ErrMaxHold)
	require.NoError(t, await(t, campaign, 10*time.Second), "the next participant leads, and resigns")
	require.ErrorIs(t, leader.Release(), zklock.ErrLockLost)
}

// A maximum hold time that is not positive is refused, by every recipe's
// constructor for WithMaxHold, by the acquire for ContextWithMaxHold.
func TestIntegration_MaxHoldBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	for _, d := range []time.Duration{0, -time.Second} {
		opt := zklock.WithMaxHold(d)
		_, err := zklock.NewMutex(c, "/x", opt)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument, d)
		assert.Contains(t, err.Error(), "maximum hold time")
		_, err = zklock.NewReadWriteLock(c, "/x", opt)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
		_, err = zklock.NewSemaphore(c, "/x", 2, opt)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
		_, err = zklock.NewSemaphoreMutex(c, "/x", opt)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
		_, err = zklock.NewElection(c, "/x", "id", opt)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
		_, err = zklock.NewSelector(c, "/x", "id", opt)
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	}
	m := e.mutex(c, "/bad")
	_, err := m.Lock(zklock.ContextWithMaxHold(context.Background(), 0))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.True(t, errors.Is(err, zklock.ErrInvalidArgument))
	waitParticipants(t, m, 0)
}

// A MultiLock taken under ContextWithMaxHold bounds its members' holds, but
// its hold's context, like every hold's, does not pass the bound on: an
// acquire made with it is unbounded. A control hold with twice the bound,
// taken after the nested one, ends only after the nested one would have.
func TestIntegration_MaxHoldPerCallNotInheritedThroughMultiLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bg := context.Background()
	ml := zklock.NewMultiLock(e.mutex(c, "/a"), e.mutex(c, "/b"))
	hd, err := ml.Lock(zklock.ContextWithMaxHold(bg, maxHoldTest))
	require.NoError(t, err)
	nested, err := e.mutex(c, "/nested").Lock(hd.Context())
	require.NoError(t, err)
	control, err := e.mutex(c, "/control").Lock(zklock.ContextWithMaxHold(bg, 2*maxHoldTest))
	require.NoError(t, err)
	for _, h := range []*zklock.Hold{hd, control} {
		waitDone(t, h.Context(), 10*time.Second) // the call's bound ends the hold
		require.ErrorIs(t, h.Err(), zklock.ErrMaxHold)
		require.ErrorIs(t, h.Release(), zklock.ErrLockLost)
	}
	assert.NoError(t, nested.Err(), "the nested acquire had no bound of its own")
	_ = nested.Release()
}
