package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"path"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// badCase is one row of TestIntegration_BadInputTable: bad input or a
// misuse, run in a namespace of its own.
type badCase struct {
	name string
	want []error // the error must wrap every one of these; nil: the call must succeed
	text string  // the error message must contain this, such as the path; "" for none
	run  func(t *testing.T, k *badEnv) error
}

// badEnv is one case's slice of the server: a namespace of its own, and
// the nodes the case created behind the library's back.
type badEnv struct {
	*env
	ns   string // the case's namespace, without the leading "/"
	root string // full ZooKeeper path of the namespace

	mu      sync.Mutex
	foreign []string // guarded by mu; full paths of nodes made with admin, deleted after the case
}

// client connects a Client in the case's namespace.
func (k *badEnv) client(opts ...zklock.Option) *zklock.Client {
	return k.env.client(append([]zklock.Option{zklock.WithNamespace(k.ns)}, opts...)...)
}

// mutex makes a Mutex at p in the case's namespace.
func (k *badEnv) mutex(c *zklock.Client, p string) *zklock.Mutex {
	m, err := zklock.NewMutex(c, p)
	require.NoError(k.t, err)
	return m
}

// semaphore makes a Semaphore at p in the case's namespace.
func (k *badEnv) semaphore(c *zklock.Client, p string, maxLeases int) *zklock.Semaphore {
	s, err := zklock.NewSemaphore(c, p, maxLeases)
	require.NoError(k.t, err)
	return s
}

// plant creates a node at rel (in the namespace) with a raw connection, as
// a foreign process would, with missing parents as containers. The node is
// deleted after the case, before the check for leftovers.
func (k *badEnv) plant(t *testing.T, conn *zk.Conn, rel string, flags int32) {
	t.Helper()
	full := k.root + rel
	for i := 1; i < len(full); i++ {
		if full[i] == '/' {
			_, err := k.admin.CreateContainer(full[:i], nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
			if !errors.Is(err, zk.ErrNodeExists) {
				require.NoError(t, err, full[:i])
			}
		}
	}
	_, err := conn.Create(full, nil, flags, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, full)
	k.mu.Lock()
	k.foreign = append(k.foreign, full)
	k.mu.Unlock()
}

// leftovers lists the nodes under root that a case left behind: ephemeral
// nodes (lock and lease nodes), and nodes with data. The parents the
// library creates are empty containers, which ZooKeeper reaps; it reports
// them with no ephemeral owner, like persistent nodes.
func leftovers(conn *zk.Conn, root string) ([]string, error) {
	var out []string
	var walk func(p string) error
	walk = func(p string) error {
		ok, st, err := conn.Exists(p)
		if err != nil || !ok {
			return err
		}
		if st.EphemeralOwner != 0 || st.DataLength > 0 {
			out = append(out, p)
		}
		children, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		for _, ch := range children {
			if err := walk(path.Join(p, ch)); err != nil {
				return err
			}
		}
		return err
	}
	return out, walk(root)
}

// Bad input and misuse get an error that wraps the right sentinel (or the
// context's error and cause) and names the path, never a panic, never a
// silent success, and leave no node behind. The few rows with no error
// are documented successes: a lock path with foreign children still
// works, and revoking a node that is already gone is not an error.
func TestIntegration_BadInputTable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var cases []badCase
	for _, group := range [][]badCase{
		badPathCases(), badClientCases(e), badContextCases(), badWaitCases(), badSemaphoreCases(),
		badMultiCases(), badReleaseCases(), badForeignCases(), badOptionCases(e),
	} {
		cases = append(cases, group...)
	}
	require.GreaterOrEqual(t, len(cases), 35)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := &badEnv{env: e, ns: strings.TrimPrefix(e.root, "/") + "/" + unsafeChars.ReplaceAllString(tc.name, "_")}
			k.root = "/" + k.ns
			var err error
			if noPanic(t, tc.name, func() { err = tc.run(t, k) }) {
				checkBadResult(t, tc, err)
			}
			k.mu.Lock()
			for _, p := range k.foreign {
				if err := k.admin.Delete(p, -1); !errors.Is(err, zk.ErrNoNode) {
					assert.NoError(t, err, "delete %s", p)
				}
			}
			k.mu.Unlock()
			var (
				left    []string
				walkErr error
			)
			assert.Eventually(t, func() bool {
				left, walkErr = leftovers(e.admin, k.root)
				return walkErr == nil && len(left) == 0
			}, 10*time.Second, 20*time.Millisecond, "nodes left behind")
			assert.NoError(t, walkErr)
			assert.Empty(t, left, "nodes left behind")
		})
	}
}

// checkBadResult checks a case's error against what the case wants.
func checkBadResult(t *testing.T, tc badCase, err error) {
	t.Helper()
	if tc.want == nil {
		assert.NoError(t, err)
		return
	}
	if !assert.Error(t, err, "bad input must be refused") {
		return
	}
	for _, w := range tc.want {
		assert.ErrorIs(t, err, w)
	}
	assert.True(t, isOneOf(err, append(sentinels, zklock.ErrLocked, zklock.ErrLockUpgrade, zklock.ErrNotReentrant, zk.ErrNoServer,
		context.Canceled, context.DeadlineExceeded)...), "error wraps no sentinel: %v", err)
	assert.Contains(t, err.Error(), tc.text, "the error must name the path")
}

var errCause = errors.New("the caller's own reason")

// badPathCases are malformed paths given to every recipe and to Revoke.
func badPathCases() []badCase {
	newMutex := func(p string) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			m, err := zklock.NewMutex(k.client(), p)
			if err == nil {
				// Accepted: show where it leads.
				if h, aerr := m.TryAcquire(context.Background()); aerr == nil {
					assert.NoError(t, m.Release(h))
				}
			}
			return err
		}
	}
	cases := []badCase{}
	for _, p := range []struct{ name, path, text string }{
		{"path-empty", "", `""`}, {"path-relative", "locks/a", `"locks/a"`}, {"path-root", "/", `"/"`},
		{"path-trailing-slash", "/a/", `"/a/"`}, {"path-double-slash", "/a//b", `"/a//b"`},
		{"path-dot", "/a/./b", `"/a/./b"`}, {"path-dotdot", "/a/../b", `"/a/../b"`},
		{"path-dotdot-escape", "/../../x", `"/../../x"`}, {"path-NUL", "/a\x00b", `"/a\x00b"`},
		{"path-zookeeper", "/zookeeper/quota", `"/zookeeper/quota"`},
		{"path-over-1MB", "/" + strings.Repeat("a", 2<<20), `"/aaaa`},
	} {
		cases = append(cases, badCase{p.name, []error{zklock.ErrInvalidPath}, p.text, newMutex(p.path)})
	}
	return append(cases,
		badCase{"rwlock-path-dotdot", []error{zklock.ErrInvalidPath}, `"/a/.."`, func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewReadWriteLock(k.client(), "/a/..")
			return err
		}},
		badCase{"semaphore-path-empty", []error{zklock.ErrInvalidPath}, `""`, func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewSemaphore(k.client(), "", 1)
			return err
		}},
		badCase{"semaphore-mutex-path-root", []error{zklock.ErrInvalidPath}, `"/"`, func(t *testing.T, k *badEnv) error {
			m, err := zklock.NewSemaphoreMutex(k.client(), "/")
			if err == nil {
				if h, aerr := m.TryAcquire(context.Background()); aerr == nil {
					assert.NoError(t, m.Release(h))
				}
			}
			return err
		}},
		badCase{"multi-paths-one-bad", []error{zklock.ErrInvalidPath}, `"/b/"`, func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewMultiLockPaths(k.client(), "/a", "/b/")
			return err
		}},
		badCase{"revoke-path-dotdot", []error{zklock.ErrInvalidPath}, `"/a/../b"`, func(t *testing.T, k *badEnv) error {
			return zklock.Revoke(context.Background(), k.client(), "/a/../b")
		}},
		badCase{"revoke-path-root", []error{zklock.ErrInvalidPath}, `"/"`, func(t *testing.T, k *badEnv) error {
			return zklock.Revoke(context.Background(), k.client(), "/")
		}},
	)
}

// badClientCases are nil and closed Clients.
func badClientCases(e *env) []badCase {
	bg := context.Background()
	closed := func(k *badEnv) *zklock.Client {
		c := k.client()
		require.NoError(k.t, c.Close())
		return c
	}
	return []badCase{
		{"client-nil-mutex", []error{zklock.ErrInvalidArgument}, "/a", func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewMutex(nil, "/a")
			return err
		}},
		{"client-nil-semaphore", []error{zklock.ErrInvalidArgument}, "/s", func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewSemaphore(nil, "/s", 2)
			return err
		}},
		{"client-closed-acquire", []error{zklock.ErrClosed}, "/a", func(t *testing.T, k *badEnv) error {
			_, err := k.mutex(closed(k), "/a").Acquire(bg)
			return err
		}},
		{"client-closed-semaphore", []error{zklock.ErrClosed}, "/s", func(t *testing.T, k *badEnv) error {
			_, err := k.semaphore(closed(k), "/s", 2).AcquireN(bg, 2)
			return err
		}},
		{"client-closed-participants", []error{zklock.ErrClosed}, "/a", func(t *testing.T, k *badEnv) error {
			_, err := k.mutex(closed(k), "/a").Participants(bg)
			return err
		}},
		{"client-closed-revoke", []error{zklock.ErrClosed}, "/a/n", func(t *testing.T, k *badEnv) error {
			return zklock.Revoke(bg, closed(k), "/a/n")
		}},
		{"client-closed-while-waiting", []error{zklock.ErrClosed}, "/a", func(t *testing.T, k *badEnv) error {
			holder := k.mutex(k.client(), "/a")
			h, err := holder.Acquire(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, holder.Release(h)) }()
			c := k.client()
			m := k.mutex(c, "/a")
			got := acquireAsync(bg, m)
			waitParticipants(t, holder, 2)
			require.NoError(t, c.Close())
			return await(t, got, 10*time.Second).err
		}},
	}
}

// badContextCases are nil, cancelled and expiring contexts, with and
// without a cause.
func badContextCases() []badCase {
	bg := context.Background()
	var nilCtx context.Context
	cancelled := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(bg)
		cancel(cause)
		return ctx
	}
	return []badCase{
		{"ctx-nil-acquire", []error{zklock.ErrInvalidArgument}, "/a", func(t *testing.T, k *badEnv) error {
			_, err := k.mutex(k.client(), "/a").Acquire(nilCtx)
			return err
		}},
		{"ctx-nil-acquireN", []error{zklock.ErrInvalidArgument}, "/s", func(t *testing.T, k *badEnv) error {
			_, err := k.semaphore(k.client(), "/s", 2).AcquireN(nilCtx, 1)
			return err
		}},
		{"ctx-nil-revoke", []error{zklock.ErrInvalidArgument}, "/a/n", func(t *testing.T, k *badEnv) error {
			return zklock.Revoke(nilCtx, k.client(), "/a/n")
		}},
		{"ctx-nil-lease-data", []error{zklock.ErrInvalidArgument}, "/s/leases/", func(t *testing.T, k *badEnv) error {
			l, err := k.semaphore(k.client(), "/s", 1).Acquire(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, l.Release()) }()
			_, err = l.Data(nilCtx)
			return err
		}},
		{"ctx-cancelled-acquire", []error{context.Canceled}, "/a", func(t *testing.T, k *badEnv) error {
			_, err := k.mutex(k.client(), "/a").Acquire(cancelled(nil))
			return err
		}},
		{"ctx-cancelled-semaphore", []error{context.Canceled}, "/s", func(t *testing.T, k *badEnv) error {
			_, err := k.semaphore(k.client(), "/s", 1).Acquire(cancelled(nil))
			return err
		}},
		{"ctx-cancelled-revoke", []error{context.Canceled}, "/a/n", func(t *testing.T, k *badEnv) error {
			return zklock.Revoke(cancelled(nil), k.client(), "/a/n")
		}},
		{"ctx-cause-tryacquire", []error{context.Canceled, errCause}, "/a", func(t *testing.T, k *badEnv) error {
			_, err := k.mutex(k.client(), "/a").TryAcquire(cancelled(errCause))
			return err
		}},
	}
}

// badWaitCases are contexts that end while the call waits, with a cause.
func badWaitCases() []badCase {
	bg := context.Background()
	return []badCase{
		{"ctx-cause-deadline-while-waiting", []error{context.DeadlineExceeded, errCause}, "/a", func(t *testing.T, k *badEnv) error {
			holder := k.mutex(k.client(), "/a")
			h, err := holder.Acquire(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, holder.Release(h)) }()
			ctx, cancel := context.WithTimeoutCause(bg, 300*time.Millisecond, errCause)
			defer cancel()
			_, err = k.mutex(k.client(), "/a").Acquire(ctx)
			return err
		}},
		{"ctx-cause-semaphore-while-waiting", []error{context.Canceled, errCause}, "/s", func(t *testing.T, k *badEnv) error {
			s := k.semaphore(k.client(), "/s", 1)
			l, err := s.Acquire(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, l.Release()) }()
			ctx, cancel := context.WithCancelCause(bg)
			got := leaseAsync(ctx, k.semaphore(k.client(), "/s", 1))
			waitChildren(t, k.env, k.root+"/s/leases", 2) // the waiter's lease is queued
			cancel(errCause)
			return await(t, got, 10*time.Second).err
		}},
	}
}

// badSemaphoreCases are lease counts out of range and leases misused.
func badSemaphoreCases() []badCase {
	bg := context.Background()
	newSem := func(n int) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			s, err := zklock.NewSemaphore(k.client(), "/s", n)
			if err == nil {
				l, aerr := s.Acquire(bg)
				require.NoError(t, aerr)
				assert.NoError(t, l.Release())
			}
			return err
		}
	}
	acquireN := func(n int) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			leases, err := k.semaphore(k.client(), "/s", 2).AcquireN(bg, n)
			assert.Nil(t, leases)
			return err
		}
	}
	return []badCase{
		{"maxLeases-zero", []error{zklock.ErrInvalidArgument}, "/s", newSem(0)},
		{"maxLeases-negative", []error{zklock.ErrInvalidArgument}, "/s", newSem(-3)},
		{"maxLeases-huge", []error{zklock.ErrInvalidArgument}, "/s", newSem(math.MaxInt)},
		{"acquireN-zero", []error{zklock.ErrInvalidArgument}, "/s", acquireN(0)},
		{"acquireN-negative", []error{zklock.ErrInvalidArgument}, "/s", acquireN(-1)},
		{"acquireN-over-maxLeases", []error{zklock.ErrInvalidArgument}, "/s", acquireN(3)},
		{"lease-released-twice-then-data", []error{zklock.ErrNotHeld}, "/s/leases/", func(t *testing.T, k *badEnv) error {
			l, err := k.semaphore(k.client(), "/s", 1).Acquire(bg)
			require.NoError(t, err)
			require.NoError(t, l.Release())
			require.ErrorIs(t, l.Release(), zklock.ErrNotHeld, "a lease is released once, as every Hold")
			_, err = l.Data(bg)
			return err
		}},
		{"semaphore-mutex-released-twice", []error{zklock.ErrNotHeld}, "/sm", func(t *testing.T, k *badEnv) error {
			m, err := zklock.NewSemaphoreMutex(k.client(), "/sm")
			require.NoError(t, err)
			h, err := m.Acquire(bg)
			require.NoError(t, err)
			require.NoError(t, m.Release(h))
			return m.Release(h)
		}},
		{"semaphore-mutex-reentered", []error{zklock.ErrNotReentrant}, "/sm", func(t *testing.T, k *badEnv) error {
			m, err := zklock.NewSemaphoreMutex(k.client(), "/sm")
			require.NoError(t, err)
			h, err := m.Acquire(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, m.Release(h)) }()
			_, err = m.Acquire(h)
			return err
		}},
	}
}

// badMultiCases are MultiLocks with no, nil or repeated members.
func badMultiCases() []badCase {
	bg := context.Background()
	// multi acquires a MultiLock over "/a" and members, with a deadline
	// so that a deadlock shows as one.
	multi := func(members func(k *badEnv, c *zklock.Client, first *zklock.Mutex) []zklock.Locker) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			c := k.client()
			first := k.mutex(c, "/a")
			ml := zklock.NewMultiLock(append([]zklock.Locker{first}, members(k, c, first)...)...)
			ctx, cancel := context.WithTimeout(bg, 3*time.Second)
			defer cancel()
			if h, err := ml.Acquire(ctx); err != nil || !assert.NoError(t, ml.Release(h)) {
				assert.False(t, first.IsAcquiredInThisProcess(), "the member taken must be released")
				return err
			}
			return nil
		}
	}
	var nilMutex *zklock.Mutex
	return []badCase{
		{"multi-no-members", []error{zklock.ErrInvalidArgument}, "no members", func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewMultiLock().Acquire(bg)
			return err
		}},
		{"multi-paths-none", []error{zklock.ErrInvalidArgument}, "no paths", func(t *testing.T, k *badEnv) error {
			_, err := zklock.NewMultiLockPaths(k.client())
			return err
		}},
		{"multi-nil-member", []error{zklock.ErrInvalidArgument}, "lock 2 of 2", multi(func(*badEnv, *zklock.Client, *zklock.Mutex) []zklock.Locker {
			return []zklock.Locker{nil}
		})},
		{"multi-typed-nil-member", []error{zklock.ErrInvalidArgument}, "lock 2 of 2", multi(func(*badEnv, *zklock.Client, *zklock.Mutex) []zklock.Locker {
			return []zklock.Locker{nilMutex}
		})},
		{"multi-same-mutex-twice", []error{zklock.ErrInvalidArgument}, "/a", multi(func(_ *badEnv, _ *zklock.Client, first *zklock.Mutex) []zklock.Locker {
			return []zklock.Locker{first}
		})},
		{"multi-same-path-twice", []error{zklock.ErrInvalidArgument}, "/a", multi(func(k *badEnv, c *zklock.Client, _ *zklock.Mutex) []zklock.Locker {
			return []zklock.Locker{k.mutex(c, "/b"), k.mutex(c, "/a")}
		})},
		// Documented: NewMultiLockPaths locks a repeated path once.
		{"multi-paths-same-path-twice", nil, "", func(t *testing.T, k *badEnv) error {
			ml, err := zklock.NewMultiLockPaths(k.client(), "/a", "/b", "/a")
			if err == nil {
				h, aerr := ml.Acquire(bg)
				require.NoError(t, aerr)
				assert.NoError(t, ml.Release(h))
			}
			return err
		}},
		{"multi-released-twice", []error{zklock.ErrNotHeld}, "multi-lock", func(t *testing.T, k *badEnv) error {
			ml, err := zklock.NewMultiLockPaths(k.client(), "/a", "/b")
			require.NoError(t, err)
			h, err := ml.Acquire(bg)
			require.NoError(t, err)
			require.NoError(t, ml.Release(h))
			return ml.Release(h)
		}},
	}
}

// badReleaseCases are releases of holds that are not there, misused
// holds, and revocations of nodes that are not lock nodes.
func badReleaseCases() []badCase {
	bg := context.Background()
	held := func(t *testing.T, k *badEnv, p string) (*zklock.Mutex, context.Context) {
		m := k.mutex(k.client(), p)
		h, err := m.Acquire(bg)
		require.NoError(t, err)
		return m, h
	}
	return []badCase{
		{"mutex-released-twice", []error{zklock.ErrNotHeld}, "/a", func(t *testing.T, k *badEnv) error {
			m, h := held(t, k, "/a")
			require.NoError(t, m.Release(h))
			return m.Release(h)
		}},
		{"mutex-release-foreign-ctx", []error{zklock.ErrNotHeld}, "/a", func(t *testing.T, k *badEnv) error {
			m, h := held(t, k, "/a")
			defer func() { assert.NoError(t, m.Release(h)) }()
			return m.Release(bg)
		}},
		{"mutex-release-other-lock-ctx", []error{zklock.ErrNotHeld}, "/b", func(t *testing.T, k *badEnv) error {
			m, h := held(t, k, "/a")
			defer func() { assert.NoError(t, m.Release(h)) }()
			return k.mutex(k.client(), "/b").Release(h)
		}},
		{"mutex-token-foreign-ctx", []error{zklock.ErrNotHeld}, "/a", func(t *testing.T, k *badEnv) error {
			m, h := held(t, k, "/a")
			defer func() { assert.NoError(t, m.Release(h)) }()
			_, err := m.Token(bg)
			return err
		}},
		{"rwlock-upgrade", []error{zklock.ErrLockUpgrade}, "/rw", func(t *testing.T, k *badEnv) error {
			rw, err := zklock.NewReadWriteLock(k.client(), "/rw")
			require.NoError(t, err)
			h, err := rw.ReadLock().Acquire(bg)
			require.NoError(t, err)
			defer func() { assert.NoError(t, rw.ReadLock().Release(h)) }()
			_, err = rw.WriteLock().Acquire(h)
			return err
		}},
		{"revoke-missing-node", nil, "", func(t *testing.T, k *badEnv) error {
			m, h := held(t, k, "/a")
			node := m.LockPath(h)
			require.NoError(t, m.Release(h))
			return zklock.Revoke(bg, k.client(), node) // released meanwhile: not an error, as in Curator
		}},
		{"revoke-lock-path-not-node", []error{zklock.ErrInvalidArgument}, "/a", func(t *testing.T, k *badEnv) error {
			m, h := held(t, k, "/a")
			defer func() { assert.NoError(t, m.Release(h)) }()
			err := zklock.Revoke(bg, k.client(), "/a")
			data, _, gerr := k.admin.Get(k.root + "/a")
			require.NoError(t, gerr)
			assert.Empty(t, data, "the lock's parent must not be written")
			return err
		}},
		{"revoke-foreign-persistent-node", []error{zklock.ErrInvalidArgument}, "/a/lock-0000000001", func(t *testing.T, k *badEnv) error {
			k.plant(t, k.admin, "/a/lock-0000000001", 0)
			return zklock.Revoke(bg, k.client(), "/a/lock-0000000001")
		}},
	}
}

// badForeignCases put nodes that are not ours under a lock path. Locks
// order children as Curator does, by the text after the last "lock-", so
// that a Go and a Java participant agree: a foreign node that sorts before
// ours acts as a holder (TryAcquire gets ErrLocked, Acquire waits for its
// deletion or ctx), one that sorts after is ignored. Nothing hangs past
// ctx, nothing panics.
func badForeignCases() []badCase {
	bg := context.Background()
	works := func(foreign string) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			k.plant(t, k.admin, "/f/"+foreign, 0)
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			return k.mutex(k.client(), "/f").Do(ctx, func(context.Context) error { return nil })
		}
	}
	blocks := func(foreign string, try bool) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			k.plant(t, k.admin, "/f/"+foreign, 0)
			m := k.mutex(k.client(), "/f")
			if try {
				_, err := m.TryAcquire(bg)
				return err
			}
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			_, err := m.Acquire(ctx)
			return err
		}
	}
	return []badCase{
		{"foreign-garbage", nil, "", works("garbage")},
		{"foreign-seq-max", nil, "", works("lock-2147483647")},
		{"foreign-seq-text", nil, "", works("lock-abc")},
		{"foreign-no-seq-try", []error{zklock.ErrLocked}, "/f", blocks("lock-", true)},
		{"foreign-no-seq-deadline", []error{context.DeadlineExceeded}, "/f", blocks("lock-", false)},
		{"foreign-seq-zero-protected", []error{zklock.ErrLocked}, "/f", blocks("_c_00000000-0000-4000-8000-000000000000-lock-0000000000", true)},
		{"foreign-seq-wrapped-negative", nil, "", func(t *testing.T, k *badEnv) error {
			// After 2147483647 ZooKeeper's counter wraps to -2147483648,
			// which sorts first: it holds until its session ends.
			raw := zktest.ConnectT(t, k.servers)
			k.plant(t, raw, "/f/lock--2147483648", zk.FlagEphemeral)
			m := k.mutex(k.client(), "/f")
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			got := acquireAsync(ctx, m)
			waitParticipants(t, m, 2)
			raw.Close()
			a := await(t, got, 10*time.Second)
			if a.err == nil {
				assert.NoError(t, m.Release(a.ctx))
			}
			return a.err
		}},
		{"foreign-lease-counts", []error{context.DeadlineExceeded}, "/s", func(t *testing.T, k *badEnv) error {
			k.plant(t, k.admin, "/s/leases/garbage", 0)
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			_, err := k.semaphore(k.client(), "/s", 1).Acquire(ctx)
			return err
		}},
	}
}

// badOptionCases are invalid Client options, and a server that does not
// answer.
func badOptionCases(e *env) []badCase {
	connect := func(opts ...zklock.Option) func(t *testing.T, k *badEnv) error {
		return func(t *testing.T, k *badEnv) error {
			c, err := zklock.Connect(e.servers, append([]zklock.Option{zklock.WithConnectTimeout(5 * time.Second)}, opts...)...)
			if err == nil {
				c.Close()
			}
			return err
		}
	}
	inv := []error{zklock.ErrInvalidArgument}
	return []badCase{
		{"opt-connect-timeout-zero", inv, "connect timeout", connect(zklock.WithConnectTimeout(0))},
		{"opt-connect-timeout-negative", inv, "connect timeout", connect(zklock.WithConnectTimeout(-time.Second))},
		{"opt-session-timeout-zero", inv, "session timeout", connect(zklock.WithSessionTimeout(0))},
		{"opt-session-timeout-1us", inv, "session timeout", connect(zklock.WithSessionTimeout(time.Microsecond))},
		{"opt-session-timeout-1000h", inv, "session timeout", connect(zklock.WithSessionTimeout(1000 * time.Hour))},
		{"opt-namespace-dotdot", inv, "a/../b", connect(zklock.WithNamespace("a/../b"))},
		{"opt-namespace-escape", inv, "../x", connect(zklock.WithNamespace("../x"))},
		{"opt-namespace-trailing-slash", inv, "a/", connect(zklock.WithNamespace("a/"))},
		{"opt-namespace-double-slash", inv, "a//b", connect(zklock.WithNamespace("a//b"))},
		{"opt-namespace-NUL", inv, `a\x00b`, connect(zklock.WithNamespace("a\x00b"))},
		{"opt-retry-nil", inv, "retry policy", connect(zklock.WithRetryPolicy(nil))},
		{"opt-acl-nil", inv, "ACL", connect(zklock.WithACL(nil))},
		{"opt-logger-nil", inv, "logger", connect(zklock.WithLogger(nil))},
		{"opt-auth-no-scheme", inv, "auth scheme", connect(zklock.WithAuth("", []byte("u:p")))},
		{"opt-error-policy-unknown", inv, "policy", connect(zklock.WithErrorPolicy(7))},
		{"opt-nil", inv, "nil Option", connect(nil)},
		{"opt-acl-empty", inv, "/a", func(t *testing.T, k *badEnv) error {
			c := k.client(zklock.WithACL(func(string) []zk.ACL { return nil }))
			_, err := k.mutex(c, "/a").Acquire(context.Background())
			return err
		}},
		{"opt-newclient-bad-option", inv, "/a", func(t *testing.T, k *badEnv) error {
			conn, events, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(quietLogger{}))
			require.NoError(t, err)
			defer conn.Close()
			c := zklock.NewClient(conn, events, zklock.WithRetryPolicy(nil))
			defer c.Close()
			_, err = zklock.NewMutex(c, "/a")
			return err
		}},
		{"connect-unreachable", []error{zk.ErrNoServer, syscall.ECONNREFUSED}, "127.0.0.1:", func(t *testing.T, k *badEnv) error {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := ln.Addr().String()
			require.NoError(t, ln.Close()) // nothing listens there now
			start := time.Now()
			_, err = zklock.Connect([]string{addr}, zklock.WithConnectTimeout(300*time.Millisecond))
			assert.Less(t, time.Since(start), 3*time.Second, "Connect must give up at its connect timeout")
			return err
		}},
	}
}

// Every exported method of zero and nil values of the package's types, and
// the package functions given nil, returns (an error wrapping a sentinel,
// if any), never panics and never hangs.
func TestZeroValuesNeverPanic(t *testing.T) {
	t.Parallel()
	values := []struct {
		typ, kind string
		make      func() any
	}{
		{"Client", "zero", func() any { return new(zklock.Client) }},
		{"Client", "nil", func() any { return (*zklock.Client)(nil) }},
		{"Client", "NewClient(nil,nil)", func() any { return zklock.NewClient(nil, nil) }},
		{"Mutex", "zero", func() any { return new(zklock.Mutex) }},
		{"Mutex", "nil", func() any { return (*zklock.Mutex)(nil) }},
		{"ReadWriteLock", "zero", func() any { return new(zklock.ReadWriteLock) }},
		{"ReadWriteLock", "nil", func() any { return (*zklock.ReadWriteLock)(nil) }},
		{"Semaphore", "zero", func() any { return new(zklock.Semaphore) }},
		{"Semaphore", "nil", func() any { return (*zklock.Semaphore)(nil) }},
		{"Lease", "zero", func() any { return new(zklock.Lease) }},
		{"Lease", "nil", func() any { return (*zklock.Lease)(nil) }},
		{"Hold", "zero", func() any { return new(zklock.Hold) }},
		{"Hold", "nil", func() any { return (*zklock.Hold)(nil) }},
		{"SemaphoreMutex", "zero", func() any { return new(zklock.SemaphoreMutex) }},
		{"SemaphoreMutex", "nil", func() any { return (*zklock.SemaphoreMutex)(nil) }},
		{"MultiLock", "zero", func() any { return new(zklock.MultiLock) }},
		{"MultiLock", "nil", func() any { return (*zklock.MultiLock)(nil) }},
	}
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	const bound = 5 * time.Second

	// checkResults checks a call's results: a non-nil error wraps a
	// sentinel, a returned func can be called.
	checkResults := func(t *testing.T, what string, out []reflect.Value) {
		for _, o := range out {
			switch {
			case o.Type().Implements(errType) && o.Kind() == reflect.Interface:
				if !o.IsNil() {
					err := o.Interface().(error)
					assert.True(t, isOneOf(err, sentinels...), "%s returned an error wrapping no sentinel: %v", what, err)
				}
			case o.Kind() == reflect.Func && !o.IsNil():
				if o.Type().NumIn() == 0 {
					var fout []reflect.Value
					if noPanicWithin(t, what+"'s returned func", bound, func() { fout = o.Call(nil) }) {
						for _, fo := range fout {
							if fo.Type().Implements(errType) && fo.Kind() == reflect.Interface && !fo.IsNil() {
								assert.True(t, isOneOf(fo.Interface().(error), sentinels...),
									"%s's returned func returned an error wrapping no sentinel: %v", what, fo.Interface())
							}
						}
					}
				}
			}
		}
	}

	for _, v := range values {
		rt := reflect.TypeOf(v.make())
		for i := range rt.NumMethod() {
			method := rt.Method(i)
			mt := reflect.ValueOf(v.make()).Method(i).Type()
			hasCtx := false
			for j := range mt.NumIn() {
				if mt.In(j) == ctxType {
					hasCtx = true
				}
			}
			rounds := []string{"bg"}
			if hasCtx {
				rounds = append(rounds, "nilctx")
			}
			for _, round := range rounds {
				name := v.typ + "/" + v.kind + "/" + method.Name
				if round == "nilctx" {
					name += "_nilctx"
				}
				t.Run(name, func(t *testing.T) {
					recv := reflect.ValueOf(v.make())
					fn := recv.Method(i)
					nIn := mt.NumIn()
					if mt.IsVariadic() {
						nIn-- // call with no variadic arguments
					}
					args := make([]reflect.Value, nIn)
					for j := range nIn {
						in := mt.In(j)
						switch {
						case in == ctxType && round == "bg":
							args[j] = reflect.ValueOf(context.Background())
						default: // a nil context, a nil func, the zero value
							args[j] = reflect.Zero(in)
						}
					}
					what := fmt.Sprintf("(%s %s).%s", v.kind, v.typ, method.Name)
					var out []reflect.Value
					if noPanicWithin(t, what, bound, func() { out = fn.Call(args) }) {
						checkResults(t, what, out)
					}
				})
			}
		}
	}

	bg := context.Background()
	var nilCtx context.Context
	funcs := []struct {
		name string
		call func() error
	}{
		{"Revoke(bg,nil,/x)", func() error { return zklock.Revoke(bg, nil, "/x") }},
		{"Revoke(nil,nil,empty)", func() error { return zklock.Revoke(nilCtx, nil, "") }},
		{"NewMutex(nil,/x)", func() error { _, err := zklock.NewMutex(nil, "/x"); return err }},
	}
	for _, f := range funcs {
		t.Run("func/"+f.name, func(t *testing.T) {
			var err error
			if noPanicWithin(t, f.name, bound, func() { err = f.call() }) {
				if assert.Error(t, err, "%s must be refused", f.name) {
					assert.True(t, isOneOf(err, zklock.ErrInvalidArgument), "%s: want ErrInvalidArgument, got %v", f.name, err)
				}
			}
		})
	}
}
