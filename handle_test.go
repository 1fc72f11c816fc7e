package zklock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// Tests of the Hold handle (hold.go) that every recipe returns.

// A Hold carries its context, token and node, is released through itself
// once, and says why it ended.
func TestIntegration_HoldHandle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/h")
	bg := context.Background()

	hd, err := m.Lock(bg)
	require.NoError(t, err)
	require.NoError(t, hd.Err())
	assert.True(t, m.IsOwnedBy(hd.Context()))
	assert.Equal(t, m.LockPath(hd.Context()), hd.Path())
	tok, err := hd.Token()
	require.NoError(t, err)
	mtok, err := m.Token(hd.Context())
	require.NoError(t, err)
	assert.Equal(t, mtok, tok)
	_, err = m.TryLock(bg)
	require.ErrorIs(t, err, zklock.ErrLocked, "another context is another participant")

	require.NoError(t, hd.Release())
	require.ErrorIs(t, hd.Err(), zklock.ErrReleased)
	require.ErrorIs(t, context.Cause(hd.Context()), zklock.ErrReleased)
	err = hd.Release()
	require.ErrorIs(t, err, zklock.ErrNotHeld, "a Hold is released once")
	assert.ErrorContains(t, err, e.root+"/h")
	_, err = hd.Token()
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	assert.Empty(t, e.children(e.root+"/h"))
}

// Lock with a Hold's context re-enters: each Hold owes its own Release,
// and a second Release of one Hold cannot give up the other's count.
func TestIntegration_HoldReentry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/re")
	outer, err := m.Lock(context.Background())
	require.NoError(t, err)
	inner, err := m.Lock(outer.Context())
	require.NoError(t, err)
	assert.Equal(t, outer.Path(), inner.Path(), "one node")

	require.NoError(t, inner.Release())
	require.ErrorIs(t, inner.Release(), zklock.ErrNotHeld)
	require.NoError(t, outer.Err(), "the outer hold still stands after the inner Hold's two Releases")
	assert.Len(t, e.children(e.root+"/re"), 1)
	require.NoError(t, outer.Release())
	require.ErrorIs(t, outer.Err(), zklock.ErrReleased)
}

// The leaking pattern of a new user's first code: the README's
// `defer m.Release(ctx)` kept after `held, err := m.Acquire(ctx)`. Release
// with the caller's context fails with ErrNotHeld; the error says what
// went wrong, and so does a Warn record, for the deferred call that drops
// the error. (With Lock and Hold.Release the mistake cannot be written.)
func TestIntegration_ReleaseWithTheWrongContextIsLoud(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(syncWriter{&mu, &logged}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m := e.mutex(e.client(zklock.WithLogger(log)), "/leak")
	ctx := context.Background()

	leaky := func(ctx context.Context) (releaseErr error) {
		held, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		defer func() { releaseErr = m.Release(ctx) }() // the mistake: ctx, not held
		_ = held
		return nil
	}
	err := leaky(ctx)
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	assert.ErrorContains(t, err, "context that Acquire returned")
	assert.ErrorContains(t, err, e.root+"/leak")
	mu.Lock()
	assert.Contains(t, logged.String(), "level=WARN")
	assert.Contains(t, logged.String(), "stays held")
	mu.Unlock()
	assert.True(t, m.IsAcquiredInThisProcess(), "the lock is still held, and now everyone knows")

	// With nothing held, ErrNotHeld stays plain: no false alarm.
	other := e.mutex(e.client(), "/other")
	err = other.Release(ctx)
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	assert.NotContains(t, err.Error(), "Acquire returned")

	// Clean up the leaked hold the only way left: Close.
	for _, p := range e.children(e.root + "/leak") {
		require.NoError(t, e.admin.Delete(e.root+"/leak/"+p, -1))
	}
}

// A second Mutex of the same Client and path re-enters a hold taken
// through the first one, with Acquire, TryAcquire and Lock, instead of
// waiting for itself; a Mutex of another Client is another participant.
func TestIntegration_ReentryAcrossMutexes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m1 := e.mutex(c, "/orders/1")
	held, err := m1.Acquire(context.Background())
	require.NoError(t, err)

	m2 := e.mutex(c, "/orders/1") // a Mutex per request, say
	ctx, cancel := context.WithTimeout(held, 5*time.Second)
	defer cancel()
	again, err := m2.Acquire(ctx)
	require.NoError(t, err, "re-entry through a second Mutex must not wait")
	assert.Equal(t, held, again)
	try, err := m2.TryAcquire(held)
	require.NoError(t, err, "not ErrLocked: this context holds the lock")
	hd, err := m2.Lock(held)
	require.NoError(t, err)
	assert.True(t, m2.IsOwnedBy(held))
	assert.Len(t, e.children(e.root+"/orders/1"), 1, "one node for all of them")

	_, err = e.mutex(e.client(), "/orders/1").TryAcquire(held)
	require.ErrorIs(t, err, zklock.ErrLocked, "another Client's Mutex is another participant")

	require.NoError(t, hd.Release())
	require.NoError(t, m2.Release(try))
	require.NoError(t, m1.Release(again), "either Mutex releases")
	require.NoError(t, held.Err())
	require.NoError(t, m2.Release(held))
	require.ErrorIs(t, context.Cause(held), zklock.ErrReleased)
	assert.Empty(t, e.children(e.root+"/orders/1"))
}

// Do's function runs under a context that ends when the caller's ends
// (with the caller's cause) or when the hold ends (ErrLockLost), and
// carries the hold (an Acquire with it re-enters).
func TestIntegration_DoContextEndsWithEither(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/do")
	callerGone := errors.New("client went away")

	t.Run("caller", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		err := m.Do(ctx, func(ctx context.Context) error {
			again, err := m.Acquire(ctx)
			require.NoError(t, err, "re-entry with fn's context")
			require.NoError(t, m.Release(again))
			cancel(callerGone)
			waitDone(t, ctx, 5*time.Second)
			assert.ErrorIs(t, context.Cause(ctx), callerGone)
			return nil
		})
		require.NoError(t, err, "the hold itself stood: Release succeeds")
	})
	t.Run("hold", func(t *testing.T) {
		err := m.Do(context.Background(), func(ctx context.Context) error {
			p := m.LockPath(ctx)
			require.NotEmpty(t, p)
			require.NoError(t, e.admin.Delete(p, -1))
			waitDone(t, ctx, 10*time.Second)
			assert.ErrorIs(t, context.Cause(ctx), zklock.ErrLockLost)
			return nil
		})
		require.ErrorIs(t, err, zklock.ErrLockLost)
	})
}

// Token asked with the hold's own context while the hold ends always
// reports the hold's end (ErrNotHeld after a release), never the context's
// cancellation in its place. The hold's first watch is held back, so that
// Token waits for the token while the hold ends.
func TestIntegration_TokenOfAnEndingHoldIsDeterministic(t *testing.T) {
	t.Parallel()
	e := setup(t)
	g := &getWHook{}
	c := e.client(zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
		g.ZKConn = real
		return g
	}))
	m := e.mutex(c, "/tok")
	for range 30 {
		gate := make(chan struct{})
		g.mu.Lock()
		g.hook = func(p string) {
			if path.Base(path.Dir(p)) == "tok" {
				<-gate
			}
		}
		g.mu.Unlock()
		held, err := m.Acquire(context.Background())
		require.NoError(t, err)
		got, started := make(chan error, 1), make(chan struct{})
		go func() {
			close(started)
			_, err := m.Token(held)
			got <- err
		}()
		<-started // Token and Release now race, as in a program
		require.NoError(t, m.Release(held))
		err = await(t, got, 10*time.Second)
		close(gate)
		require.ErrorIs(t, err, zklock.ErrNotHeld)
		require.NotErrorIs(t, err, context.Canceled)
	}
}

// The first watch on a node granted at once (set by its hold, after the
// grant) fails on a connection loss. With no retries allowed and
// SessionPolicy, the hold must ride out the blip, as a hold granted after
// waiting does: whether a disconnect ends a hold is the error policy's
// call, not the retry policy's.
func TestIntegration_FirstWatchRidesOutABlip(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	g := &getWHook{}
	c := e.client(
		zklock.WithErrorPolicy(zklock.SessionPolicy),
		zklock.WithRetryPolicy(zklock.RetryNTimes{N: 0}),
		zklock.WithDialer(faults.Dial),
		zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
			g.ZKConn = real
			return &blipOnce{getWHook: g, cut: faults.Cut}
		}),
	)
	m := e.mutex(c, "/blip")
	hd, err := m.Lock(context.Background())
	require.NoError(t, err)
	tok, err := hd.Token() // waits for the first watch, which rides out the cut
	require.NoError(t, err, "the hold survived the blip")
	assert.NotZero(t, tok)
	require.NoError(t, hd.Err())
	require.NoError(t, hd.Release())
}

// blipOnce fails the first GetW of a lock node with a connection loss,
// cutting the connection as it does so.
type blipOnce struct {
	*getWHook
	cut  func()
	once sync.Once
}

func (b *blipOnce) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	cut := false
	if path.Base(path.Dir(p)) == "blip" {
		b.once.Do(func() { cut = true })
	}
	if cut {
		b.cut()
		return nil, nil, nil, zk.ErrConnectionClosed
	}
	return b.getWHook.GetW(ctx, p)
}
