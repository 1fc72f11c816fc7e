package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
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

func TestIntegration_MutexReentrantThreeLevels(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/reentrant")
	other := e.mutex(e.client(), "/reentrant")
	bg := context.Background()

	l1, err := m.Acquire(bg)
	require.NoError(t, err)
	l2, err := m.Acquire(l1)
	require.NoError(t, err)
	l3, err := m.TryAcquire(l2)
	require.NoError(t, err)
	assert.Len(t, e.children(e.root+"/reentrant"), 1, "re-entry creates no node")
	assert.Equal(t, m.LockPath(l1), m.LockPath(l3))

	for i, ctx := range []context.Context{l3, l2} {
		require.NoError(t, m.Release(ctx), "release %d", i)
		assert.True(t, m.IsOwnedBy(l1), "still held after %d releases", i+1)
		_, err := other.TryAcquire(bg)
		require.ErrorIs(t, err, zklock.ErrLocked)
	}
	require.NoError(t, m.Release(l1))
	assert.False(t, m.IsOwnedBy(l1))
	assert.False(t, m.IsAcquiredInThisProcess())
	assert.ErrorIs(t, context.Cause(l1), zklock.ErrReleased)
	require.ErrorIs(t, m.Release(l1), zklock.ErrNotHeld, "one Release per Acquire")

	h, err := other.TryAcquire(bg)
	require.NoError(t, err, "free after the third release")
	require.NoError(t, other.Release(h))
}

func TestIntegration_MutexGoroutinesShareOneMutex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/shared")
	var inside, most, entries atomic.Int32
	errs := make(chan error, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				err := m.Do(context.Background(), func(ctx context.Context) error {
					n := inside.Add(1)
					defer inside.Add(-1)
					for {
						old := most.Load()
						if n <= old || most.CompareAndSwap(old, n) {
							break
						}
					}
					entries.Add(1)
					time.Sleep(time.Millisecond) // widen the window for an overlap
					return nil
				})
				if err != nil {
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
	assert.EqualValues(t, 1, most.Load(), "at most one goroutine inside")
	assert.EqualValues(t, 50, entries.Load())
}

func TestIntegration_MutexTwoSessions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m1 := e.mutex(e.client(), "/two")
	m2 := e.mutex(e.client(), "/two")
	bg := context.Background()

	h1, err := m1.Acquire(bg)
	require.NoError(t, err)
	assert.True(t, m1.IsAcquiredInThisProcess())
	assert.False(t, m2.IsAcquiredInThisProcess())
	_, err = m2.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	assert.Contains(t, err.Error(), e.root+"/two", "error names the path")

	got := acquireAsync(bg, m2)
	parts := waitParticipants(t, m1, 2)
	assert.Equal(t, m1.LockPath(h1), parts[0], "holder first, FIFO")
	select {
	case a := <-got:
		t.Fatalf("second session acquired while the first holds: %v", a.err)
	default:
	}
	require.NoError(t, m1.Release(h1))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.True(t, m2.IsOwnedBy(a.ctx))
	assert.Equal(t, []string{m2.LockPath(a.ctx)}, waitParticipants(t, m2, 1))
	require.NoError(t, m2.Release(a.ctx))
}

func TestIntegration_MutexNodeFormat(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/format")
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)
	defer m.Release(h)
	name := path.Base(m.LockPath(h))
	assert.True(t, zklock.IsProtected(name), name)
	assert.Regexp(t, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`, name)
	assert.Equal(t, e.root+"/format", m.Path())

	// Parents are containers; the lock node is ephemeral.
	_, st, err := e.admin.Exists(m.LockPath(h))
	require.NoError(t, err)
	assert.NotZero(t, st.EphemeralOwner)
	data, _, err := e.admin.Get(m.LockPath(h))
	require.NoError(t, err)
	assert.NotEmpty(t, data, "default node data is the host address")
}

func TestIntegration_MutexReleaseErrors(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/release")
	bg := context.Background()
	require.ErrorIs(t, m.Release(bg), zklock.ErrNotHeld)
	_, err := m.Token(bg)
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	_, err = m.CheckOp(bg)
	require.ErrorIs(t, err, zklock.ErrNotHeld)
	assert.Empty(t, m.LockPath(bg))
	assert.False(t, m.IsOwnedBy(bg))

	// A hold of another Mutex on the same path is not a hold of m.
	other := e.mutex(e.client(), "/release")
	h, err := other.Acquire(bg)
	require.NoError(t, err)
	require.ErrorIs(t, m.Release(h), zklock.ErrNotHeld)
	require.NoError(t, other.Release(h))
}

func TestIntegration_MutexDo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/do")
	boom := errors.New("boom")
	err := m.Do(context.Background(), func(ctx context.Context) error {
		assert.True(t, m.IsOwnedBy(ctx))
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.False(t, m.IsAcquiredInThisProcess(), "released after fn failed")
	require.NoError(t, m.Do(context.Background(), func(context.Context) error { return nil }))
}

// A hold lost while Do's fn runs cancels fn's context, and Do reports both
// fn's error and the loss.
func TestIntegration_DoReportsLoss(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/do-lost")
	err := m.Do(context.Background(), func(ctx context.Context) error {
		require.NoError(t, e.admin.Delete(m.LockPath(ctx), -1))
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, zklock.ErrLockLost)
}

// Do releases when fn panics, and the panic goes on.
func TestIntegration_DoReleasesOnPanic(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/do-panic")
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		_ = m.Do(context.Background(), func(context.Context) error { panic("boom") })
	}()
	assert.False(t, m.IsAcquiredInThisProcess())
	other := e.mutex(e.client(), "/do-panic")
	h, err := other.TryAcquire(context.Background())
	require.NoError(t, err, "the lock is free after the panic")
	require.NoError(t, other.Release(h))
}

func TestIntegration_MutexFencing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m1 := e.mutex(e.client(), "/fence")
	m2 := e.mutex(e.client(), "/fence")
	bg := context.Background()
	e.create(e.root + "/data")

	var last int64
	for i := range 4 {
		m := []*zklock.Mutex{m1, m2}[i%2]
		h, err := m.Acquire(bg)
		require.NoError(t, err)
		tok, err := m.Token(h)
		require.NoError(t, err)
		assert.Greater(t, tok, last, "tokens increase from holder to holder")
		last = tok

		op, err := m.CheckOp(h)
		require.NoError(t, err)
		_, err = e.admin.Multi(op, &zk.SetDataRequest{Path: e.root + "/data", Data: []byte(fmt.Sprint(tok)), Version: -1})
		require.NoError(t, err, "guarded write while held")
		require.NoError(t, m.Release(h))
		_, err = e.admin.Multi(op, &zk.SetDataRequest{Path: e.root + "/data", Data: []byte("stale"), Version: -1})
		require.Error(t, err, "guarded write after release")
	}
	data, _, err := e.admin.Get(e.root + "/data")
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(last), string(data))
}

func TestIntegration_BadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bg := context.Background()
	mutex := func(p string, opts ...zklock.LockOption) error {
		_, err := zklock.NewMutex(c, p, opts...)
		return err
	}
	connect := func(servers []string, opts ...zklock.Option) error {
		c, err := zklock.Connect(servers, opts...)
		if err == nil {
			c.Close()
		}
		return err
	}
	m := e.mutex(c, "/bad")
	closed, err := zklock.Connect(e.servers)
	require.NoError(t, err)
	closedMutex, err := zklock.NewMutex(closed, "/x")
	require.NoError(t, err)
	closed.Close()

	tests := []struct {
		name     string
		err      error
		wantErr  error
		wantText string
	}{
		{"nil client", func() error { _, err := zklock.NewMutex(nil, "/a"); return err }(), zklock.ErrInvalidArgument, "/a"},
		{"empty path", mutex(""), zklock.ErrInvalidPath, `""`},
		{"relative path", mutex("a/b"), zklock.ErrInvalidPath, "a/b"},
		{"trailing slash", mutex("/a/"), zklock.ErrInvalidPath, "/a/"},
		{"empty segment", mutex("/a//b"), zklock.ErrInvalidPath, "/a//b"},
		{"dot segment", mutex("/a/./b"), zklock.ErrInvalidPath, "/a/./b"},
		{"dot-dot segment", mutex("/a/../b"), zklock.ErrInvalidPath, "/a/../b"},
		{"null character", mutex("/a\x00b"), zklock.ErrInvalidPath, "null"},
		{"control character", mutex("/a\x01"), zklock.ErrInvalidPath, "U+0001"},
		{"delete character", mutex("/a\x7f"), zklock.ErrInvalidPath, "U+007F"},
		{"C1 control", mutex("/a\u0085"), zklock.ErrInvalidPath, "U+0085"},
		{"private use", mutex("/a\ue000"), zklock.ErrInvalidPath, "U+E000"},
		{"specials", mutex("/a\ufff5"), zklock.ErrInvalidPath, "U+FFF5"},
		{"invalid UTF-8", mutex("/a\xff"), zklock.ErrInvalidPath, "UTF-8"},
		{"reserved subtree", mutex("/zookeeper/x"), zklock.ErrInvalidPath, "/zookeeper/x"},
		{"beyond the BMP", mutex("/a\U0001F600"), zklock.ErrInvalidPath, "U+1F600"},
		{"participants nil context", func() error { _, err := m.Participants(nil); return err }(), zklock.ErrInvalidArgument, "/bad"}, //nolint:staticcheck // nil ctx on purpose
		{"revoke nil context", zklock.Revoke(nil, c, "/a"), zklock.ErrInvalidArgument, "/a"},                                          //nolint:staticcheck // nil ctx on purpose
		{"nil zk option", connect(e.servers, zklock.WithZKOptions(nil)), zklock.ErrInvalidArgument, "zk option"},
		{"oversized lock data", mutex("/a", zklock.WithLockData(make([]byte, 2<<20))), zklock.ErrInvalidArgument, "/a"},
		{"nil driver", mutex("/a", zklock.WithDriver(nil)), zklock.ErrInvalidArgument, "/a"},
		{"nil lock option", mutex("/a", nil), zklock.ErrInvalidArgument, "/a"},
		{"no servers", connect(nil), zklock.ErrInvalidArgument, "server"},
		{"negative session timeout", connect(e.servers, zklock.WithSessionTimeout(-time.Second)), zklock.ErrInvalidArgument, "session timeout"},
		{"zero connect timeout", connect(e.servers, zklock.WithConnectTimeout(0)), zklock.ErrInvalidArgument, "connect timeout"},
		{"nil retry policy", connect(e.servers, zklock.WithRetryPolicy(nil)), zklock.ErrInvalidArgument, "retry"},
		{"bad namespace", connect(e.servers, zklock.WithNamespace("a//b")), zklock.ErrInvalidArgument, "a//b"},
		{"unknown error policy", connect(e.servers, zklock.WithErrorPolicy(7)), zklock.ErrInvalidArgument, "policy"},
		{"nil ACL provider", connect(e.servers, zklock.WithACL(nil)), zklock.ErrInvalidArgument, "ACL"},
		{"nil option", connect(e.servers, nil), zklock.ErrInvalidArgument, "Option"},
		{"NewClient without conn", mutex2(zklock.NewClient(nil, nil), "/a"), zklock.ErrInvalidArgument, "nil conn"},
		{"release without hold", m.Release(bg), zklock.ErrNotHeld, "/bad"},
		{"token without hold", func() error { _, err := m.Token(bg); return err }(), zklock.ErrNotHeld, "/bad"},
		{"nil context", func() error { _, err := m.Acquire(nil); return err }(), zklock.ErrInvalidArgument, "/bad"}, //nolint:staticcheck // nil ctx on purpose
		{"revoke bad path", zklock.Revoke(bg, c, "no-slash"), zklock.ErrInvalidPath, "no-slash"},
		{"revoke nil client", zklock.Revoke(bg, nil, "/a"), zklock.ErrInvalidArgument, "/a"},
		{"acquire on closed client", func() error { _, err := closedMutex.Acquire(bg); return err }(), zklock.ErrClosed, "/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.err, tt.wantErr)
			assert.Contains(t, tt.err.Error(), tt.wantText)
			assert.True(t, strings.HasPrefix(tt.err.Error(), "zklock: "), "prefixed: %v", tt.err)
		})
	}
}

func mutex2(c *zklock.Client, p string) error {
	_, err := zklock.NewMutex(c, p)
	return err
}
