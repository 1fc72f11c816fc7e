package zklock_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	kit "github.com/zklock/zklock/zktest"
)

// An acquire while the Client is not connected: a blocking acquire waits
// for the connection for as long as its context allows (the retry policy
// does not bound it), the wait is logged once per outage, and an acquire
// whose context ends while the Client is not connected says so, and for
// how long, besides wrapping ctx.Err().

// offline is a Client's way to its ZooKeeper server that a test takes
// down as a stopped server is: the connection is cut, and new ones are
// refused until the test brings the server back.
type offline struct {
	link *kit.Link
	down atomic.Bool
}

func newOffline(e *env) *offline { return &offline{link: e.link()} }

// dial is a zk.Dialer through the Link, refused while the server is down.
func (o *offline) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if o.down.Load() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return o.link.Dial(network, addr, timeout)
}

// client connects a Client through o. Its 30s session is trusted for
// about 7s of suspension, longer than any outage here: the session lives
// on, and the Client reports Suspended, then Reconnected.
func (o *offline) client(e *env, opts ...zklock.Option) *zklock.Client {
	e.t.Helper()
	return e.client(append([]zklock.Option{zklock.WithSessionTimeout(30 * time.Second),
		zklock.WithDialer(o.dial)}, opts...)...)
}

// stop takes the server away from c, and waits until c sees it.
func (o *offline) stop(t *testing.T, c *zklock.Client) {
	t.Helper()
	o.down.Store(true)
	o.link.Cut()
	waitState(t, c, 10*time.Second, zklock.StateSuspended)
}

// start brings the server back, and waits until c has reconnected.
func (o *offline) start(t *testing.T, c *zklock.Client) {
	t.Helper()
	o.down.Store(false)
	waitState(t, c, 15*time.Second, zklock.StateReconnected)
}

// offlineRecipe is one blocking acquire: lock makes the recipe's lock at
// p on c (on the test's goroutine) and returns its blocking acquire.
type offlineRecipe struct {
	name  string
	nodes int // the nodes a waiter keeps while it waits behind a holder
	lock  func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error)
}

// offlineRecipes are the recipes whose waiters the tests queue behind a
// holder: the Mutex (for the engine's lock queue), the Semaphore (its
// leases wait in the engine's waiter, behind its internal lock) and the
// Election (its own loop around the engine).
var offlineRecipes = []offlineRecipe{
	{"mutex", 1, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		m, err := zklock.NewMutex(c, p)
		require.NoError(t, err)
		return m.Lock
	}},
	{"semaphore", 2, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		s, err := zklock.NewSemaphore(c, p, 1)
		require.NoError(t, err)
		return func(ctx context.Context) (*zklock.Hold, error) {
			l, err := s.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return l.Hold(), nil
		}
	}},
	{"election", 1, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		el, err := zklock.NewElection(c, p, "candidate")
		require.NoError(t, err)
		return el.Campaign
	}},
}

// everyBlockingAcquire adds to offlineRecipes the other blocking acquires:
// the two sides of a ReadWriteLock, the SemaphoreMutex, the MultiLock and
// the Selector (its Run, whose term ends at once).
var everyBlockingAcquire = append(offlineRecipes[:len(offlineRecipes):len(offlineRecipes)],
	offlineRecipe{"read", 1, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		rw, err := zklock.NewReadWriteLock(c, p)
		require.NoError(t, err)
		return rw.ReadLock().Lock
	}},
	offlineRecipe{"write", 1, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		rw, err := zklock.NewReadWriteLock(c, p)
		require.NoError(t, err)
		return rw.WriteLock().Lock
	}},
	offlineRecipe{"semaphore-mutex", 2, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		m, err := zklock.NewSemaphoreMutex(c, p)
		require.NoError(t, err)
		return m.Lock
	}},
	offlineRecipe{"multi", 2, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		ml, err := zklock.NewMultiLockPaths(c, p+"/a", p+"/b")
		require.NoError(t, err)
		return ml.Lock
	}},
	offlineRecipe{"selector", 1, func(t *testing.T, c *zklock.Client, p string) func(context.Context) (*zklock.Hold, error) {
		s, err := zklock.NewSelector(c, p, "candidate")
		require.NoError(t, err)
		return func(ctx context.Context) (*zklock.Hold, error) {
			return nil, s.Run(ctx, func(context.Context) error { return nil })
		}
	}},
)

// notConnectedFor is how an acquire that ended while the Client was not
// connected says for how long.
var notConnectedFor = regexp.MustCompile(`not connected for [0-9.]+(ms|s)\b`)

// (a) Every blocking acquire started while the server is down, with a 1s
// timeout: the error wraps context.DeadlineExceeded, as a busy lock's
// does, and ErrNotConnected, and says for how long the Client has not
// been connected and which lock it was. It comes at the deadline, without
// a read of the holder, which cannot be read then. An Observer files it
// under CauseConnection, not CauseTimeout: a dashboard's failed acquires
// tell an outage from busy locks. Nothing is left behind.
func TestIntegration_AcquireTimesOutWhileDown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	o := newOffline(e)
	var mu sync.Mutex
	var failed []zklock.Event
	c := o.client(e, zklock.WithObserver(func(ev zklock.Event) {
		if ev.Kind == zklock.EventAcquireFailed {
			mu.Lock()
			failed = append(failed, ev)
			mu.Unlock()
		}
	}))
	type outcome struct {
		hd   *zklock.Hold
		err  error
		took time.Duration
	}
	o.stop(t, c)
	outcomes := make([]chan outcome, len(everyBlockingAcquire))
	for i, r := range everyBlockingAcquire {
		acquire := r.lock(t, c, e.root+"/"+r.name)
		outcomes[i] = make(chan outcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			hd, err := acquire(ctx)
			outcomes[i] <- outcome{hd, err, time.Since(start)}
		}()
	}
	for i, r := range everyBlockingAcquire {
		p := e.root + "/" + r.name
		out := await(t, outcomes[i], 10*time.Second)
		hd, err, took := out.hd, out.err, out.took
		require.Error(t, err, r.name)
		require.Nil(t, hd, r.name)
		assert.ErrorIs(t, err, context.DeadlineExceeded, r.name)
		assert.ErrorIs(t, err, zklock.ErrNotConnected, r.name)
		assert.Regexp(t, notConnectedFor, err.Error(), r.name)
		assert.Contains(t, err.Error(), p, r.name)
		var he *zklock.HolderError
		assert.False(t, errors.As(err, &he), "%s: no holder is known while down: %v", r.name, err)
		assert.Less(t, took, 2500*time.Millisecond, "%s returns at its deadline: %v", r.name, err)
		t.Logf("%s: %v", r.name, err)
	}
	o.start(t, c)
	c.Close() // the Observer has had every event once Close returns
	mu.Lock()
	defer mu.Unlock()
	for _, r := range everyBlockingAcquire {
		p, n := e.root+"/"+r.name+"/", 0 // a MultiLock's Path is its members'
		for _, ev := range failed {
			if strings.HasPrefix(ev.Path+"/", p) {
				n++
				assert.Equal(t, zklock.CauseConnection, ev.Cause, "%s: the Observer's cause of %v", r.name, ev.Err)
			}
		}
		assert.NotZero(t, n, "%s: no EventAcquireFailed", r.name)
	}
}

// (b) Acquires started while the server is down wait, and succeed once it
// is back (the context bounds the wait, not the retry policy, whose
// default allows 3 retries). The wait is not silent: the first acquire
// that waits in an outage logs it at Info, naming its lock; the others
// waiting in the same outage add no record, and the next outage gets one
// of its own.
func TestIntegration_AcquireWaitsForTheConnection(t *testing.T) {
	t.Parallel()
	e := setup(t)
	o := newOffline(e)
	rec := newLogRecorder(slog.LevelInfo)
	c := o.client(e, zklock.WithLogger(slog.New(rec)))
	const waiting = "zklock: not connected: acquires wait for the connection"
	records := func() int {
		n := 0
		for _, m := range rec.messages() {
			if m == waiting {
				n++
			}
		}
		return n
	}
	bg := context.Background()
	outcomes := make(chan error, 2*len(offlineRecipes))
	acquire := func(acquire func(context.Context) (*zklock.Hold, error)) {
		go func() {
			hd, err := acquire(bg)
			if err == nil {
				err = hd.Release()
			}
			outcomes <- err
		}()
	}

	o.stop(t, c)
	var paths []string
	for _, r := range offlineRecipes {
		for _, name := range []string{r.name + "-1", r.name + "-2"} {
			paths = append(paths, e.root+"/"+name)
			acquire(r.lock(t, c, e.root+"/"+name))
		}
	}
	attrs, level := rec.await(t, waiting, 10*time.Second)
	assert.Equal(t, slog.LevelInfo, level)
	assert.True(t, slices.ContainsFunc(paths, func(p string) bool { return attrs["path"] == p || strings.HasPrefix(attrs["path"], p+"/") }),
		"the record names the lock of the acquire that waited first (a Semaphore's internal lock): %s", attrs["path"])
	assert.Equal(t, "Suspended", attrs["state"])
	_, err := time.ParseDuration(attrs["for"])
	assert.NoError(t, err, "for is how long the Client has not been connected")
	select {
	case err := <-outcomes:
		t.Fatalf("an acquire ended while the server was down: %v", err)
	default:
	}
	o.start(t, c)
	for range 2 * len(offlineRecipes) {
		require.NoError(t, await(t, outcomes, 15*time.Second), "an acquire started while down succeeds once the server is back")
	}
	assert.Equal(t, 1, records(), "one record for the outage, however many acquires waited")

	o.stop(t, c)
	acquire(offlineRecipes[0].lock(t, c, e.root+"/next-outage"))
	rec.await(t, waiting, 10*time.Second)
	require.Eventually(t, func() bool { return records() == 2 }, 10*time.Second, 5*time.Millisecond, "the next outage logs again")
	o.start(t, c)
	require.NoError(t, await(t, outcomes, 15*time.Second))
	assert.Equal(t, 2, records())
}

// (c) A waiter queued behind a holder (connected) when its server goes
// down, whose context then expires: its error wraps ErrNotConnected too,
// and its nodes are deleted once the Client has reconnected (with the
// same session: deleted, not expired).
func TestIntegration_QueuedAcquireTimesOutWhileDown(t *testing.T) {
	t.Parallel()
	for _, r := range offlineRecipes {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			o := newOffline(e)
			c := o.client(e)
			p := e.root + "/queued"
			bg := context.Background()
			held, err := r.lock(t, e.client(), p)(bg)
			require.NoError(t, err)
			const timeout = 5 * time.Second
			ctx, cancel := context.WithTimeout(bg, timeout)
			defer cancel()
			start := time.Now()
			got := make(chan error, 1)
			acquire := r.lock(t, c, p)
			go func() {
				hd, err := acquire(ctx)
				if hd != nil {
					err = errors.Join(errors.New("granted behind a holder"), hd.Release())
				}
				got <- err
			}()
			sid := zklock.ConnOf(c).SessionID()
			require.Eventually(t, func() bool { return len(ownedUnder(e, p, sid)) == r.nodes }, 10*time.Second, 5*time.Millisecond,
				"the waiter queued")
			o.stop(t, c)
			require.Less(t, time.Since(start), timeout, "the server went down before the deadline")

			err = await(t, got, 10*time.Second)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, zklock.ErrNotConnected)
			assert.Regexp(t, notConnectedFor, err.Error())
			assert.Contains(t, err.Error(), p)
			var he *zklock.HolderError
			assert.False(t, errors.As(err, &he), "no holder is read while down: %v", err)
			assert.Equal(t, zklock.StateSuspended, c.State(), "still down when it failed")
			assert.NotEmpty(t, ownedUnder(e, p, sid), "its nodes cannot be deleted while down")
			t.Logf("%v", err)

			o.start(t, c)
			require.Equal(t, sid, zklock.ConnOf(c).SessionID(), "the session lives on")
			require.Eventually(t, func() bool { return len(ownedUnder(e, p, sid)) == 0 }, 10*time.Second, 5*time.Millisecond,
				"its nodes are deleted once reconnected")
			require.NoError(t, held.Release())
		})
	}
}

// (d) A busy acquire that times out while connected is unchanged: its
// error wraps context.DeadlineExceeded and names the holder (HolderError),
// not ErrNotConnected.
func TestIntegration_BusyAcquireTimesOutConnected(t *testing.T) {
	t.Parallel()
	for _, r := range offlineRecipes {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			p := e.root + "/busy"
			bg := context.Background()
			held, err := r.lock(t, e.client(), p)(bg)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
			defer cancel()
			hd, err := r.lock(t, e.client(), p)(ctx)
			require.Error(t, err)
			require.Nil(t, hd)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.NotErrorIs(t, err, zklock.ErrNotConnected)
			assert.NotRegexp(t, notConnectedFor, err.Error())
			var he *zklock.HolderError
			require.True(t, errors.As(err, &he), "the holder is named: %v", err)
			assert.Equal(t, held.Path(), he.Node, "%v", err)
			assert.Regexp(t, "held by|leases held, the oldest by", err.Error()) // a Semaphore counts its leases
			require.NoError(t, held.Release())
		})
	}
}

// ownedUnder returns the nodes under p, at any depth, that session owns.
func ownedUnder(e *env, p string, session int64) []string {
	e.t.Helper()
	var owned []string
	_, _ = e.admin.Sync(p)
	for _, ch := range e.children(p) {
		full := p + "/" + ch
		if e.owner(full) == session {
			owned = append(owned, full)
		}
		owned = append(owned, ownedUnder(e, full, session)...)
	}
	return owned
}

// A busy lock's timeout, while connected, stays one when the connection
// drops as the acquire leaves (during the delete of its node): whether the
// acquire ended offline is judged as its wait ends, not after the delete.
func TestIntegration_BusyTimeoutThenCutIsNotOffline(t *testing.T) {
	t.Parallel()
	e := setup(t)
	o := newOffline(e)
	held, err := e.mutex(e.client(), "/busy").Lock(context.Background())
	require.NoError(t, err)
	c, f := e.faultClient(zklock.WithSessionTimeout(30*time.Second), zklock.WithDialer(o.dial))
	var once sync.Once
	f.mu.Lock()
	f.beforeDelete = func(string) { // the server goes away under the delete, and the Client knows it
		once.Do(func() { o.stop(t, c) })
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = e.mutex(c, "/busy").Lock(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, zklock.ErrNotConnected, "the wait ended while connected: %v", err)
	o.start(t, c)
	require.NoError(t, held.Release())
	waitChildren(t, e, e.root+"/busy", 0)
}

// (e) A node given up with no caller waiting for its delete (a
// Semaphore's internal lock, once the leases are made) while the
// connection is down: its delete stays queued on the session and goes
// out first after the reconnect, so the Client's next request no longer
// finds the node, even when the background queue is busy (a mass loss's
// clean-up occupies it). Before, such a delete went to the background
// queue, behind that clean-up and the requests sent meanwhile: a
// Semaphore's Try right after the reconnect found its internal lock
// still taken.
func TestIntegration_DeleteGivenUpWhileDownGoesFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	o := newOffline(e)
	c := o.client(e)
	bg := context.Background()
	require.NoError(t, c.EnsurePath(bg, e.root))
	p := e.root + "/lock"
	_, err := c.Create(bg, p, nil, zk.FlagEphemeral)
	require.NoError(t, err)
	release := zklock.OccupyBackground(c)
	t.Cleanup(release) // before the Client's Close, which waits for its workers

	o.stop(t, c)
	zklock.DeleteQueued(c, p)
	o.start(t, c)
	found, _, err := c.Exists(bg, p)
	require.NoError(t, err)
	assert.False(t, found, "the delete queued while down went out before the next request")
	release()
}
