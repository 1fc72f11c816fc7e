package zklock_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	kit "github.com/zklock/zklock/zktest"
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
	assert.Equal(t, zklock.RecipeMutex, retried.Recipe, "a hold's delete belongs to its story")
	assert.NotZero(t, retried.ID)
	assert.Equal(t, e.root+"/obs", retried.Path)
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
	assert.Equal(t, map[string]string{"path": e.root + "/lock", "node": node, "recipe": "mutex", "id": started["id"],
		"wait": acquired["wait"], "position": "0"}, acquired)
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
	assert.Equal(t, "deleted", lost["cause"])
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

// eventLog is an Observer that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	evs    []zklock.Event // guarded by mu
	notify chan struct{}  // signalled after each event
}

func newEventLog() *eventLog { return &eventLog{notify: make(chan struct{}, 1)} }

func (l *eventLog) observe(ev zklock.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// await returns the first event that match accepts, failing t after d.
func (l *eventLog) await(t *testing.T, d time.Duration, what string, match func(zklock.Event) bool) zklock.Event {
	t.Helper()
	deadline := time.After(d)
	for {
		l.mu.Lock()
		for _, ev := range l.evs {
			if match(ev) {
				l.mu.Unlock()
				return ev
			}
		}
		l.mu.Unlock()
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("no event %s within %v", what, d)
		}
	}
}

// outcome waits for the n-th story started on path (from 1) and for its
// outcome (EventAcquired or EventAcquireFailed), and returns both.
func (l *eventLog) outcome(t *testing.T, path string, n int) (started, out zklock.Event) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for started.ID == 0 {
		l.mu.Lock()
		seen := 0
		for _, ev := range l.evs {
			if ev.Kind == zklock.EventAcquireStarted && ev.Path == path {
				if seen++; seen == n {
					started = ev
					break
				}
			}
		}
		l.mu.Unlock()
		if started.ID != 0 {
			break
		}
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("no story %d started on %s", n, path)
		}
	}
	out = l.await(t, 10*time.Second, "ending story on "+path, func(ev zklock.Event) bool {
		return ev.ID == started.ID && (ev.Kind == zklock.EventAcquired || ev.Kind == zklock.EventAcquireFailed)
	})
	return started, out
}

// end waits for the end (EventReleased or EventLost) of story id.
func (l *eventLog) end(t *testing.T, id uint64) zklock.Event {
	t.Helper()
	return l.await(t, 10*time.Second, "ending a hold", func(ev zklock.Event) bool {
		return ev.ID == id && (ev.Kind == zklock.EventReleased || ev.Kind == zklock.EventLost)
	})
}

// checkStories checks that every story of the log is whole: started once,
// with at most one failure and then nothing, or holds that each end once;
// every event but a retried delete carries its ID and recipe.
func (l *eventLog) checkStories(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	type tally struct{ started, failed, acquired, ended int }
	stories := map[uint64]*tally{}
	for _, ev := range l.evs {
		if ev.Kind == zklock.EventDeleteRetried {
			continue
		}
		if !assert.NotZero(t, ev.ID, "%v event without an ID", ev.Kind) || !assert.NotZero(t, ev.Recipe, "%v event without a recipe", ev.Kind) {
			continue
		}
		s := stories[ev.ID]
		if s == nil {
			s = &tally{}
			stories[ev.ID] = s
		}
		switch ev.Kind {
		case zklock.EventAcquireStarted:
			s.started++
		case zklock.EventAcquireFailed:
			s.failed++
		case zklock.EventAcquired:
			s.acquired++
		case zklock.EventReleased, zklock.EventLost:
			s.ended++
		}
	}
	for id, s := range stories {
		assert.Equal(t, 1, s.started, "story %d: started once", id)
		if s.failed > 0 {
			assert.Equal(t, tally{1, 1, 0, 0}, *s, "story %d: a failure ends it", id)
		} else {
			assert.Equal(t, s.acquired, s.ended, "story %d: every hold granted ends once", id)
		}
	}
}

// Every acquire that queues ends in one terminal event with its cause and
// wait, under the ID of its start; every hold ends in one, with its cause.
func TestIntegration_ObserverTerminalEvents(t *testing.T) {
	t.Parallel()
	e := setup(t)
	log := newEventLog()
	// c's Observer stops at the first loss that c's Close reports, until
	// resume is closed: acquires made meanwhile are made on a closed Client.
	closing, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := e.client(zklock.WithObserver(func(ev zklock.Event) {
		log.observe(ev)
		if ev.Kind == zklock.EventLost && ev.Cause == zklock.CauseClosed {
			once.Do(func() { close(closing); <-resume })
		}
	}))
	other := e.client()
	bg := context.Background()
	path := e.root + "/busy"
	m := e.mutex(c, "/busy")
	held, err := e.mutex(other, "/busy").Lock(context.Background())
	require.NoError(t, err)

	_, err = m.TryLock(context.Background())
	require.ErrorIs(t, err, zklock.ErrLocked)
	started, out := log.outcome(t, path, 1)
	assert.Equal(t, zklock.EventAcquireFailed, out.Kind)
	assert.Equal(t, zklock.CauseBusy, out.Cause)
	assert.ErrorIs(t, out.Err, zklock.ErrLocked)
	assert.Equal(t, zklock.RecipeMutex, started.Recipe)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	called := time.Now()
	_, err = m.Lock(ctx)
	returned := time.Since(called)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, out = log.outcome(t, path, 2)
	assert.Equal(t, zklock.CauseTimeout, out.Cause)
	// The wait runs from the acquire's start, a little after the deadline
	// was set, to its outcome, at the deadline (the holder is read before
	// it): within the time the call took, and near 300 ms.
	assert.LessOrEqual(t, out.Wait, returned, "the wait is the time to the outcome")
	assert.GreaterOrEqual(t, out.Wait, 250*time.Millisecond, "the wait is the time to the outcome")

	ctx, cancel = context.WithCancel(context.Background())
	w := acquireAsync(ctx, m)
	waitParticipants(t, m, 2)
	cancel()
	require.ErrorIs(t, await(t, w, 10*time.Second).err, context.Canceled)
	_, out = log.outcome(t, path, 3)
	assert.Equal(t, zklock.CauseCanceled, out.Cause)

	// Refused before it queues, by every recipe: a context already
	// cancelled, a deadline already passed, a bound ContextWithMaxHold
	// refuses. Each tells its story all the same.
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	log.refused(t, refusals(t, c, e.root+"/cancelled"), cancelled, context.Canceled, zklock.CauseCanceled)
	late, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel()
	log.refused(t, refusals(t, c, e.root+"/late"), late, context.DeadlineExceeded, zklock.CauseTimeout)
	log.refused(t, refusals(t, c, e.root+"/badbound"), zklock.ContextWithMaxHold(bg, 0), zklock.ErrInvalidArgument, zklock.CauseOther)
	refusedAfterShutdown(t, e, log)

	require.NoError(t, held.Release())
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	started, out = log.outcome(t, path, 4)
	assert.Equal(t, zklock.EventAcquired, out.Kind)
	node := out.Node
	require.NoError(t, h.Release())
	end := log.end(t, started.ID)
	assert.Equal(t, zklock.EventReleased, end.Kind)
	assert.Equal(t, node, end.Node)
	assert.Equal(t, zklock.CauseNone, end.Cause)

	i := 0
	for _, tc := range []struct {
		cause  zklock.Cause
		policy zklock.ErrorPolicy
		cut    func(link *kit.Link, node string)
	}{
		{zklock.CauseDeleted, zklock.StandardPolicy, func(_ *kit.Link, node string) { require.NoError(t, e.admin.Delete(node, -1)) }},
		{zklock.CauseConnection, zklock.StandardPolicy, func(link *kit.Link, _ string) { link.Cut() }},
		// Silence: the Client declares the session lost a third of the
		// timeout after it saw the connection go (an expiry by the servers
		// would delete the node, which the node's watch may report first).
		{zklock.CauseSession, zklock.SessionPolicy, func(link *kit.Link, _ string) { link.Pause() }},
	} {
		link := e.link()
		i++
		c := e.client(zklock.WithObserver(log.observe), zklock.WithErrorPolicy(tc.policy),
			zklock.WithSessionTimeout(2*time.Second), zklock.WithDialer(link.Dial))
		h, err := e.mutex(c, "/lost"+strconv.Itoa(i)).Lock(context.Background())
		require.NoError(t, err)
		started, _ := log.outcome(t, e.root+"/lost"+strconv.Itoa(i), 1)
		tc.cut(link, h.Path())
		end := log.end(t, started.ID)
		assert.Equal(t, zklock.EventLost, end.Kind, tc.cause)
		assert.Equal(t, tc.cause, end.Cause, "%v", end.Err)
		assert.ErrorIs(t, end.Err, zklock.ErrLockLost)
		assert.ErrorIs(t, h.Release(), zklock.ErrLockLost)
		link.Resume()
	}

	held, err = e.mutex(other, "/busy").Lock(context.Background())
	require.NoError(t, err)
	w = acquireAsync(context.Background(), m)
	waitParticipants(t, m, 2)
	atClose, err := e.mutex(c, "/atclose").Lock(context.Background())
	require.NoError(t, err)
	afterClose := refusals(t, c, e.root+"/closed")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	await(t, closing, 10*time.Second) // Close has begun, and waits for the Observer
	for _, r := range afterClose {
		require.ErrorIs(t, r.acquire(bg), zklock.ErrClosed, r.path)
	}
	close(resume)
	require.NoError(t, await(t, closed, 10*time.Second))
	log.told(t, afterClose, zklock.CauseClosed)
	require.ErrorIs(t, await(t, w, 10*time.Second).err, zklock.ErrClosed)
	require.ErrorIs(t, atClose.Err(), zklock.ErrLockLost)
	// Delivered by Close: nothing comes after it.
	_, out = log.outcome(t, path, 5)
	assert.Equal(t, zklock.CauseClosed, out.Cause)
	started, _ = log.outcome(t, e.root+"/atclose", 1)
	end = log.end(t, started.ID)
	assert.Equal(t, zklock.EventLost, end.Kind)
	assert.Equal(t, zklock.CauseClosed, end.Cause)
	require.NoError(t, held.Release())
	log.checkStories(t)
}

// refusedAfterShutdown checks that once a Shutdown has begun, every
// recipe's acquire on the Client is refused with ErrClosed, and tells its
// story.
func refusedAfterShutdown(t *testing.T, e *env, log *eventLog) {
	t.Helper()
	bg := context.Background()
	c := e.client(zklock.WithObserver(log.observe))
	busy, err := e.mutex(e.client(), "/shutdown-busy").Lock(bg)
	require.NoError(t, err)
	waiting := e.mutex(c, "/shutdown-busy")
	w := acquireAsync(bg, waiting)
	waitParticipants(t, waiting, 2)
	standing, err := e.mutex(c, "/standing").Lock(bg)
	require.NoError(t, err)
	rs := refusals(t, c, e.root+"/shutdown")
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(bg) }()
	require.ErrorIs(t, await(t, w, 10*time.Second).err, zklock.ErrClosed) // the Shutdown has begun
	log.refused(t, rs, bg, zklock.ErrClosed, zklock.CauseClosed)
	require.NoError(t, standing.Release())
	require.NoError(t, await(t, shut, 10*time.Second))
	require.NoError(t, busy.Release())
}

// refusal is an acquire of one recipe, whose story has that recipe and
// path.
type refusal struct {
	recipe  zklock.Recipe
	path    string
	acquire func(ctx context.Context) error // releases what it was granted, and then fails
}

// errGranted is a refusal's error when it was granted.
var errGranted = errors.New("granted")

// refusals returns an acquire of each recipe on c, each on a path of its
// own under dir.
func refusals(t *testing.T, c *zklock.Client, dir string) []refusal {
	t.Helper()
	held := func(h *zklock.Hold, err error) error {
		if err != nil {
			return err
		}
		return errors.Join(errGranted, h.Release())
	}
	m, err := zklock.NewMutex(c, dir+"/mutex")
	require.NoError(t, err)
	rwRead, err := zklock.NewReadWriteLock(c, dir+"/read")
	require.NoError(t, err)
	rwWrite, err := zklock.NewReadWriteLock(c, dir+"/write")
	require.NoError(t, err)
	sem, err := zklock.NewSemaphore(c, dir+"/semaphore", 2)
	require.NoError(t, err)
	sm, err := zklock.NewSemaphoreMutex(c, dir+"/semaphore-mutex")
	require.NoError(t, err)
	ml, err := zklock.NewMultiLockPaths(c, dir+"/m1", dir+"/m2")
	require.NoError(t, err)
	el, err := zklock.NewElection(c, dir+"/election", "me")
	require.NoError(t, err)
	sel, err := zklock.NewSelector(c, dir+"/selector", "me")
	require.NoError(t, err)
	return []refusal{
		{zklock.RecipeMutex, dir + "/mutex", func(ctx context.Context) error { return held(m.Lock(ctx)) }},
		{zklock.RecipeRead, dir + "/read", func(ctx context.Context) error { return held(rwRead.ReadLock().Lock(ctx)) }},
		{zklock.RecipeWrite, dir + "/write", func(ctx context.Context) error { return held(rwWrite.WriteLock().Lock(ctx)) }},
		{zklock.RecipeSemaphore, dir + "/semaphore", func(ctx context.Context) error {
			l, err := sem.Acquire(ctx)
			if err != nil {
				return err
			}
			return errors.Join(errGranted, l.Release())
		}},
		{zklock.RecipeSemaphoreMutex, dir + "/semaphore-mutex", func(ctx context.Context) error { return held(sm.Lock(ctx)) }},
		{zklock.RecipeMulti, dir + "/m1," + dir + "/m2", func(ctx context.Context) error { return held(ml.Lock(ctx)) }},
		{zklock.RecipeElection, dir + "/election", func(ctx context.Context) error { return held(el.Campaign(ctx)) }},
		{zklock.RecipeSelector, dir + "/selector", func(ctx context.Context) error {
			return sel.Lead(ctx, func(context.Context) error { return errGranted })
		}},
	}
}

// refused runs each acquire of rs with ctx, which must fail with want, and
// checks that each told its story (see told).
func (l *eventLog) refused(t *testing.T, rs []refusal, ctx context.Context, want error, cause zklock.Cause) {
	t.Helper()
	for _, r := range rs {
		require.ErrorIs(t, r.acquire(ctx), want, r.path)
	}
	l.told(t, rs, cause)
}

// told checks that each acquire of rs told its story: started, then
// failed with cause, under one ID and the acquire's recipe.
func (l *eventLog) told(t *testing.T, rs []refusal, cause zklock.Cause) {
	t.Helper()
	for _, r := range rs {
		started, out := l.outcome(t, r.path, 1)
		assert.Equal(t, r.recipe, started.Recipe, r.path)
		assert.Equal(t, zklock.EventAcquireFailed, out.Kind, r.path)
		assert.Equal(t, r.recipe, out.Recipe, r.path)
		assert.Equal(t, cause, out.Cause, "%s: %v", r.path, out.Err)
		assert.Error(t, out.Err, r.path)
	}
}

// Every recipe tells its stories under its own kind: start, grant and
// release share an ID that no other story has.
func TestIntegration_ObserverRecipeKinds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	log := newEventLog()
	c := e.client(zklock.WithObserver(log.observe))
	bg := context.Background()
	ids := map[uint64]zklock.Recipe{}
	stories := map[string]int{} // stories started, by path
	check := func(recipe zklock.Recipe, path string, lock func() (release func() error)) {
		t.Helper()
		release := lock()
		stories[path]++
		started, out := log.outcome(t, path, stories[path])
		assert.Equal(t, recipe, started.Recipe, path)
		assert.Equal(t, zklock.EventAcquired, out.Kind, path)
		assert.Equal(t, recipe, out.Recipe, path)
		require.NoError(t, release())
		end := log.end(t, started.ID)
		assert.Equal(t, zklock.EventReleased, end.Kind, path)
		assert.Equal(t, recipe, end.Recipe, path)
		_, seen := ids[started.ID]
		assert.False(t, seen, "story IDs are unique")
		ids[started.ID] = recipe
		assert.Equal(t, recipe.String(), map[zklock.Recipe]string{
			zklock.RecipeMutex: "mutex", zklock.RecipeRead: "read", zklock.RecipeWrite: "write",
			zklock.RecipeSemaphore: "semaphore", zklock.RecipeSemaphoreMutex: "semaphore-mutex",
			zklock.RecipeMulti: "multi", zklock.RecipeElection: "election", zklock.RecipeSelector: "selector",
		}[recipe])
	}
	hold := func(h *zklock.Hold, err error) func() error {
		require.NoError(t, err)
		return h.Release
	}
	check(zklock.RecipeMutex, e.root+"/mutex", func() func() error { return hold(e.mutex(c, "/mutex").Lock(bg)) })
	rw, err := zklock.NewReadWriteLock(c, e.root+"/rw")
	require.NoError(t, err)
	check(zklock.RecipeRead, e.root+"/rw", func() func() error { return hold(rw.ReadLock().Lock(bg)) })
	check(zklock.RecipeWrite, e.root+"/rw", func() func() error { return hold(rw.WriteLock().Lock(bg)) })
	sem, err := zklock.NewSemaphore(c, e.root+"/sem", 2)
	require.NoError(t, err)
	check(zklock.RecipeSemaphore, e.root+"/sem", func() func() error {
		l, err := sem.Acquire(bg)
		require.NoError(t, err)
		return l.Release
	})
	sm, err := zklock.NewSemaphoreMutex(c, e.root+"/sm")
	require.NoError(t, err)
	check(zklock.RecipeSemaphoreMutex, e.root+"/sm", func() func() error { return hold(sm.Lock(bg)) })
	ml, err := zklock.NewMultiLockPaths(c, e.root+"/m1", e.root+"/m2")
	require.NoError(t, err)
	check(zklock.RecipeMulti, e.root+"/m1,"+e.root+"/m2", func() func() error { return hold(ml.Lock(bg)) })
	el, err := zklock.NewElection(c, e.root+"/election", "me")
	require.NoError(t, err)
	check(zklock.RecipeElection, e.root+"/election", func() func() error { return hold(el.Campaign(bg)) })
	sel, err := zklock.NewSelector(c, e.root+"/selector", "me")
	require.NoError(t, err)
	check(zklock.RecipeSelector, e.root+"/selector", func() func() error {
		granted, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- sel.Lead(bg, func(context.Context) error {
				close(granted)
				<-release
				return nil
			})
		}()
		<-granted
		return func() error { close(release); return <-done }
	})
	log.checkStories(t)
}

// Every recipe's failures and losses carry its Recipe and the ID of their
// start: an acquire that finds the lock busy (a Try; a wait cut short by
// its deadline for the recipes that have no Try), and a hold that its
// maximum hold time ends, whose EventLost says how long it was held. A
// revocation request is told under the story of the hold it asks for.
func TestIntegration_ObserverRecipeKindsOfFailuresAndLosses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	log := newEventLog()
	c := e.client(zklock.WithObserver(log.observe))
	other := e.client()
	bg := context.Background()
	for _, tk := range takers() {
		name := tk.recipe.String()
		busyAt, lostAt := e.root+"/busy/"+name, e.root+"/lost/"+name
		block := tk.blocker
		if block == nil {
			block = tk.take
		}
		b, err := block(bg, other, busyAt, false)
		require.NoError(t, err, name)
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		_, err = tk.take(ctx, c, busyAt, true)
		cancel()
		want, cause := error(zklock.ErrLocked), zklock.CauseBusy
		if !tk.hasTry {
			want, cause = context.DeadlineExceeded, zklock.CauseTimeout
		}
		require.ErrorIs(t, err, want, name)
		started, out := log.outcome(t, tk.story(busyAt), 1)
		assert.Equal(t, tk.recipe, started.Recipe, name)
		assert.Equal(t, zklock.EventAcquireFailed, out.Kind, name)
		assert.Equal(t, tk.recipe, out.Recipe, name)
		assert.Equal(t, cause, out.Cause, name)
		require.NoError(t, b.Release(), name)

		h, err := tk.take(zklock.ContextWithMaxHold(bg, maxHoldTest), c, lostAt, false)
		require.NoError(t, err, name)
		waitDone(t, h.Context(), 10*time.Second)
		require.ErrorIs(t, h.Err(), zklock.ErrMaxHold, name)
		require.ErrorIs(t, h.Release(), zklock.ErrLockLost, name)
		started, out = log.outcome(t, tk.story(lostAt), 1)
		assert.Equal(t, zklock.EventAcquired, out.Kind, name)
		end := log.end(t, started.ID)
		assert.Equal(t, zklock.EventLost, end.Kind, name)
		assert.Equal(t, tk.recipe, end.Recipe, name)
		assert.Equal(t, zklock.CauseMaxHold, end.Cause, name)
		assert.GreaterOrEqual(t, end.Held, maxHoldTest-50*time.Millisecond, "%s: held until the bound", name)
		assert.Less(t, end.Held, maxHoldTest+3*time.Second, name)
	}

	rw, err := zklock.NewReadWriteLock(c, e.root+"/revocable-rw")
	require.NoError(t, err)
	for _, m := range []*zklock.Mutex{e.mutex(c, "/revocable"), rw.WriteLock()} {
		revoked := make(chan struct{}, 1)
		m.MakeRevocable(func(*zklock.Mutex) { revoked <- struct{}{} })
		h, err := m.Lock(bg)
		require.NoError(t, err)
		require.NoError(t, zklock.Revoke(bg, other, h.Path()))
		await(t, revoked, 10*time.Second)
		started, out := log.outcome(t, m.Path(), 1)
		rev := log.await(t, 10*time.Second, "revocation of "+h.Path(), func(ev zklock.Event) bool {
			return ev.Kind == zklock.EventRevocationRequested && ev.Node == h.Path()
		})
		assert.Equal(t, started.ID, rev.ID, "the revocation is told under the hold's story")
		assert.Equal(t, out.Recipe, rev.Recipe)
		assert.Equal(t, m.Path(), rev.Path)
		require.NoError(t, h.Release())
	}
	assert.Equal(t, zklock.RecipeWrite, log.await(t, time.Second, "write revocation", func(ev zklock.Event) bool {
		return ev.Kind == zklock.EventRevocationRequested && ev.Path == rw.WriteLock().Path()
	}).Recipe)
	log.checkStories(t)
}

// taker takes the lock of one recipe at p on c with ctx, without waiting
// when try is set and the recipe has a Try.
type taker struct {
	recipe  zklock.Recipe
	hasTry  bool
	story   func(p string) string                                                             // the path of its stories for a lock at p
	take    func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) // returns the hold
	blocker func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) // another participant's hold that makes take wait; nil: take's
}

// takers returns a taker of each recipe.
func takers() []taker {
	self := func(p string) string { return p }
	lock := func(l zklock.Locker, err error) func(ctx context.Context, try bool) (heldLike, error) {
		return func(ctx context.Context, try bool) (heldLike, error) {
			if err != nil {
				return nil, err
			}
			type locker interface {
				Lock(context.Context) (*zklock.Hold, error)
				TryLock(context.Context) (*zklock.Hold, error)
			}
			take := l.(locker).Lock
			if try {
				take = l.(locker).TryLock
			}
			return take(ctx)
		}
	}
	mutex := func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
		return lock(zklock.NewMutex(c, p))(ctx, try)
	}
	side := func(write bool) func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
		return func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
			rw, err := zklock.NewReadWriteLock(c, p)
			if err != nil {
				return nil, err
			}
			if write {
				return lock(rw.WriteLock(), nil)(ctx, try)
			}
			return lock(rw.ReadLock(), nil)(ctx, try)
		}
	}
	lease := func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
		s, err := zklock.NewSemaphore(c, p, 1)
		if err != nil {
			return nil, err
		}
		take := s.Acquire
		if try {
			take = s.TryAcquire
		}
		l, err := take(ctx)
		if err != nil {
			return nil, err
		}
		return l.Hold(), nil
	}
	semMutex := func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
		return lock(zklock.NewSemaphoreMutex(c, p))(ctx, try)
	}
	multi := func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
		return lock(zklock.NewMultiLockPaths(c, p+"/a", p+"/b"))(ctx, try)
	}
	multiBlocker := func(ctx context.Context, c *zklock.Client, p string, try bool) (heldLike, error) {
		return mutex(ctx, c, p+"/b", try)
	}
	leader := func(ctx context.Context, c *zklock.Client, p string, _ bool) (heldLike, error) {
		el, err := zklock.NewElection(c, p, "me")
		if err != nil {
			return nil, err
		}
		return el.Campaign(ctx)
	}
	return []taker{
		{recipe: zklock.RecipeMutex, hasTry: true, story: self, take: mutex},
		{recipe: zklock.RecipeRead, hasTry: true, story: self, take: side(false), blocker: side(true)},
		{recipe: zklock.RecipeWrite, hasTry: true, story: self, take: side(true)},
		{recipe: zklock.RecipeSemaphore, hasTry: true, story: self, take: lease},
		{recipe: zklock.RecipeSemaphoreMutex, hasTry: true, story: self, take: semMutex},
		{recipe: zklock.RecipeMulti, hasTry: true, story: func(p string) string { return p + "/a," + p + "/b" }, take: multi, blocker: multiBlocker},
		{recipe: zklock.RecipeElection, story: self, take: leader},
		{recipe: zklock.RecipeSelector, story: self, take: selectorTerm},
	}
}

// selectorTerm takes a Selector's term at p on c with ctx: its function stays
// until the term is lost or released.
func selectorTerm(ctx context.Context, c *zklock.Client, p string, _ bool) (heldLike, error) {
	s, err := zklock.NewSelector(c, p, "me")
	if err != nil {
		return nil, err
	}
	tm := &stuckTerm{unstick: make(chan struct{}), done: make(chan error, 1)}
	leading := make(chan context.Context, 1)
	go func() {
		tm.done <- s.Lead(ctx, func(lctx context.Context) error {
			leading <- lctx
			select {
			case <-tm.unstick:
			case <-lctx.Done():
			}
			return nil
		})
	}()
	select {
	case tm.ctx = <-leading:
		return tm, nil
	case err := <-tm.done:
		return nil, err
	}
}

func TestRecipeAndCauseNames(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "", zklock.Recipe(0).String())
	assert.Equal(t, "Recipe(99)", zklock.Recipe(99).String())
	for c, want := range map[zklock.Cause]string{
		zklock.CauseNone: "", zklock.CauseBusy: "busy", zklock.CauseTimeout: "timeout", zklock.CauseCanceled: "canceled",
		zklock.CauseClosed: "closed", zklock.CauseConnection: "connection", zklock.CauseSession: "session",
		zklock.CauseDeleted: "deleted", zklock.CauseMaxHold: "max-hold", zklock.CauseOther: "other", zklock.Cause(99): "Cause(99)", zklock.Cause(-1): "Cause(-1)",
	} {
		assert.Equal(t, want, c.String())
	}
	assert.Equal(t, "AcquireFailed", zklock.EventAcquireFailed.String())
}

// The adapters are modules of their own: the library's module requires
// nothing beyond go-zookeeper and the test dependencies, and the library
// imports only go-zookeeper and the standard library.
func TestAdaptersAddNothingToTheLibrary(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "mod", "edit", "-json").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var mod struct{ Require []struct{ Path string } }
	require.NoError(t, json.Unmarshal(out, &mod))
	// go-zookeeper for the library; the test dependencies; porcupine for
	// the chaos suite (a command under internal/, which no user imports).
	allowed := []string{"github.com/go-zookeeper/zk", "github.com/stretchr/testify", "go.uber.org/goleak", "go.yaml.in/yaml/v3",
		"github.com/anishathalye/porcupine"}
	for _, r := range mod.Require {
		assert.Contains(t, allowed, r.Path, "the library's go.mod requires %s", r.Path)
	}
	out, err = exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		assert.True(t, p == "github.com/go-zookeeper/zk" || p == "github.com/zklock/zklock" ||
			strings.HasPrefix(p, "github.com/zklock/zklock/internal/"), "the library imports %s", p)
	}
}

// gateHandler is a slog.Handler that takes every record and stops the
// first whose message is msg until gate is closed, after closing entered.
type gateHandler struct {
	msg     string
	entered chan struct{}
	gate    chan struct{}
	once    *sync.Once
}

func (g gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (g gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g gateHandler) WithGroup(string) slog.Handler            { return g }
func (g gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == g.msg {
		g.once.Do(func() {
			close(g.entered)
			<-g.gate
		})
	}
	return nil
}

// A hold that ends while its grant is being reported (here while the
// Client's logger records the grant, as a slow handler may) is still told
// in order: the Observer sees EventAcquired before the hold's EventLost.
func TestIntegration_ObserverGrantBeforeEndWhenLostDuringReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	log := newEventLog()
	g := gateHandler{msg: "zklock: acquired", entered: make(chan struct{}), gate: make(chan struct{}), once: &sync.Once{}}
	c := e.client(zklock.WithObserver(log.observe), zklock.WithLogger(slog.New(g)))
	m := e.mutex(c, "/lock", zklock.WithMaxHold(50*time.Millisecond))
	type result struct {
		h   *zklock.Hold
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := m.Lock(context.Background())
		done <- result{h, err}
	}()
	select {
	case <-g.entered: // the grant is being reported
	case <-time.After(10 * time.Second):
		t.Fatal("the grant was never logged")
	}
	// The maximum hold time ends the hold meanwhile: its node goes (a loss
	// reported at all is queued before the node's delete).
	waitParticipants(t, m, 0)
	close(g.gate)
	r := <-done
	require.NoError(t, r.err)
	require.ErrorIs(t, r.h.Release(), zklock.ErrMaxHold)
	lostEv := log.await(t, 10*time.Second, "lost", func(ev zklock.Event) bool { return ev.Kind == zklock.EventLost })
	log.await(t, 10*time.Second, "acquired", func(ev zklock.Event) bool { return ev.Kind == zklock.EventAcquired })
	var kinds []zklock.EventKind
	log.mu.Lock()
	for _, ev := range log.evs {
		if ev.ID == lostEv.ID {
			kinds = append(kinds, ev.Kind)
		}
	}
	log.mu.Unlock()
	require.Equal(t, []zklock.EventKind{zklock.EventAcquireStarted, zklock.EventAcquired, zklock.EventLost}, kinds, "the story's events, in order")
}
