package zklock_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	kit "github.com/zklock/zklock/zktest"
)

// tryRecipe is one recipe's TryLock, returning the release of what it
// took.
type tryRecipe struct {
	name string
	try  func(ctx context.Context) (release func() error, err error)
}

// tryRecipes returns the TryLock of every recipe that has one, on paths
// under the test's root, through c: a Mutex, both sides of a
// ReadWriteLock, a SemaphoreMutex, a Semaphore's TryAcquire and a
// MultiLock over two Mutexes.
func tryRecipes(t *testing.T, e *env, c *zklock.Client) []tryRecipe {
	t.Helper()
	byHold := func(tryLock func(context.Context) (*zklock.Hold, error)) func(context.Context) (func() error, error) {
		return func(ctx context.Context) (func() error, error) {
			hd, err := tryLock(ctx)
			if err != nil {
				return nil, err
			}
			return hd.Release, nil
		}
	}
	rw, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	sm, err := zklock.NewSemaphoreMutex(c, e.root+"/semaphore-mutex")
	require.NoError(t, err)
	sem, err := zklock.NewSemaphore(c, e.root+"/semaphore", 1)
	require.NoError(t, err)
	ml, err := zklock.NewMultiLockPaths(c, e.root+"/multi-a", e.root+"/multi-b")
	require.NoError(t, err)
	return []tryRecipe{
		{"Mutex", byHold(e.mutex(c, "/mutex").TryLock)},
		{"ReadLock", byHold(rw.ReadLock().TryLock)},
		{"WriteLock", byHold(rw.WriteLock().TryLock)},
		{"SemaphoreMutex", byHold(sm.TryLock)},
		{"Semaphore", func(ctx context.Context) (func() error, error) {
			l, err := sem.TryAcquire(ctx)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}},
		{"MultiLock", byHold(ml.TryLock)},
	}
}

// tried is the outcome of one recipe's TryLock.
type tried struct {
	name    string
	release func() error
	err     error
	took    time.Duration
}

// A TryLock decides once and does not wait: with the connection down it
// cannot decide, and must say so at once, with an error wrapping
// ErrNotConnected (not ErrLocked: no one holds the lock), rather than wait
// for the connection up to the caller's deadline. The Client goes through a
// proxy that is paused and cut, so that the connection drops at once and
// reconnects hang; its 10s session outlives an outage of a second or two.
// No other Client holds any of the locks. Each recipe's TryLock, with a
// 10s context, must fail within a second. Once the connection is back,
// each succeeds; the env's clean-up checks that no ephemeral node is left.
func TestIntegration_EdgeTryLockDisconnected(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	c := e.client(zklock.WithDialer(faults.Dial))
	// Another Client creates every lock's path, and holds nothing: each
	// lock is free.
	for _, r := range tryRecipes(t, e, e.client()) {
		release, err := r.try(context.Background())
		require.NoError(t, err, r.name)
		require.NoError(t, release(), r.name)
	}
	recipes := tryRecipes(t, e, c)

	faults.Pause()
	faults.Cut() // the connection drops at once; reconnects hang at the paused proxy
	waitState(t, c, 5*time.Second, zklock.StateSuspended)
	out := make(chan tried, len(recipes))
	for _, r := range recipes {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			release, err := r.try(ctx)
			out <- tried{r.name, release, err, time.Since(start)}
		}()
	}
	for range recipes {
		got := await(t, out, 15*time.Second)
		if got.err == nil {
			t.Errorf("%s: TryLock succeeded with the connection down", got.name)
			assert.NoError(t, got.release(), got.name)
			continue
		}
		assert.Less(t, got.took, time.Second, "%s: TryLock returns at once with the connection down (returned %v)", got.name, got.err)
		assert.ErrorIs(t, got.err, zklock.ErrNotConnected, "%s", got.name)
		assert.NotErrorIs(t, got.err, zklock.ErrLocked, "%s: no one holds the lock", got.name)
	}

	faults.Resume()
	waitState(t, c, 15*time.Second, zklock.StateReconnected)
	for _, r := range recipes {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		release, err := r.try(ctx)
		cancel()
		if assert.NoError(t, err, "%s: TryLock once the connection is back", r.name) {
			assert.NoError(t, release(), r.name)
		}
	}
}

// held is the outcome of a Lock or Campaign run in the background.
type held struct {
	hd  *zklock.Hold
	err error
}

// inBackground runs take on a goroutine; the test reads the outcome from
// the channel (never t.Fatal from the goroutine).
func inBackground(take func() (*zklock.Hold, error)) <-chan held {
	ch := make(chan held, 1)
	go func() {
		hd, err := take()
		ch <- held{hd, err}
	}()
	return ch
}

// holdAsync runs m.Lock(ctx) on a goroutine.
func holdAsync(ctx context.Context, m *zklock.Mutex) <-chan held {
	return inBackground(func() (*zklock.Hold, error) { return m.Lock(ctx) })
}

// shortSession are the options of a Client whose connection goes through
// faults, with a 2s session that a pause expires, and a retry policy
// that outlasts the tests' outages.
func shortSession(faults *kit.Link) []zklock.Option {
	return []zklock.Option{
		zklock.WithSessionTimeout(2 * time.Second),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: 30 * time.Second, Sleep: 100 * time.Millisecond}),
		zklock.WithDialer(faults.Dial),
	}
}

// sessionMarker creates an ephemeral node of c's current session under
// the test's root: its going tells that the session ended on the server.
func sessionMarker(t *testing.T, e *env, c *zklock.Client) string {
	t.Helper()
	marker := e.root + "/marker"
	_, err := c.Create(context.Background(), marker, nil, zk.FlagEphemeral)
	require.NoError(t, err)
	return marker
}

// waitGone waits until the node at p no longer exists.
func waitGone(t *testing.T, e *env, p, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, _, err := e.admin.Exists(p)
		return err == nil && !ok
	}, 15*time.Second, 5*time.Millisecond, what)
}

// A Lock begun while the connection is down keeps its place in the FIFO
// queue once it has one, even though the session it began under expires
// and its node is created in the new one. H holds P; B's Lock starts while
// B's connection is paused, and goes on past the expiry of B's session
// (seen by the admin as the loss of an ephemeral marker node that B made
// before the pause); after the resume, B's node queues behind H's, and
// then C's behind B's. When H releases, B holds and C still waits. A Lock
// that takes the node for one of the expired session (recorded from the
// state before the create), finds the session changed when granted,
// deletes its own live node and queues again behind C: C then holds
// first.
func TestIntegration_EdgeSuspendedAcquireKeepsPlace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	p := e.root + "/fifo"
	h, err := e.mutex(e.client(), "/fifo").Lock(bg)
	require.NoError(t, err)

	faults := e.link()
	cb := e.client(shortSession(faults)...)
	marker := sessionMarker(t, e, cb)

	faults.Pause()
	waitState(t, cb, 10*time.Second, zklock.StateSuspended, zklock.StateLost)
	b := holdAsync(bg, e.mutex(cb, "/fifo"))
	waitGone(t, e, marker, "B's session expires on the server")
	faults.Resume()

	requireKeepsPlace(t, e, p, cb, h, b)
}

// A Lock whose create goes out on a new session, because the session it
// began under expired while the create was on its way (the Client's
// next handshake asked for a new session), still keeps its place: the
// engine learns which session made the node (the session changed
// around the create, so the node's owner decides), waits until the
// Client's view has that session, and decides from there. B's connection
// is paused right before its create is handed over, and the create is
// sent only once B has a new session.
func TestIntegration_EdgeSessionReplacedDuringCreate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	p := e.root + "/mid-create"
	h, err := e.mutex(e.client(), "/mid-create").Lock(bg)
	require.NoError(t, err)

	faults := e.link()
	paused, proceed := make(chan struct{}), make(chan struct{})
	var once, release sync.Once
	cb, f := e.faultClient(shortSession(faults)...)
	t.Cleanup(func() { release.Do(func() { close(proceed) }) }) // before the Client closes, should the test fail first
	marker := sessionMarker(t, e, cb)
	old := zklock.ConnOf(cb).SessionID()
	f.setBeforeCreate(func(string) {
		once.Do(func() { // the first create of the lock node waits for a new session
			close(paused)
			<-proceed
		})
	})
	b := holdAsync(bg, e.mutex(cb, "/mid-create"))
	await(t, paused, 10*time.Second)
	faults.Pause()
	waitGone(t, e, marker, "B's session expires on the server")
	faults.Resume()
	require.Eventually(t, func() bool { // an id comes only with a handshake that gave the session
		s := zklock.ConnOf(cb).SessionID()
		return s != 0 && s != old
	}, 15*time.Second, 5*time.Millisecond, "B has a new session")
	release.Do(func() { close(proceed) })
	requireKeepsPlace(t, e, p, cb, h, b)
}

// requireKeepsPlace checks that B, whose Lock on p runs (b) behind H's
// hold h, queues behind H, keeps its place there when C queues behind it,
// and holds before C once H releases. B's node must belong to cb's
// current session.
func requireKeepsPlace(t *testing.T, e *env, p string, cb *zklock.Client, h *zklock.Hold, b <-chan held) {
	t.Helper()
	bg := context.Background()
	waitChildren(t, e, p, 2) // B queued behind H
	bNode := slices.DeleteFunc(e.children(p), func(n string) bool { return n == path.Base(h.Path()) })
	require.Len(t, bNode, 1)
	_, st, err := e.admin.Exists(p + "/" + bNode[0])
	require.NoError(t, err)
	require.Equal(t, zklock.ConnOf(cb).SessionID(), st.EphemeralOwner, "B's node belongs to its new session")
	c := holdAsync(bg, e.mutex(e.client(), strings.TrimPrefix(p, e.root)))
	waitChildren(t, e, p, 3) // C queued behind B
	cNode := slices.DeleteFunc(e.children(p), func(n string) bool { return n == path.Base(h.Path()) || n == bNode[0] })
	require.Len(t, cNode, 1)
	require.NoError(t, h.Release())

	select {
	case got := <-b:
		require.NoError(t, got.err)
		select {
		case gc := <-c:
			t.Errorf("C holds beside B: %v", gc.err)
		default:
		}
		ok, _, err := e.admin.Exists(p + "/" + cNode[0])
		require.NoError(t, err)
		assert.True(t, ok, "C's node still waits")
		require.NoError(t, got.hd.Release())
		gc := await(t, c, 10*time.Second)
		require.NoError(t, gc.err)
		require.NoError(t, gc.hd.Release())
	case gc := <-c:
		require.NoError(t, gc.err)
		ok, _, err := e.admin.Exists(p + "/" + bNode[0])
		require.NoError(t, err)
		t.Errorf("C holds before B: B lost its place in the queue (queue when H released: H %s, B %s, C %s; B's node exists now: %v; children now %v)",
			path.Base(h.Path()), bNode[0], cNode[0], ok, e.children(p))
		require.NoError(t, gc.hd.Release())
		got := await(t, b, 10*time.Second)
		require.NoError(t, got.err)
		require.NoError(t, got.hd.Release())
	case <-time.After(10 * time.Second):
		t.Fatalf("no one holds once H released; children %v", e.children(p))
	}
}

// warnings returns the records of a text handler's output at Warn level
// or above.
func warnings(logged string) []string {
	var out []string
	for _, line := range strings.Split(logged, "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return out
}

// Close ends every hold of the Client; it is the caller's own doing, not a
// fault, and must not flood the log: at most one record at Warn level or
// above for the whole Close (a summary), not one "hold lost" and one
// "delete continues" per hold.
func TestIntegration_EdgeCloseQuiet(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(syncWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := e.client(zklock.WithLogger(logger))
	const holds = 200
	for i := range holds {
		_, err := e.mutex(c, fmt.Sprintf("/quiet/%03d", i)).Lock(context.Background())
		require.NoError(t, err)
	}
	mu.Lock()
	start := logs.Len()
	mu.Unlock()

	c.Close()
	mu.Lock()
	after := logs.String()[start:]
	mu.Unlock()
	warned := warnings(after)
	var lost, deletes int
	for _, w := range warned {
		if strings.Contains(w, "hold lost") {
			lost++
		}
		if strings.Contains(w, "delete continues") {
			deletes++
		}
	}
	if len(warned) > 1 {
		t.Errorf("Close of a Client with %d holds logged %d records at Warn or above (%d \"hold lost\", %d \"delete continues\"), want at most 1; the first %d:\n%s",
			holds, len(warned), lost, deletes, min(3, len(warned)), strings.Join(warned[:min(3, len(warned))], "\n"))
	}
}

// An Observer learns why a delete goes on in the background: every
// EventDeleteRetried carries its Err. Here the delete is handed to the
// background because the connection is down when the hold ends (the proxy
// paused and cut), and is done once it is back.
func TestIntegration_EdgeDeleteRetriedHasErr(t *testing.T) {
	t.Parallel()
	e := setup(t)
	faults := e.link()
	var mu sync.Mutex
	var events []zklock.Event // guarded by mu
	c := e.client(
		zklock.WithDialer(faults.Dial),
		zklock.WithObserver(func(ev zklock.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}),
	)
	hd, err := e.mutex(c, "/retried").Lock(context.Background())
	require.NoError(t, err)
	node := hd.Path()

	faults.Pause()
	faults.Cut()
	waitState(t, c, 5*time.Second, zklock.StateSuspended)
	if err := hd.Release(); err != nil {
		require.ErrorIs(t, err, zklock.ErrLockLost) // StandardPolicy: lost at the suspension
	}
	retried := func() []zklock.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.DeleteFunc(slices.Clone(events), func(ev zklock.Event) bool { return ev.Kind != zklock.EventDeleteRetried })
	}
	require.Eventually(t, func() bool { return len(retried()) > 0 }, 10*time.Second, 5*time.Millisecond,
		"the delete of %s goes on in the background", node)
	faults.Resume()
	waitChildren(t, e, path.Dir(node), 0)

	all := retried()
	for i, ev := range all {
		assert.Error(t, ev.Err, "EventDeleteRetried %d of %d, for %s, carries why the delete failed", i+1, len(all), ev.Node)
	}
}
