package zklock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessionState is the part of a Client that knows its connection: its
// state and session, their history (suspensions, losses, the outage) and
// who listens. Every field is guarded by mu, and written by the methods
// in this file only: the transitions (run and handle, from the session's
// events), and markClosed, which Close calls.
type sessionState struct {
	mu         sync.Mutex              // protects the fields below
	state      ConnectionState         // current state
	session    int64                   // current session id, 0 before the first
	negotiated time.Duration           // session timeout the server granted, 0 if unknown
	suspends   uint64                  // number of suspensions so far
	suspended  time.Time               // when the last suspension began
	losses     uint64                  // number of session losses so far
	changed    chan struct{}           // closed and replaced at every transition
	up         context.Context         // cancelled when the connection leaves Connected or Reconnected (see tryConnected)
	upCancel   context.CancelCauseFunc // cancels up
	outage     outage                  // the current outage, while up is cancelled
	closeBound time.Time               // set by Close: see pastCloseBound
	listeners  map[*listener]struct{}  // active Listen callbacks
}

func (s *sessionState) init() {
	s.state, s.changed, s.listeners = StateSuspended, make(chan struct{}), make(map[*listener]struct{})
	s.up, s.upCancel = context.WithCancelCause(context.Background())
}

// startedAt sets the state of a Client that is not shared yet: st, of
// session sid (StateConnected to a wrapped connection's session, or
// StateClosed from the start, as a NewClient of nil).
func (c *Client) startedAt(st ConnectionState, sid int64) {
	c.state, c.session = st, sid
	c.setUpLocked() // not shared yet: no lock needed
}

// markClosed moves the Client to StateClosed, for Close, and sets how
// long it keeps deleting its nodes (see closeBoundLocked).
func (c *Client) markClosed() {
	c.transition(func() bool {
		c.closeBound = c.closeBoundLocked()
		c.state = StateClosed
		return true
	})
}

// ConnectionState is the state of a Client's ZooKeeper session, as Curator
// reports it. Its String method gives the name.
type ConnectionState int

const (
	// StateConnected is the state after the first session is established.
	StateConnected ConnectionState = iota
	// StateSuspended means the connection dropped; the session may still be
	// alive on the server. A Client that has not connected yet also reports
	// StateSuspended.
	StateSuspended
	// StateReconnected means the connection is back, with the same session
	// or, after a StateLost, with a new one.
	StateReconnected
	// StateLost means the session is gone: the server reported it expired,
	// the connection stayed suspended for longer than the Client trusts a
	// suspended session (a third of the session timeout less a tenth, as
	// [SessionPolicy] explains), or the connection came back with a new
	// session.
	StateLost
	// StateClosed is the final state, after Close.
	StateClosed
)

// String returns the name of the state, such as "Suspended".
func (s ConnectionState) String() string {
	switch s {
	case StateConnected:
		return "Connected"
	case StateSuspended:
		return "Suspended"
	case StateReconnected:
		return "Reconnected"
	case StateLost:
		return "Lost"
	case StateClosed:
		return "Closed"
	}
	return fmt.Sprintf("ConnectionState(%d)", int(s))
}

// State returns the current connection state.
func (c *Client) State() ConnectionState {
	if c.zero() {
		return StateClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Listen calls fn with the current connection state, then with every
// change, in order, on a goroutine of its own, so a slow fn delays no one
// else. A listener added after Connect thus first sees StateConnected (or
// whatever the state is by then), and one added before the first session
// of a NewClient sees StateSuspended. The final call is with StateClosed.
// On a Client that is already closed, fn is never called. stop ends the
// calls; it does not wait for a call in progress, so it may be called from
// fn. Close waits for fn to return, so fn must not call Close.
func (c *Client) Listen(fn func(ConnectionState)) (stop func()) {
	if fn == nil || c.zero() {
		return func() {}
	}
	l := &listener{fn: fn, signal: make(chan struct{}, 1), stop: make(chan struct{})}
	c.mu.Lock()
	closed := c.state == StateClosed
	if !closed {
		c.listeners[l] = struct{}{}
		l.push(c.state) // under c.mu: before any later change
	}
	c.mu.Unlock()
	if closed || !c.goFunc(l.run) {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.listeners, l)
			c.mu.Unlock()
			close(l.stop)
		})
	}
}

// Ping reports whether the Client can serve recipes now. It returns nil
// when the Client is connected with a session and a round trip to its
// server (a sync, which the server passes on to the ensemble's leader)
// succeeds before ctx is done. Otherwise it returns at once, or when ctx
// is done, with an error that says why: ErrClosed after Close;
// ErrNotConnected before the first session, while the connection is
// suspended, or once the session is lost; ctx.Err() when the round trip
// took too long; or the server's error. Ping does not wait for a
// reconnection, and leaves nothing behind: a round trip still in flight
// when ctx ends is abandoned.
func (c *Client) Ping(ctx context.Context) error {
	if ctx == nil {
		return errorf(ErrInvalidArgument, "ping: nil context")
	}
	if err := c.usable(); err != nil {
		return wrapf(err, "ping")
	}
	if err := c.notConnected(); err != nil {
		return err
	}
	if _, err := await(c, ctx, func() (string, error) { return c.zc.Sync(ctx, "/") }, nil); err != nil {
		return wrapf(closedErr(err), "ping")
	}
	return c.notConnected() // the state may have changed meanwhile
}

// notConnected returns why the Client has no usable session, or nil.
func (c *Client) notConnected() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.notConnectedLocked()
	if c.state == StateSuspended && !c.beforeFirstSessionLocked() {
		err = errorf(ErrNotConnected, "connection suspended for %v", time.Since(c.suspended).Round(time.Millisecond))
	}
	if err != nil {
		return wrapf(err, "ping")
	}
	return nil
}

// notConnectedLocked returns why the Client has no usable session, or
// nil; c.mu must be held.
func (c *Client) notConnectedLocked() error {
	switch {
	case c.state == StateClosed:
		return ErrClosed
	case c.state == StateLost:
		return errorf(ErrNotConnected, "session 0x%x lost", c.session)
	case c.state == StateSuspended && c.beforeFirstSessionLocked():
		return errorf(ErrNotConnected, "no session yet")
	case c.state == StateSuspended:
		return errorf(ErrNotConnected, "connection suspended")
	}
	return nil
}

// setUpLocked keeps c.up in step with the state: a live context while
// the connection is up (Connected or Reconnected), cancelled with why it
// is not otherwise; an outage begins when c.up is cancelled. c.mu must be
// held (or c not yet shared).
func (c *Client) setUpLocked() {
	if c.state == StateConnected || c.state == StateReconnected {
		if c.up.Err() != nil {
			c.up, c.upCancel = context.WithCancelCause(context.Background())
		}
		return
	}
	if c.up.Err() == nil {
		c.outage = outage{since: time.Now()}
	}
	c.upCancel(c.notConnectedLocked())
}

// outage is the span during which the connection is not up: from when it
// left Connected or Reconnected (or from the Client's making, before its
// first session) until it is up again.
type outage struct {
	since  time.Time // when it began
	waited bool      // an acquire has logged its wait for the connection (see waitLogged)
}

// waitLogged logs that an acquire of the lock at p (a full path) waits
// for the connection, if the connection is down and no acquire has said
// so in this outage: one record at Info per outage, beside the
// connection's own records, however many acquires wait, naming the first
// one's lock and how long the connection has been down. A blocking
// acquire waits for the connection for as long as its context allows, as
// etcd's concurrency package does; the retry policy does not bound it.
func (c *Client) waitLogged(p string) {
	c.mu.Lock()
	first := !c.outage.waited && (c.state == StateSuspended || c.state == StateLost)
	if first {
		c.outage.waited = true
	}
	state, since := c.state, c.outage.since
	c.mu.Unlock()
	if first {
		c.log.Info("zklock: not connected: acquires wait for the connection", "path", c.relPath(p), "state", state.String(),
			"for", time.Since(since).Round(time.Millisecond))
	}
}

// offline returns err, the error of an acquire with ctx, as one that also
// wraps why the Client is not connected (ErrNotConnected) and says for
// how long, if err is ctx's own and the Client is not connected now: the
// acquire ended while it waited for the connection, not (only) for the
// lock, and its timeout must not read as a busy lock's. Any other err,
// and one that says so already, is returned as it is.
func (c *Client) offline(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) || errors.Is(err, ErrNotConnected) {
		return err
	}
	c.mu.Lock()
	why, since := c.notConnectedLocked(), c.outage.since
	c.mu.Unlock()
	if why == nil || errors.Is(why, ErrClosed) {
		return err
	}
	return &wrapError{msg: fmt.Sprintf("%s; not connected for %v (%s)", err, time.Since(since).Round(time.Millisecond), unprefixed(why)),
		errs: []error{err, why}}
}

// tryConnected runs f, a Try acquire, under a context derived from ctx
// that is also cancelled, with a cause wrapping ErrNotConnected (or
// ErrClosed), as soon as the connection is no longer up, so that a Try
// never waits for a connection. If the connection is not up now, it
// returns why at once, without running f. It returns f's error, or the
// connection's loss if that is what ended f (not ctx).
func (c *Client) tryConnected(ctx context.Context, f func(context.Context) error) error {
	c.mu.Lock()
	up, why := c.up, c.notConnectedLocked()
	c.mu.Unlock()
	if up.Err() != nil {
		return cmp.Or(why, context.Cause(up))
	}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	stop := context.AfterFunc(up, func() { cancel(context.Cause(up)) })
	defer stop()
	err := f(tctx)
	if err == nil || ctx.Err() != nil || tctx.Err() == nil {
		return err
	}
	if cause := context.Cause(tctx); errors.Is(cause, ErrNotConnected) || errors.Is(cause, ErrClosed) {
		return cause
	}
	return err
}

// errSessionChanged means that the session some nodes belonged to is gone.
var errSessionChanged = errors.New("zklock: session lost")

// awaitConnected waits until the connection is up. With a session s (not
// 0) it returns errSessionChanged once s is lost or replaced: the nodes of
// s are then gone. With a bound d (not 0) it returns
// context.DeadlineExceeded after d. It also returns ctx's error, or
// ErrClosed. Unbounded, it still ends: a suspension ends within the session
// timeout, with a reconnect or with the Client declaring the session lost.
func (c *Client) awaitConnected(ctx context.Context, s int64, d time.Duration) error {
	return c.awaitConnectedFor(ctx, s, d, "")
}

// awaitConnectedFor is awaitConnected for an acquire of the lock at p (a
// full path; "" for none): if it has to wait, it says so first (see
// waitLogged).
func (c *Client) awaitConnectedFor(ctx context.Context, s int64, d time.Duration, p string) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	for {
		c.mu.Lock()
		state, session, ch := c.state, c.session, c.changed
		c.mu.Unlock()
		switch {
		case state == StateClosed:
			return ErrClosed
		case s != 0 && (state == StateLost || session != s):
			return errSessionChanged
		case state == StateConnected || state == StateReconnected:
			return nil
		}
		if p != "" {
			c.waitLogged(p)
			p = ""
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closing:
			return ErrClosed
		case <-timeout:
			return context.DeadlineExceeded
		}
	}
}

// createdIn returns the session that owns our ephemeral node at p, whose
// create began while go-zookeeper's session was sid: sid, if that is
// still its session (then it was so throughout: a session id never
// comes back), else the node's owner as ZooKeeper reports it (the session
// changed during the create). A node found gone is errNodeGone.
func (c *Client) createdIn(ctx context.Context, p string, sid int64) (int64, error) {
	if sid != 0 && c.zc.SessionID() == sid {
		return sid, nil
	}
	st, err := c.stat(ctx, p)
	switch {
	case err != nil:
		return 0, err
	case st == nil:
		return 0, errNodeGone
	}
	return st.EphemeralOwner, nil
}

// awaitSession waits until the Client's view of its session is s, with
// the connection up, and returns the state then: a decision about a node
// of s must rest on a state of s. It returns errNodeGone once
// go-zookeeper has a session other than s (the nodes of s are gone), and
// ctx's error or ErrClosed.
func (c *Client) awaitSession(ctx context.Context, s int64) (snapshot, error) {
	for {
		c.mu.Lock()
		state, session, ch := c.state, c.session, c.changed
		snap := snapshot{c.session, c.suspends, c.losses}
		c.mu.Unlock()
		switch {
		case state == StateClosed:
			return snapshot{}, ErrClosed
		case session == s && (state == StateConnected || state == StateReconnected):
			return snap, nil
		case c.zc.SessionID() != s:
			return snapshot{}, errNodeGone
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return snapshot{}, ctx.Err()
		case <-c.closing:
			return snapshot{}, ErrClosed
		}
	}
}

// snapshot records the session facts a hold depends on.
type snapshot struct {
	session  int64
	suspends uint64
	losses   uint64
}

func (c *Client) snapshot() snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return snapshot{c.session, c.suspends, c.losses}
}

// stateChanged returns a channel that is closed at the next transition.
func (c *Client) stateChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// holdLost reports why a hold taken at snapshot s no longer stands under
// the Client's error policy, or nil if it still stands.
func (c *Client) holdLost(s snapshot) error {
	return c.sessionFacts().lost(s)
}

// sessionFacts are what decides whether a hold still stands: the
// Client's state, session and counts of suspensions and losses, and its
// error policy.
type sessionFacts struct {
	state    ConnectionState
	session  int64
	suspends uint64
	losses   uint64
	policy   ErrorPolicy
}

func (c *Client) sessionFacts() sessionFacts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sessionFacts{c.state, c.session, c.suspends, c.losses, c.opts.policy}
}

// lost reports why a hold taken at snapshot s no longer stands, or nil.
func (f sessionFacts) lost(s snapshot) error {
	switch {
	case f.state == StateClosed:
		return errLostClosed
	case f.losses != s.losses || f.session != s.session:
		return kindOf(ErrLockLost, errLossSession)
	case f.policy == StandardPolicy && f.suspends != s.suspends:
		return kindOf(ErrLockLost, errLossSuspended)
	}
	return nil
}

// sessionTimeout is the negotiated session timeout if known, else the
// requested one.
func (c *Client) sessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionTimeoutLocked()
}

// sessionTimeoutLocked is sessionTimeout; c.mu must be held.
func (c *Client) sessionTimeoutLocked() time.Duration {
	if c.negotiated > 0 {
		return c.negotiated
	}
	return c.opts.sessionTimeout
}

// transition applies f under c.mu and, if f reports a change, wakes
// waiters and queues the new state for listeners.
func (c *Client) transition(f func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == StateClosed || !f() {
		return
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.setUpLocked()
	for l := range c.listeners {
		l.push(c.state)
	}
	c.log.Info("zklock: connection state", "state", c.state.String(), "session", fmt.Sprintf("0x%x", c.session))
}

// start launches the goroutine that owns session events.
func (c *Client) start() {
	c.startObserver()
	c.goFunc(c.run)
}

// run is the only reader of session events. It never blocks on listeners.
func (c *Client) run() {
	var (
		signal <-chan struct{}
		events = c.zkEvents
		lostT  *time.Timer
		lostC  <-chan time.Time
	)
	if c.queue != nil {
		signal, events = c.queue.signal, nil
	}
	stopLost := func() {
		if lostT != nil {
			lostT.Stop()
			lostT, lostC = nil, nil
		}
	}
	defer stopLost()
	handle := func(ev zk.Event) {
		c.holds.event(ev)
		suspended := c.handle(ev)
		c.holds.sweep()
		if suspended && lostT == nil {
			lostT = time.NewTimer(suspendedTrust(c.sessionTimeout()))
			lostC = lostT.C
		} else if !suspended && c.State() != StateSuspended {
			stopLost()
		}
	}
	for {
		select {
		case <-c.closing:
			return
		case <-signal:
			for _, ev := range c.queue.drain() {
				handle(ev)
			}
		case ev, ok := <-events:
			if !ok {
				// The owner closed the wrapped connection: its session and
				// our nodes are gone, and nothing can be done any more.
				c.transition(func() bool { return c.lose() })
				c.end()
				c.holds.sweep()
				return
			}
			handle(ev)
		case <-lostC:
			lostT, lostC = nil, nil
			c.transition(func() bool {
				if c.state != StateSuspended {
					return false
				}
				c.log.Warn("zklock: suspended for longer than the session may outlive; session lost")
				return c.lose()
			})
			c.holds.sweep()
		}
	}
}

// suspendedTrust is how long after a suspension the Client still trusts a
// session of timeout t, for SessionPolicy. The servers may expire the
// session t after they last heard from us. zklock's own session reports
// the connection down two thirds of t after the server last heard it (the
// newest request or ping it answered was written then: see
// internal/zksession), so the session may be gone a third of t after the
// suspension. A tenth of t is kept back for the next owner's hand-off. A
// connection that breaks at once (a reset, a server that lost its quorum)
// cannot be told apart from a silent one, so the same bound holds for it.
// go-zookeeper (NewClient) counts two thirds of t from the last byte it
// read instead, which a server that keeps sending notifications while it
// no longer hears us can push past its expiry: that bound is weaker.
func suspendedTrust(t time.Duration) time.Duration {
	return t/3 - t/10
}

// handle applies one go-zookeeper event. It reports whether the event
// suspended the connection.
func (c *Client) handle(ev zk.Event) (suspended bool) {
	if ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrSessionExpired) {
		c.transition(func() bool { return c.lose() })
		return false
	}
	if ev.Type != zk.EventSession {
		return false
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := c.zc.SessionID()
		c.own.negotiated()
		var recheckSince time.Time
		defer func() {
			if !recheckSince.IsZero() {
				c.cleanup(func() { c.recheckDeletes(recheckSince) })
			}
		}()
		// go-zookeeper may replace an expired session without a word (a
		// caller's channel drops events when full): the old session is
		// lost first, so that listeners see Lost before Reconnected.
		c.transition(func() bool {
			return !c.beforeFirstSessionLocked() && sid != c.session && c.lose()
		})
		c.transition(func() bool {
			switch {
			case c.beforeFirstSessionLocked():
				c.session, c.state = sid, StateConnected
			case sid != c.session:
				c.session, c.state = sid, StateReconnected
			case c.state == StateSuspended || c.state == StateLost:
				c.state = StateReconnected
				recheckSince = c.suspended.Add(-c.sessionTimeoutLocked())
			default:
				return false
			}
			return true
		})
	case zk.StateDisconnected, zk.StateConnecting:
		c.transition(func() bool {
			if c.state != StateConnected && c.state != StateReconnected {
				return false
			}
			c.state = StateSuspended
			c.suspended = time.Now()
			c.suspends++
			suspended = true
			return true
		})
	case zk.StateExpired:
		c.transition(func() bool { return c.lose() })
		c.own.expired()
	case zk.StateAuthFailed:
		c.log.Error("zklock: authentication failed")
		if c.own != nil { // zklock's own session ends with the refusal
			c.transition(func() bool { return c.lose() })
		}
	}
	return suspended
}

// beforeFirstSessionLocked reports whether the Client has had no session
// yet; c.mu must be held.
func (c *Client) beforeFirstSessionLocked() bool {
	return c.session == 0 && c.losses == 0
}

// lose marks the session lost; c.mu must be held. It reports whether the
// state changed.
func (c *Client) lose() bool {
	if c.state == StateLost {
		return false
	}
	c.state = StateLost
	c.losses++
	return true
}

// setNegotiated records the session timeout the server granted.
func (c *Client) setNegotiated(d time.Duration) {
	c.mu.Lock()
	c.negotiated = d
	c.mu.Unlock()
}

// eventQueue takes go-zookeeper's callbacks without ever blocking them.
type eventQueue struct {
	mu     sync.Mutex
	events []zk.Event // guarded by mu
	signal chan struct{}
}

func newEventQueue() *eventQueue {
	return &eventQueue{signal: make(chan struct{}, 1)}
}

func (q *eventQueue) push(ev zk.Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *eventQueue) drain() []zk.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.events
	q.events = nil
	return evs
}

// listener delivers states to one Listen callback, in order.
type listener struct {
	fn     func(ConnectionState)
	mu     sync.Mutex
	states []ConnectionState // guarded by mu
	signal chan struct{}
	stop   chan struct{}
}

func (l *listener) push(s ConnectionState) {
	l.mu.Lock()
	l.states = append(l.states, s)
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

func (l *listener) run() {
	for {
		select {
		case <-l.stop:
			return
		case <-l.signal:
		}
		l.mu.Lock()
		states := l.states
		l.states = nil
		l.mu.Unlock()
		for _, s := range states {
			select {
			case <-l.stop:
				return
			default:
			}
			l.fn(s)
			if s == StateClosed {
				return
			}
		}
	}
}

// zkLogger routes go-zookeeper's log lines to the Client's logger, at
// Debug.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
}

// closeBoundLocked is how long after Close the Client keeps deleting its
// nodes on a connection it does not own: until the session cannot be alive
// any more if the connection stays down, a session timeout after it went
// down (or after Close, if it is up). c.mu must be held.
func (c *Client) closeBoundLocked() time.Time {
	from := time.Now()
	if c.state == StateSuspended || c.state == StateLost {
		from = c.suspended
	}
	return from.Add(c.sessionTimeoutLocked())
}

// pastCloseBound reports whether the Client was closed and its close bound
// has passed.
func (c *Client) pastCloseBound() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == StateClosed && time.Now().After(c.closeBound)
}
