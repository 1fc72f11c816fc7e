package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// Shutdown refuses new acquires at once, ends the waiting ones without a
// node, and waits for the holds that stand, whose contexts stay live,
// until their owners release them; then the Client is closed.
func TestIntegration_ShutdownWaitsForRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	other := e.client()
	busy, err := e.mutex(other, "/busy").Lock(context.Background())
	require.NoError(t, err)
	waiting := e.mutex(c, "/busy")
	w := acquireAsync(context.Background(), waiting)
	waitParticipants(t, waiting, 2)
	held, err := e.mutex(c, "/held").Lock(context.Background())
	require.NoError(t, err)

	var returned atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- c.Shutdown(context.Background())
		returned.Store(true)
	}()
	a := await(t, w, 10*time.Second)
	require.ErrorIs(t, a.err, zklock.ErrClosed, "a waiter ends")
	waitParticipants(t, waiting, 1) // its node is gone: only other's holder stands
	_, err = e.mutex(c, "/new").Lock(context.Background())
	require.ErrorIs(t, err, zklock.ErrClosed, "a new acquire fails at once")

	assert.NoError(t, held.Err(), "a hold that stands is left to its owner")
	assert.False(t, returned.Load(), "Shutdown waits for it")
	_, err = held.Token()
	require.NoError(t, err, "and it still works")
	require.NoError(t, held.Release())
	require.NoError(t, await(t, done, 10*time.Second))
	assert.Equal(t, zklock.StateClosed, c.State())
	require.NoError(t, busy.Release())
}

// A hold that outlives Shutdown's context is cut short: lost, its node
// gone, and Shutdown's error says so, naming the lock.
func TestIntegration_ShutdownCutsShort(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	stuck, err := e.mutex(c, "/stuck").Lock(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = c.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "1 hold(s) cut short, of "+e.root+"/stuck")
	require.ErrorIs(t, stuck.Err(), zklock.ErrLockLost)
	require.ErrorIs(t, stuck.Err(), zklock.ErrClosed)
	m := e.mutex(e.client(), "/stuck")
	waitParticipants(t, m, 0)
	assert.NoError(t, c.Shutdown(context.Background()), "a second Shutdown has nothing to wait for")
}

// Shutdown with no hold closes at once; bad input is refused.
func TestShutdownInput(t *testing.T) {
	t.Parallel()
	var zero zklock.Client
	assert.NoError(t, zero.Shutdown(context.Background()))
	var nilClient *zklock.Client
	assert.NoError(t, nilClient.Shutdown(context.Background()))
}

func TestIntegration_ShutdownNilContext(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	//lint:ignore SA1012 on purpose
	require.ErrorIs(t, c.Shutdown(nil), zklock.ErrInvalidArgument) //nolint:staticcheck
	require.NoError(t, c.Shutdown(context.Background()))
}

// Shutdown ends the waits of a Semaphore, an Election and a Selector's Run
// with ErrClosed, and they leave no node (the env's clean-up checks).
func TestIntegration_ShutdownEndsOtherRecipesWaits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	other := e.client()
	bg := context.Background()

	sem, err := zklock.NewSemaphore(other, e.root+"/sem", 1)
	require.NoError(t, err)
	lease, err := sem.Acquire(bg)
	require.NoError(t, err)
	el, err := zklock.NewElection(other, e.root+"/el", "other")
	require.NoError(t, err)
	leader, err := el.Campaign(bg)
	require.NoError(t, err)
	sel, err := zklock.NewSelector(other, e.root+"/sel", "other")
	require.NoError(t, err)
	term, err := e.mutex(other, "/sel").Lock(bg) // the Selector's lock, held
	require.NoError(t, err)
	_ = sel

	errs := make(chan error, 3)
	mySem, err := zklock.NewSemaphore(c, e.root+"/sem", 1)
	require.NoError(t, err)
	go func() { _, err := mySem.Acquire(bg); errs <- err }()
	myEl, err := zklock.NewElection(c, e.root+"/el", "me")
	require.NoError(t, err)
	go func() { _, err := myEl.Campaign(bg); errs <- err }()
	mySel, err := zklock.NewSelector(c, e.root+"/sel", "me")
	require.NoError(t, err)
	go func() {
		errs <- mySel.Run(bg, func(context.Context) error { return nil })
	}()
	require.Eventually(t, func() bool {
		p1, _ := sem.Participants(bg)
		p2, _ := el.Participants(bg)
		p3, _ := sel.Participants(bg)
		return len(p1) == 2 && len(p2) == 2 && len(p3) == 2
	}, 10*time.Second, 5*time.Millisecond)

	require.NoError(t, c.Shutdown(bg))
	for range 3 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, zklock.ErrClosed)
		case <-time.After(10 * time.Second):
			t.Fatal("a wait did not end")
		}
	}
	require.NoError(t, lease.Release())
	require.NoError(t, leader.Release())
	require.NoError(t, term.Release())
}

// awaitShutdownBegun waits until a Shutdown of m's Client has begun: a new
// acquire of m, which another holds, then fails with ErrClosed instead of
// ErrLocked.
func awaitShutdownBegun(t *testing.T, m *zklock.Mutex) {
	t.Helper()
	var err error
	require.Eventually(t, func() bool {
		_, err = m.TryLock(context.Background())
		return errors.Is(err, zklock.ErrClosed)
	}, 10*time.Second, time.Millisecond, "Shutdown has not begun: %v", err)
}

// shutdownRaces runs rounds of a Shutdown waiting for one hold while a
// Close cuts in from another goroutine, on Clients from newClient. Each
// round, the Shutdown returns an error wrapping ErrClosed that counts the
// hold the Close cut short, and names its lock. With two, a second
// Shutdown runs beside the first: it reports the same if it began before
// the Close, nil if it began after (there is no telling which from
// outside); a Shutdown begun after the Close returned returns nil.
func shutdownRaces(t *testing.T, e *env, rounds, shutdowns int, newClient func() *zklock.Client) {
	bg := context.Background()
	want := "zklock: shutdown: 1 hold(s) cut short, of " + e.root + "/held: client closed"
	for round := range rounds {
		c := newClient()
		m := e.mutex(c, "/held")
		held, err := m.Lock(bg)
		require.NoError(t, err)
		shut := make(chan error, shutdowns)
		for range shutdowns {
			go func() { shut <- c.Shutdown(bg) }()
		}
		awaitShutdownBegun(t, m)
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		counted := 0
		for range shutdowns {
			if err := await(t, shut, 10*time.Second); err != nil {
				require.ErrorIs(t, err, zklock.ErrClosed, "round %d", round)
				require.EqualError(t, err, want, "round %d", round)
				counted++
			}
		}
		require.NotZero(t, counted, "round %d: the Shutdown that began first counts the hold", round)
		require.NoError(t, await(t, closed, 10*time.Second))
		require.ErrorIs(t, held.Err(), zklock.ErrClosed, "round %d", round)
		require.NoError(t, c.Shutdown(bg), "round %d: a Shutdown after Close cuts nothing short", round)
	}
}

// A Close that cuts in on a Shutdown waiting for a hold ends it at once,
// and its error counts the hold, whether it looks before or after the
// Close has ended the hold.
func TestIntegration_ShutdownRacingCloseCountsTheHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	shutdownRaces(t, e, 200, 1, func() *zklock.Client { return e.client() })
}

// Two Shutdowns at once wait alike, and report alike the Close that cuts
// in on them.
func TestIntegration_ShutdownTwiceRacingClose(t *testing.T) {
	t.Parallel()
	e := setup(t)
	shutdownRaces(t, e, 50, 2, func() *zklock.Client { return e.client() })
}

// The same on a Client made by NewClient, whose Close deletes the nodes
// itself and waits for the deletes.
func TestIntegration_ShutdownRacingCloseCountsTheHoldWrapped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	shutdownRaces(t, e, 50, 1, func() *zklock.Client {
		conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
		require.NoError(t, err)
		t.Cleanup(conn.Close)
		c := zklock.NewClient(conn, events)
		t.Cleanup(func() { c.Close() })
		return c
	})
}

// A hold released before a Close cuts in on the Shutdown that waited for
// it is not counted: the Shutdown returns nil.
func TestIntegration_ShutdownReleasedBeforeCloseIsNotCut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	for round := range 50 {
		c := e.client()
		m := e.mutex(c, "/held")
		held, err := m.Lock(bg)
		require.NoError(t, err)
		shut := make(chan error, 1)
		go func() { shut <- c.Shutdown(bg) }()
		awaitShutdownBegun(t, m)
		require.NoError(t, held.Release())
		require.NoError(t, c.Close())
		require.NoError(t, await(t, shut, 10*time.Second), "round %d", round)
	}
}

// A hold lost on its own while Shutdown waits (its node deleted by an
// operator) is not one that Shutdown cut short: the error counts only the
// hold that its end of ctx cut, and the lost one's owner learns of its
// loss from the hold.
func TestIntegration_ShutdownDoesNotCountLostHolds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	c := e.client()
	lost, err := e.mutex(c, "/lost").Lock(bg)
	require.NoError(t, err)
	cut, err := e.mutex(c, "/cut").Lock(bg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(ctx) }()
	awaitShutdownBegun(t, e.mutex(c, "/cut"))
	p, err := e.mutex(c, "/lost").Participants(bg)
	require.NoError(t, err)
	require.Len(t, p, 1)
	require.NoError(t, e.admin.Delete(p[0], -1))
	waitDone(t, lost.Context(), 10*time.Second)
	cancel()
	err = await(t, shut, 10*time.Second)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "zklock: shutdown: 1 hold(s) cut short, of "+e.root+"/cut: context canceled", err.Error())
	assert.NotErrorIs(t, lost.Err(), zklock.ErrClosed, "lost before the Close")
	require.ErrorIs(t, cut.Err(), zklock.ErrClosed)
}

// Shutdown's error names the lock of every kind of hold it cuts short,
// by the path its recipe was made with (a lease by its Semaphore's, a
// leadership or a term by its election's, a MultiLock's by its members'),
// each once, in order; it counts every hold (a MultiLock's members each).
// A ctx already done cuts at once.
func TestIntegration_ShutdownNamesEveryKindOfHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	c := e.client()
	var holds []*zklock.Hold
	hold := func(h *zklock.Hold, err error) {
		t.Helper()
		require.NoError(t, err)
		holds = append(holds, h)
	}
	hold(e.mutex(c, "/mutex").Lock(bg))
	sem, err := zklock.NewSemaphore(c, e.root+"/sem", 2)
	require.NoError(t, err)
	lease, err := sem.Acquire(bg)
	require.NoError(t, err)
	holds = append(holds, lease.Hold())
	el, err := zklock.NewElection(c, e.root+"/el", "me")
	require.NoError(t, err)
	hold(el.Campaign(bg))
	rwr, err := zklock.NewReadWriteLock(c, e.root+"/rwr")
	require.NoError(t, err)
	hold(rwr.ReadLock().Lock(bg))
	hold(rwr.ReadLock().Lock(bg)) // a second reader: one path, two holds
	rww, err := zklock.NewReadWriteLock(c, e.root+"/rww")
	require.NoError(t, err)
	hold(rww.WriteLock().Lock(bg))
	hold(zklock.NewMultiLock(e.mutex(c, "/ml1"), e.mutex(c, "/ml2")).Lock(bg))
	smx, err := zklock.NewSemaphoreMutex(c, e.root+"/smx")
	require.NoError(t, err)
	hold(smx.Lock(bg))
	sel, err := zklock.NewSelector(c, e.root+"/sel", "me")
	require.NoError(t, err)
	leading := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- sel.Run(bg, func(ctx context.Context) error {
			close(leading)
			<-ctx.Done()
			return nil
		})
	}()
	await(t, leading, 10*time.Second)

	done, cancel := context.WithCancel(bg)
	cancel()
	err = c.Shutdown(done)
	require.ErrorIs(t, err, context.Canceled)
	var want []string
	for _, p := range []string{"/el", "/ml1", "/ml2", "/mutex", "/rwr", "/rww", "/sel", "/sem", "/smx"} {
		want = append(want, e.root+p)
	}
	assert.Equal(t, "zklock: shutdown: 10 hold(s) cut short, of "+strings.Join(want, ", ")+": context canceled", err.Error())
	for i, h := range holds {
		require.ErrorIs(t, h.Err(), zklock.ErrClosed, "hold %d", i)
	}
	require.ErrorIs(t, await(t, ran, 10*time.Second), zklock.ErrClosed)
}

// Shutdown's error names at most ten locks, in order, and says how many
// more there were; it wraps ctx.Err() and the cause ctx was cancelled
// with.
func TestIntegration_ShutdownNamesTenLocks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	c := e.client()
	var want []string
	for i := range 12 {
		p := fmt.Sprintf("/m%02d", i)
		_, err := e.mutex(c, p).Lock(bg)
		require.NoError(t, err)
		if i < 10 {
			want = append(want, e.root+p)
		}
	}
	done, cancel := context.WithCancelCause(bg)
	redeploy := errors.New("redeploy")
	cancel(redeploy)
	err := c.Shutdown(done)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, redeploy)
	assert.Equal(t, "zklock: shutdown: 12 hold(s) cut short, of "+strings.Join(want, ", ")+" and 2 more: context canceled (redeploy)", err.Error())
}

// Waits cancelled just before the Client closes (a Selector's Run before a
// Shutdown, a Mutex's Lock before a Close) leave nothing to do in the
// background: the Client's session ends, and their nodes with it. So a
// clean exit logs nothing at Warn or above, however the delete of a
// node and the Close fall.
func TestIntegration_ShutdownAfterCancelledWaitsIsQuiet(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	for _, tc := range []struct {
		name  string
		wait  func(ctx context.Context, c *zklock.Client, p string) error
		close func(c *zklock.Client) error
	}{
		{"selector run, shutdown", func(ctx context.Context, c *zklock.Client, p string) error {
			s, err := zklock.NewSelector(c, p, "me")
			if err != nil {
				return err
			}
			return s.Run(ctx, func(context.Context) error { return nil })
		}, func(c *zklock.Client) error { return c.Shutdown(bg) }},
		{"mutex lock, close", func(ctx context.Context, c *zklock.Client, p string) error {
			m, err := zklock.NewMutex(c, p)
			if err != nil {
				return err
			}
			_, err = m.Lock(ctx)
			return err
		}, func(c *zklock.Client) error { return c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			busy := e.mutex(e.client(), "/busy")
			term, err := busy.Lock(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, term.Release()) }()
			for round := range 40 {
				rec := newLogRecorder(slog.LevelWarn)
				c := e.client(zklock.WithLogger(slog.New(rec)))
				waitParticipants(t, busy, 1)
				ctx, cancel := context.WithCancel(bg)
				waited := make(chan error, 1)
				go func() { waited <- tc.wait(ctx, c, e.root+"/busy") }()
				waitParticipants(t, busy, 2)
				cancel()
				require.NoError(t, tc.close(c))
				require.Error(t, await(t, waited, 10*time.Second))
				require.Empty(t, rec.messages(), "round %d", round)
			}
		})
	}
}

// A Release whose delete the Client's own Close cuts short is as quiet:
// the node ends with the session, and nothing goes on in the background.
// (A Close that comes first cuts the hold short, and says so.)
func TestIntegration_ReleaseRacingCloseIsQuiet(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	for round := range 40 {
		rec := newLogRecorder(slog.LevelWarn)
		c := e.client(zklock.WithLogger(slog.New(rec)))
		held, err := e.mutex(c, "/held").Lock(bg)
		require.NoError(t, err)
		released := make(chan error, 1)
		go func() { released <- held.Release() }()
		require.NoError(t, c.Close())
		if err := await(t, released, 10*time.Second); err != nil {
			require.ErrorIs(t, err, zklock.ErrClosed, "round %d", round)
		}
		for _, msg := range rec.messages() {
			require.Equal(t, "zklock: closed with holds standing; they were lost", msg, "round %d", round)
		}
	}
}

// A MultiLock whose acquire is under way when Close cuts in (its first
// member held, its second busy) fails with ErrClosed: its caller never
// held anything, so Shutdown cut nothing short and returns nil; the
// member it had taken is not counted. A granted MultiLock's members are
// counted, as before.
func TestIntegration_ShutdownDoesNotCountAFailedMultiLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	busy, err := e.mutex(e.client(), "/b").Lock(context.Background())
	require.NoError(t, err)
	defer busy.Release()
	for round := range 10 {
		c, err := zklock.Connect(e.servers)
		require.NoError(t, err)
		ml, err := zklock.NewMultiLockPaths(c, e.root+"/a", e.root+"/b")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() { _, err := ml.Lock(context.Background()); got <- err }()
		waitChildren(t, e, e.root+"/b", 2) // holding /a, queued on /b
		done, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, c.Shutdown(done), "round %d: the MultiLock was never its caller's", round)
		require.ErrorIs(t, await(t, got, 10*time.Second), zklock.ErrClosed)
	}

	c := e.client()
	ml, err := zklock.NewMultiLockPaths(c, e.root+"/c", e.root+"/d")
	require.NoError(t, err)
	_, err = ml.Lock(context.Background())
	require.NoError(t, err)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	err = c.Shutdown(done)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "2 hold(s) cut short, of "+e.root+"/c, "+e.root+"/d")
}
