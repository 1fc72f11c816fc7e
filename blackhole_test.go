package zklock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// deadlineSlack is what a call may take past its context's deadline while
// its connection swallows every byte: scheduling only (the holder of a busy
// lock is read before the deadline, or not at all).
const deadlineSlack = 150 * time.Millisecond

// restoreBound is how long the background deletes may take once a
// blackhole ends: a reconnection and a round trip (under 0.2 s seen under
// -race), far less than one connection attempt's timeout (T = 10 s for
// one server), which a reconnection that hung would take.
const restoreBound = 3 * time.Second

// While the connection is black-holed (bytes swallowed, no reset: the
// Client still believes it connected), every call returns within its
// context's deadline, give or take scheduling, also one that waits for a
// busy lock (whose holder it cannot read here, so it names none); a cancelled one returns at once
// (naming no holder: none can be read before a cancellation). The work a
// call leaves (its node's delete) goes on in the background, and no node
// is left once the connection is back.
func TestIntegration_BlackholeCallsKeepTheirDeadlines(t *testing.T) {
	t.Parallel()
	e := setup(t)
	link := e.link()
	c := e.client(zklock.WithDialer(link.Dial), zklock.WithSessionTimeout(10*time.Second))
	holder := e.client()
	bg := context.Background()

	m, theirs := e.mutex(c, "/m"), e.mutex(holder, "/m")
	held, err := theirs.Acquire(bg)
	require.NoError(t, err)
	defer theirs.Release(held)
	sem, err := zklock.NewSemaphore(c, e.root+"/sem", 1)
	require.NoError(t, err)
	theirSem, err := zklock.NewSemaphore(holder, e.root+"/sem", 1)
	require.NoError(t, err)
	lease, err := theirSem.Acquire(bg)
	require.NoError(t, err)
	defer lease.Release()
	mine, err := e.mutex(c, "/mine").Lock(bg)
	require.NoError(t, err)

	queued, cancel := context.WithCancel(bg)
	got := acquireAsync(queued, m)
	// A waiter whose deadline comes during the blackhole.
	const timedOut = 2 * time.Second
	timedStart := time.Now()
	timed, cancelTimed := context.WithTimeout(bg, timedOut)
	defer cancelTimed()
	gotTimed := acquireAsync(timed, e.mutex(c, "/m"))
	waitParticipants(t, theirs, 3)
	link.Blackhole()
	restore := sync.OnceFunc(link.Restore) // once: a second Restore would cut the connection again
	defer restore()
	require.Less(t, time.Since(timedStart), timedOut/2, "the timed waiter queued well before its deadline")

	within := func(what string, d time.Duration, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg, d)
		defer cancel()
		start := time.Now()
		err := f(ctx)
		took := time.Since(start)
		require.ErrorIs(t, err, context.DeadlineExceeded, what)
		t.Logf("%s took %v with a deadline of %v", what, took, d)
		assert.Less(t, took, d+deadlineSlack, "%s took %v with a deadline of %v", what, took, d)
	}
	within("Semaphore.Acquire", 700*time.Millisecond, func(ctx context.Context) error {
		_, err := sem.Acquire(ctx)
		return err
	})
	within("Mutex.Acquire", 500*time.Millisecond, func(ctx context.Context) error {
		_, err := e.mutex(c, "/free").Acquire(ctx)
		return err
	})
	within("Client.Get", 300*time.Millisecond, func(ctx context.Context) error {
		_, _, err := c.Get(ctx, e.root)
		return err
	})

	timedA := await(t, gotTimed, 10*time.Second)
	require.ErrorIs(t, timedA.err, context.DeadlineExceeded)
	took := timedA.at.Sub(timedStart)
	t.Logf("a queued Mutex.Acquire took %v with a deadline of %v: %v", took, timedOut, timedA.err)
	assert.Less(t, took, timedOut+deadlineSlack, "a queued Mutex.Acquire took %v with a deadline of %v", took, timedOut)

	start := time.Now()
	cancel()
	a := await(t, got, 10*time.Second)
	assert.Less(t, time.Since(start), deadlineSlack, "a queued Lock cancelled")
	require.ErrorIs(t, a.err, context.Canceled)

	start = time.Now()
	err = mine.Release()
	assert.Less(t, time.Since(start), time.Second+deadlineSlack, "Release")
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("Release: %v", err)
	}

	// Once the connection is back, the deletes left to the background
	// are done at once: the Client reconnects as soon as Restore cuts the
	// silent connection, and sends them on the new one. They are awaited
	// here, while the Link is up: it closes when the test ends, before
	// the env's orphan check, and a delete still on its way then never
	// reaches the server (the check failed so, 1 run in 10 to 30, when
	// the test ended on its deferred Restore alone).
	restore()
	require.Eventually(t, func() bool {
		return len(e.children(e.root+"/mine")) == 0 && len(e.children(e.root+"/m")) == 1
	}, restoreBound, 10*time.Millisecond, "the nodes given up during the blackhole are deleted once it ends")
}
