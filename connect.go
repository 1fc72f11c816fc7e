package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	c.holds.routed = true // node events come through OnEvent
	c.dials = newDialWatch(c.log, len(addrs))
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
	c.own, c.watchers = s, &sync.WaitGroup{}
	c.zc = sessConn{s: s, watchers: c.watchers}
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
// it, the credentials were refused, or the connect timeout passed.
func (c *Client) connectError(addrs []string, err error) error {
	list := strings.Join(addrs, ",")
	if rerr := c.dials.allRefused(); rerr != nil {
		return &wrapError{msg: fmt.Sprintf("zklock: connect %s: %s", list, rerr), errs: []error{zk.ErrNoServer, rerr}}
	}
	if errors.Is(err, zksession.ErrAuthFailed) {
		return &wrapError{msg: fmt.Sprintf("zklock: connect %s: %s", list, err), errs: []error{zk.ErrAuthFailed, err}}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return &wrapError{msg: fmt.Sprintf("zklock: connect %s: %s", list, err), errs: []error{zk.ErrNoServer, err}}
	}
	msg := fmt.Sprintf("zklock: connect %s: no session within %v", list, c.opts.connectTimeout)
	if last := c.dials.lastErrors(nil); last != "" {
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
		return c.own.ConnEpoch()
	}
	return 0
}
