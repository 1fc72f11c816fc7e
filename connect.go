package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// connectOwn is Connect on zklock's own session: it dials, waits for the
// session up to the connect timeout, or less once every server has refused,
// and starts the Client on it.
func connectOwn(addrs []string, o options) (*Client, error) {
	c := newClient(o)
	c.ownsConn = true
	c.queue = newEventQueue()
	c.routeHolds() // node events come through OnEvent
	c.dials = newDialWatch(c.log, len(slices.Compact(slices.Sorted(slices.Values(addrs)))))
	ctx, cancel := context.WithTimeout(context.Background(), o.connectTimeout)
	defer cancel()
	cfg := zksession.Config{
		SessionTimeout: o.sessionTimeout,
		Dialer:         zksession.Dialer(o.dialer),
		TLS:            o.tls,
		OnEvent:        c.sessionEvent,
		OnDial: func(addr string, err error) {
			if err == nil {
				c.dials.connected(addr)
				return
			}
			c.dials.failed(addr, err)
			if c.dials.allRefused() != nil {
				cancel()
			}
		},
	}
	for _, a := range o.auth {
		cfg.Auth = append(cfg.Auth, zksession.Auth{Scheme: a.scheme, Auth: a.auth})
	}
	s, err := zksession.Dial(ctx, addrs, cfg)
	if err != nil {
		registered(c, false) // never returned, so never closed
		return nil, c.connectError(addrs, err)
	}
	c.own = &ownSession{c: c, addrs: addrs, cfg: cfg}
	c.own.session.Store(s)
	c.zc = sessConn{c.own}
	if o.wrapConn != nil {
		c.zc = o.wrapConn(c.zc)
	}
	c.setNegotiated(s.Timeout())
	c.start()
	if err := c.awaitFirstSession(addrs); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connectError explains why Dial gave no session: every server refused
// it, or the connect timeout passed. (Credentials are answered after the
// session is granted: a refusal comes later, as the Client's loss.)
func (c *Client) connectError(addrs []string, err error) error {
	list := strings.Join(addrs, ",")
	if rerr := c.dials.allRefused(); rerr != nil {
		return &wrapError{msg: fmt.Sprintf("zklock: connect %s: %s", list, rerr), errs: []error{zk.ErrNoServer, rerr}}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return &wrapError{msg: fmt.Sprintf("zklock: connect %s: %s", list, err), errs: []error{zk.ErrNoServer, err}}
	}
	msg := fmt.Sprintf("zklock: connect %s: no session within %v", list, c.opts.connectTimeout)
	if last := c.dials.lastErrors(); last != "" {
		msg += " (" + last + ")"
	}
	return &wrapError{msg: msg + ": " + zk.ErrNoServer.Error(), errs: []error{zk.ErrNoServer, context.DeadlineExceeded}}
}

// sessionEvent is the session's OnEvent: it hands every state change and
// every watch notification, in the order the session saw them, to the
// Client's event queue, in go-zookeeper's words. It never blocks.
func (c *Client) sessionEvent(ev zksession.Event) {
	if ev.Type != zkwire.EventNone {
		c.queue.push(eventOf(ev))
		return
	}
	var state zk.State
	switch ev.State {
	case zkwire.StateSyncConnected:
		state = zk.StateHasSession
	case zkwire.StateDisconnected:
		state = zk.StateDisconnected
	case zkwire.StateExpired:
		state = zk.StateExpired
	case zkwire.StateAuthFailed:
		state = zk.StateAuthFailed
	default:
		return // Closed: Close says so itself
	}
	c.queue.push(zk.Event{Type: zk.EventSession, State: state})
}

// connEpoch identifies the connection of the Client's session: it changes
// whenever another connection begins to be opened. Equal values read
// before a request is sent and after its reply came mean that the request
// and its reply travelled on one connection. 0 means unknown: a Client on
// a go-zookeeper connection.
func (c *Client) connEpoch() uint64 {
	if c.own != nil {
		return c.own.connEpoch()
	}
	return 0
}

// ownSession is a Connect Client's session, and the next one: ZooKeeper
// never revives an expired session, so after an expiry the Client opens a
// new one, as Curator does (the Client reports Lost, then Reconnected with
// the new session). Every call goes to the current session.
type ownSession struct {
	c       *Client
	addrs   []string
	cfg     zksession.Config
	session atomic.Pointer[zksession.Session]

	mu       sync.Mutex // protects the fields below
	closed   bool       // close has begun: no session may be opened
	renewing turn       // a renewal is under way
	gen      uint64     // sessions opened before the current one
}

// cur returns the current session.
func (o *ownSession) cur() *zksession.Session { return o.session.Load() }

// connEpoch is the current session's ConnEpoch, made unique across
// sessions.
func (o *ownSession) connEpoch() uint64 {
	o.mu.Lock()
	gen := o.gen
	o.mu.Unlock()
	return gen<<40 | o.cur().ConnEpoch()
}

// negotiated tells the Client the current session's timeout; nothing for
// a Client on go-zookeeper (o nil), which does not say.
func (o *ownSession) negotiated() {
	if o != nil {
		o.c.setNegotiated(o.cur().Timeout())
	}
}

// expired starts opening a new session, unless one is being opened or
// the Client is closing (or o is nil: a Client on go-zookeeper). It never
// blocks.
func (o *ownSession) expired() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || !o.renewing.take() {
		return
	}
	if !o.c.goFunc(o.renew) {
		o.renewing.done()
	}
}

// renew opens another session in place of the expired one, trying the
// servers until one grants it or the Client closes, then closes the
// expired one: until then, calls on it fail as expired (not as closed,
// which would say the Client is).
func (o *ownSession) renew() {
	old := o.cur()
	defer old.Close() // Session.Close is idempotent: close may have closed it too
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-o.c.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		g := &eventGate{next: o.c.sessionEvent}
		cfg := o.cfg
		cfg.OnEvent = g.event
		s, err := zksession.Dial(ctx, o.addrs, cfg)
		if err == nil {
			o.mu.Lock()
			closed := o.closed
			if !closed {
				o.session.Store(s)
				o.gen++
			}
			o.renewing.done()
			o.mu.Unlock()
			if closed {
				s.Close()
				return
			}
			g.open() // the Client reads the new session's id from the current one
			return
		}
		if ctx.Err() != nil {
			return
		}
		o.c.log.Warn("zklock: no new session yet; trying again", "err", err)
	}
}

// eventGate holds a new session's events until it is the current one,
// then hands them on in order: the Client reads the id of the session an
// event is about from the current session.
type eventGate struct {
	next func(zksession.Event)

	mu     sync.Mutex
	opened bool
	held   []zksession.Event
}

func (g *eventGate) event(ev zksession.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.opened {
		g.held = append(g.held, ev)
		return
	}
	g.next(ev)
}

// open hands on what was held, and every event from now on.
func (g *eventGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opened = true
	for _, ev := range g.held {
		g.next(ev)
	}
	g.held = nil
}

// close closes the current session; no other is opened after it.
func (o *ownSession) close() {
	o.mu.Lock()
	o.closed = true
	s := o.cur()
	o.mu.Unlock()
	s.Close()
}
