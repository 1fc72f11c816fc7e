package zklock_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// nextEvent returns the next event of kind, skipping others, failing the
// test after d.
func nextEvent(t *testing.T, events <-chan zklock.Event, kind zklock.EventKind, d time.Duration) zklock.Event {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", kind, d)
			return zklock.Event{}
		}
	}
}

func TestIntegration_ObserverSeesTheLifeOfAHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	events := make(chan zklock.Event, 100)
	c, f := e.faultClient(zklock.WithObserver(func(ev zklock.Event) { events <- ev }))
	m := e.mutex(c, "/obs")
	bg := context.Background()

	h, err := m.Acquire(bg)
	require.NoError(t, err)
	started := nextEvent(t, events, zklock.EventAcquireStarted, 5*time.Second)
	assert.Equal(t, e.root+"/obs", started.Path)
	got := nextEvent(t, events, zklock.EventAcquired, 5*time.Second)
	assert.Equal(t, m.LockPath(h), got.Node)
	assert.Zero(t, got.Position, "first in the queue")
	assert.Positive(t, got.Wait)

	w := acquireAsync(bg, m)
	waitParticipants(t, m, 2)
	require.NoError(t, m.Release(h))
	rel := nextEvent(t, events, zklock.EventReleased, 5*time.Second)
	assert.Positive(t, rel.Held)
	a := await(t, w, 10*time.Second)
	require.NoError(t, a.err)
	assert.Equal(t, 1, nextEvent(t, events, zklock.EventAcquired, 5*time.Second).Position, "one node ahead when it queued")

	m.MakeRevocable(func(*zklock.Mutex) {})
	require.NoError(t, m.Release(a.ctx))
	h, err = m.Acquire(bg)
	require.NoError(t, err)
	require.NoError(t, zklock.Revoke(bg, c, m.LockPath(h)))
	assert.Equal(t, m.LockPath(h), nextEvent(t, events, zklock.EventRevocationRequested, 5*time.Second).Node)

	require.NoError(t, e.admin.Delete(m.LockPath(h), -1))
	lost := nextEvent(t, events, zklock.EventLost, 5*time.Second)
	require.ErrorIs(t, lost.Err, zklock.ErrLockLost)
	require.ErrorIs(t, m.Release(h), zklock.ErrLockLost)

	h, err = m.Acquire(bg)
	require.NoError(t, err)
	f.mu.Lock()
	f.deleteFails = 1
	f.mu.Unlock()
	node := m.LockPath(h)
	require.NoError(t, m.Release(h), "the delete goes on in the background")
	retried := nextEvent(t, events, zklock.EventDeleteRetried, 5*time.Second)
	assert.Equal(t, node, retried.Node)
	assert.Error(t, retried.Err)
	waitParticipants(t, m, 0)
}

// An Observer that does not return stalls nothing: events beyond the
// queue are dropped and counted.
func TestIntegration_ObserverCannotStallLocks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	unblock := make(chan struct{})
	dropped := make(chan int, 1)
	first := true
	c := e.client(zklock.WithObserver(func(ev zklock.Event) {
		if first {
			first = false
			<-unblock
			return
		}
		if ev.Dropped > 0 {
			select {
			case dropped <- ev.Dropped:
			default:
			}
		}
	}))
	m := e.mutex(c, "/stall")
	bg := context.Background()
	for range 400 { // 1,200 events, beyond the queue of 1,024
		h, err := m.Acquire(bg)
		require.NoError(t, err)
		require.NoError(t, m.Release(h))
	}
	close(unblock)
	h, err := m.Acquire(bg)
	require.NoError(t, err)
	require.NoError(t, m.Release(h))
	select {
	case n := <-dropped:
		assert.Positive(t, n)
	case <-time.After(10 * time.Second):
		t.Fatal("no event reported the dropped ones")
	}
}

func TestObserverOptionAndKinds(t *testing.T) {
	t.Parallel()
	_, err := zklock.Connect([]string{"127.0.0.1:1"}, zklock.WithObserver(nil))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument)
	assert.Equal(t, "Acquired", zklock.EventAcquired.String())
	assert.Equal(t, "DeleteRetried", zklock.EventDeleteRetried.String())
	assert.Equal(t, "EventKind(99)", zklock.EventKind(99).String())
}

// logRecorder is a slog.Handler that keeps the records of level min and
// above.
type logRecorder struct {
	min    slog.Level
	mu     sync.Mutex
	recs   []slog.Record // guarded by mu
	notify chan struct{} // signalled after each record
}

func newLogRecorder(min slog.Level) *logRecorder {
	return &logRecorder{min: min, notify: make(chan struct{}, 1)}
}

func (r *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.min }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler           { return r }
func (r *logRecorder) WithGroup(string) slog.Handler                { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
	return nil
}

// find returns the attributes of the first record with msg, by key, and
// its level; ok is false if there is none.
func (r *logRecorder) find(msg string) (attrs map[string]string, level slog.Level, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.Message == msg {
			attrs = map[string]string{}
			rec.Attrs(func(a slog.Attr) bool {
				attrs[a.Key] = a.Value.String()
				return true
			})
			return attrs, rec.Level, true
		}
	}
	return nil, 0, false
}

// await waits up to d for a record with msg.
func (r *logRecorder) await(t *testing.T, msg string, d time.Duration) (map[string]string, slog.Level) {
	t.Helper()
	deadline := time.After(d)
	for {
		if attrs, level, ok := r.find(msg); ok {
			return attrs, level
		}
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no %q log record within %v", msg, d)
		}
	}
}

// messages returns the message of every record kept.
func (r *logRecorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		out = append(out, rec.Message)
	}
	return out
}

// A Debug handler sees a hold's life: acquire started, acquired, released,
// with the path, node, wait, position and hold time; a loss is logged at
// Warn with its cause.
func TestIntegration_SlogDebugLinesOfAHold(t *testing.T) {
	e := setup(t)
	rec := newLogRecorder(slog.LevelDebug)
	c := e.client(zklock.WithLogger(slog.New(rec)))
	m := e.mutex(c, "/lock")
	held, err := m.Acquire(context.Background())
	require.NoError(t, err)
	node := m.LockPath(held)
	require.NoError(t, m.Release(held))

	started, level := rec.await(t, "zklock: acquire started", 5*time.Second)
	assert.Equal(t, slog.LevelDebug, level)
	assert.Equal(t, e.root+"/lock", started["path"])
	acquired, level := rec.await(t, "zklock: acquired", 5*time.Second)
	assert.Equal(t, slog.LevelDebug, level)
	assert.Equal(t, map[string]string{"path": e.root + "/lock", "node": node, "wait": acquired["wait"], "position": "0"}, acquired)
	_, err = time.ParseDuration(acquired["wait"])
	assert.NoError(t, err, "wait is a duration")
	released, level := rec.await(t, "zklock: released", 5*time.Second)
	assert.Equal(t, slog.LevelDebug, level)
	assert.Equal(t, e.root+"/lock", released["path"])
	assert.Equal(t, node, released["node"])
	_, err = time.ParseDuration(released["held"])
	assert.NoError(t, err, "held is a duration")

	held, err = m.Acquire(context.Background())
	require.NoError(t, err)
	node = m.LockPath(held)
	require.NoError(t, e.admin.Delete(node, -1))
	lost, level := rec.await(t, "zklock: hold lost", 5*time.Second)
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, node, lost["node"])
	assert.Equal(t, e.root+"/lock", lost["path"])
	assert.Contains(t, lost["err"], "lock lost")
	assert.ErrorIs(t, m.Release(held), zklock.ErrLockLost)
}

// An Info handler sees none of the lines of acquire and release: they are
// Debug, off the hot path at any higher level.
func TestIntegration_SlogInfoSeesNoHotPathLines(t *testing.T) {
	e := setup(t)
	rec := newLogRecorder(slog.LevelInfo)
	c := e.client(zklock.WithLogger(slog.New(rec)))
	m := e.mutex(c, "/lock")
	for range 3 {
		held, err := m.Acquire(context.Background())
		require.NoError(t, err)
		require.NoError(t, m.Release(held))
	}
	for _, msg := range rec.messages() {
		assert.False(t, strings.HasPrefix(msg, "zklock: acquire") || msg == "zklock: released",
			"logged at Info or above: %q", msg)
	}
}
