package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

// Bounds of the Go libraries' session handling.
const (
	// connectTimeout bounds one session's connection.
	connectTimeout = 30 * time.Second
	// closeTimeout bounds closing every session of a run and waiting for
	// the run's goroutines, even after a DNF.
	closeTimeout = 60 * time.Second
	// parallelConnects is how many sessions connect or close at once.
	parallelConnects = 16
)

// errUnsupported is returned for a recipe a library does not have.
var errUnsupported = errors.New("not supported by this library")

// locker is one participant's handle on a recipe: acquire, then release.
type locker interface {
	// acquire blocks until held, or until ctx ends (where the library
	// can tell; zk.Lock cannot, and is unblocked by closing its session).
	acquire(ctx context.Context) error
	// release gives up what acquire took.
	release() error
}

// goSession is one ZooKeeper session of a Go library.
type goSession interface {
	// mutex returns a new participant of the mutex at path.
	mutex(path string) (locker, error)
	// semaphore returns a new participant taking one lease at a time of
	// the semaphore at path with the given number of leases.
	semaphore(path string, leases int) (locker, error)
	// readLock returns a new participant of the read side of the
	// read/write lock at path.
	readLock(path string) (locker, error)
	// leader returns a new participant of the election at path: acquire
	// campaigns until it leads, release resigns.
	leader(path string) (locker, error)
	// floor returns a new participant that takes the floor's raw lock
	// under path (see rawLocker), creating path and its parents.
	floor(path string) (locker, error)
	// close ends the session and waits (bounded) for its goroutines.
	close() error
}

// opener opens one session of a Go library to servers.
type opener func(ctx context.Context, servers []string, sessionTimeout time.Duration) (goSession, error)

// ---- zklock ---------------------------------------------------------------

// zklockSession is a zklock.Client.
type zklockSession struct{ c *zklock.Client }

// openZklock connects a zklock.Client.
func openZklock(_ context.Context, servers []string, sessionTimeout time.Duration) (goSession, error) {
	c, err := zklock.Connect(servers,
		zklock.WithSessionTimeout(sessionTimeout),
		zklock.WithConnectTimeout(connectTimeout),
		zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, fmt.Errorf("zklock connect: %w", err)
	}
	return zklockSession{c}, nil
}

// mutex implements goSession with a zklock.Mutex.
func (s zklockSession) mutex(path string) (locker, error) {
	m, err := zklock.NewMutex(s.c, path)
	if err != nil {
		return nil, fmt.Errorf("zklock mutex: %w", err)
	}
	return &zklockHolder{m: m}, nil
}

// semaphore implements goSession with a zklock.Semaphore.
func (s zklockSession) semaphore(path string, leases int) (locker, error) {
	sem, err := zklock.NewSemaphore(s.c, path, leases)
	if err != nil {
		return nil, fmt.Errorf("zklock semaphore: %w", err)
	}
	return &zklockLeaser{s: sem}, nil
}

// readLock implements goSession with a zklock.ReadWriteLock's read side.
func (s zklockSession) readLock(path string) (locker, error) {
	rw, err := zklock.NewReadWriteLock(s.c, path)
	if err != nil {
		return nil, fmt.Errorf("zklock read/write lock: %w", err)
	}
	return &zklockHolder{m: rw.ReadLock()}, nil
}

// leader implements goSession with a zklock.Election, of participant id
// "" (LeaderLatch's default).
func (s zklockSession) leader(path string) (locker, error) {
	e, err := zklock.NewElection(s.c, path, "")
	if err != nil {
		return nil, fmt.Errorf("zklock election: %w", err)
	}
	return &zklockCandidate{e: e}, nil
}

// floor implements goSession: the floor is go-zookeeper's raw create and
// delete alone.
func (s zklockSession) floor(string) (locker, error) {
	return nil, fmt.Errorf("zklock floor: %w", errUnsupported)
}

// close implements goSession: it closes the Client.
func (s zklockSession) close() error { return s.c.Close() }

// zklockHolder holds a zklock.Mutex (or a read side) through the context
// Acquire returns.
type zklockHolder struct {
	m    *zklock.Mutex
	hold context.Context
}

// acquire implements locker: the hold is the context Acquire returns.
func (h *zklockHolder) acquire(ctx context.Context) error {
	hold, err := h.m.Acquire(ctx)
	if err != nil {
		return err
	}
	h.hold = hold
	return nil
}

// release implements locker.
func (h *zklockHolder) release() error { return h.m.Release(h.hold) }

// zklockLeaser takes one lease of a zklock.Semaphore at a time.
type zklockLeaser struct {
	s     *zklock.Semaphore
	lease *zklock.Lease
}

// acquire implements locker: one lease.
func (l *zklockLeaser) acquire(ctx context.Context) error {
	lease, err := l.s.Acquire(ctx)
	if err != nil {
		return err
	}
	l.lease = lease
	return nil
}

// release implements locker: the lease goes back.
func (l *zklockLeaser) release() error { return l.lease.Release() }

// zklockCandidate campaigns in a zklock.Election, one Campaign at a time.
type zklockCandidate struct {
	e    *zklock.Election
	hold *zklock.Hold
}

// acquire implements locker: it campaigns until it leads.
func (c *zklockCandidate) acquire(ctx context.Context) error {
	h, err := c.e.Campaign(ctx)
	if err != nil {
		return err
	}
	c.hold = h
	return nil
}

// release implements locker: it resigns.
func (c *zklockCandidate) release() error { return c.hold.Release() }

// ---- go-zookeeper ------------------------------------------------------------

// zkSession is a plain go-zookeeper connection.
type zkSession struct {
	c      *zk.Conn
	events <-chan zk.Event
}

// nopLogger silences go-zookeeper.
type nopLogger struct{}

// Printf discards the message.
func (nopLogger) Printf(string, ...any) {}

// openZK connects a go-zookeeper connection and waits for its session.
func openZK(ctx context.Context, servers []string, sessionTimeout time.Duration) (goSession, error) {
	s, err := dialZK(ctx, servers, sessionTimeout)
	if err != nil {
		return nil, err // not a nil *zkSession in a goSession
	}
	return s, nil
}

// dialZK is openZK, with the connection's own type.
func dialZK(ctx context.Context, servers []string, sessionTimeout time.Duration) (*zkSession, error) {
	c, events, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zk connect: %w", err)
	}
	s := &zkSession{c: c, events: events}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, errors.New("zk connect: connection closed")
			}
			if ev.State == zk.StateHasSession {
				return s, nil
			}
		case <-ctx.Done():
			_ = s.close()
			return nil, fmt.Errorf("zk connect: no session: %w", ctx.Err())
		}
	}
}

// mutex implements goSession with a zk.Lock.
func (s *zkSession) mutex(path string) (locker, error) {
	return &zkLocker{l: zk.NewLock(s.c, path, zk.WorldACL(zk.PermAll))}, nil
}

// semaphore implements goSession: go-zookeeper has none.
func (s *zkSession) semaphore(string, int) (locker, error) {
	return nil, fmt.Errorf("zk semaphore: %w", errUnsupported)
}

// readLock implements goSession: go-zookeeper has none.
func (s *zkSession) readLock(string) (locker, error) {
	return nil, fmt.Errorf("zk read lock: %w", errUnsupported)
}

// leader implements goSession: go-zookeeper has no election.
func (s *zkSession) leader(string) (locker, error) {
	return nil, fmt.Errorf("zk election: %w", errUnsupported)
}

// floor implements goSession with a rawLocker.
func (s *zkSession) floor(path string) (locker, error) {
	if err := createParents(s.c, path); err != nil {
		return nil, err
	}
	return &rawLocker{c: s.c, path: path}, nil
}

// close closes the connection and waits (bounded) until go-zookeeper
// closes its event channel, which it does once its goroutines are done.
func (s *zkSession) close() error {
	s.c.Close()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("zk close: still running %v after Close", closeTimeout)
		}
	}
}

// zkLocker is a go-zookeeper zk.Lock. Lock cannot be cancelled: it returns
// when held or when its connection closes.
type zkLocker struct{ l *zk.Lock }

// acquire implements locker; it checks ctx only before it starts.
func (z *zkLocker) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return z.l.Lock()
}

// release implements locker.
func (z *zkLocker) release() error { return z.l.Unlock() }

// rawLocker is the floor: a raw ephemeral-sequential create, then its delete.
type rawLocker struct {
	c    *zk.Conn
	path string // the parent; it must exist
	node string
}

// acquire implements locker: one create.
func (r *rawLocker) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	node, err := r.c.Create(r.path+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return fmt.Errorf("create under %s: %w", r.path, err)
	}
	r.node = node
	return nil
}

// release implements locker: one delete.
func (r *rawLocker) release() error { return r.c.Delete(r.node, -1) }

// ---- sets of sessions ----------------------------------------------------------

// sessionSet is every session of one run, and the goroutines using them,
// so that both can be ended (bounded) however the run ends.
type sessionSet struct {
	mu       sync.Mutex
	sessions []goSession
	crews    []*crew
}

// add records s.
func (set *sessionSet) add(s goSession) {
	set.mu.Lock()
	defer set.mu.Unlock()
	set.sessions = append(set.sessions, s)
}

// newCrew returns a crew whose goroutines closeAll waits for.
func (set *sessionSet) newCrew() *crew {
	set.mu.Lock()
	defer set.mu.Unlock()
	c := newCrew()
	set.crews = append(set.crews, c)
	return c
}

// closeAll closes every session, a few at a time and the last opened
// first (so that a gate, opened first, outlives the waiters queued behind
// it), then waits for every crew; the whole within closeTimeout. Closing
// a session ends the waits on it, so crews finish even after a DNF.
func (set *sessionSet) closeAll() error {
	set.mu.Lock()
	sessions, crews := set.sessions, set.crews
	set.sessions, set.crews = nil, nil
	set.mu.Unlock()
	deadline := time.Now().Add(closeTimeout)
	queue := make(chan goSession, len(sessions))
	for i := len(sessions) - 1; i >= 0; i-- {
		queue <- sessions[i]
	}
	close(queue)
	errs := make(chan error, len(sessions))
	for range min(parallelConnects, len(sessions)) {
		go func() {
			for s := range queue {
				errs <- s.close()
			}
		}()
	}
	var all []error
	for range sessions {
		select {
		case err := <-errs:
			all = append(all, err)
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("closing %d sessions: still not done after %v", len(sessions), closeTimeout)
		}
	}
	for _, c := range crews {
		if !c.waitUntil(deadline) {
			return fmt.Errorf("goroutines still running %v after their sessions closed", closeTimeout)
		}
	}
	return errors.Join(all...)
}

// connectN opens n sessions with open, a few at a time, adding each to
// set (which closes them, whatever happens).
func connectN(ctx context.Context, open opener, servers []string, n int, timeout time.Duration, set *sessionSet) ([]goSession, error) {
	out := make([]goSession, n)
	errs := make([]error, n)
	limit := make(chan struct{}, parallelConnects)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-limit }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			s, err := open(ctx, servers, timeout)
			if err == nil {
				set.add(s)
			}
			out[i], errs[i] = s, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("connect %d sessions: %w", n, err)
	}
	return out, nil
}

// crew is a group of goroutines whose first error is kept.
type crew struct {
	wg       sync.WaitGroup
	failOnce sync.Once
	err      error         // the first error; set before failed is closed
	failed   chan struct{} // closed at the first error
	waitOnce sync.Once
	done     chan struct{} // closed once every goroutine has returned
}

// newCrew returns an empty crew not tracked by any session set.
func newCrew() *crew {
	return &crew{failed: make(chan struct{}), done: make(chan struct{})}
}

// spawn runs f on a new goroutine of the crew. Every spawn comes before
// the first wait.
func (c *crew) spawn(f func() error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := f(); err != nil {
			c.failOnce.Do(func() {
				c.err = err
				close(c.failed)
			})
		}
	}()
}

// watchDone closes c.done once every goroutine has returned.
func (c *crew) watchDone() {
	c.waitOnce.Do(func() {
		go func() { c.wg.Wait(); close(c.done) }()
	})
}

// wait waits until every goroutine has returned, one of them fails (the
// others are then left to closeAll), or ctx ends; it returns the first
// error, or ctx's.
func (c *crew) wait(ctx context.Context) error {
	c.watchDone()
	select {
	case <-c.done:
	case <-c.failed:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-c.failed:
		return c.err
	default:
		return nil
	}
}

// waitUntil waits until every goroutine has returned or deadline passes.
func (c *crew) waitUntil(deadline time.Time) bool {
	c.watchDone()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
		return false
	}
}
