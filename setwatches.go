package zklock

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file works around go-zookeeper's race on its last zxid
// (go-zookeeper issue #35). When go-zookeeper takes a session up again on
// a new connection, it reads its last zxid for the request that sets the
// session's watches again (set-watches), while its receiving loop already
// records the zxids of answers to requests sent meanwhile: the requests
// queued during the cut go out at once. Besides the race detector's
// report, a watch set again from a zxid too new misses a change the
// servers made during the cut (ZooKeeper fires a watch set again only for
// a change after that zxid). Java's client sends set-watches first.
//
// The Client's socket does as much (see hold): on a connection that takes
// up a session in which go-zookeeper holds watches, it keeps back what
// go-zookeeper writes after the connect request until the set-watches
// request, which go-zookeeper sends only after reading the zxid, then
// writes it all, in go-zookeeper's order. That a set-watches request will
// come is known from the guard watch (see guardConn), which the Client
// sends in a session with its first watch.
//
// What stays unordered: a Client of NewClient (whose socket is the
// caller's); a reconnect before the guard watch's answer came; and a
// set-watches request go-zookeeper takes longer than the late release to
// send, or, behind a close request, longer than closeHeld (see hold).

// closeHeld bounds how long a held close request waits for the set-watches
// request: well within the second go-zookeeper's Close waits for its reply.
const closeHeld = 400 * time.Millisecond

// Requests of go-zookeeper's that hold treats apart.
const (
	opClose      = -11
	opSetAuth    = 100
	opSetWatches = 101
)

// hold keeps b back if the socket is holding (see the top of this file),
// and writes what it kept once b is the set-watches request. A close
// request (which go-zookeeper may queue before its set-watches request)
// is kept for closeHeld at most: kept longer, go-zookeeper would give it
// up, and the session would stand until it expired. It reports whether
// it wrote or kept b; if not, Write writes it as usual.
//
// Only a connection that takes up the session in which go-zookeeper holds
// the Client's guard watch holds; a new session has no watches to set, and
// its socket opens with the connect request. The set-auth requests that
// go-zookeeper sends, and waits for, before any other pass while nothing
// is held (their answers carry no zxid). If no set-watches request comes
// (the guard watch fired, and go-zookeeper had no other watch: see
// sockets.event), the socket opens a tenth of the session timeout after
// it held its first request.
func (sk *socket) hold(b []byte) (n int, held bool, err error) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	switch op := opcodeOf(b); {
	case sk.open.Load():
		return 0, false, nil
	case !sk.greeted:
		sk.greeted = true
		sid, timeout := connectRequestOf(b)
		if sid == 0 || sid != sk.s.guarded.Load() {
			sk.released.Store(true)
			sk.open.Store(true)
		}
		sk.timeout = timeout
		return 0, false, nil
	case op == opSetAuth && len(sk.pending) == 0:
		return 0, false, nil
	case op == opSetWatches:
		sk.pending = append(sk.pending, b...)
		if err := sk.releaseLocked(); err != nil {
			return 0, true, err
		}
		return len(b), true, nil
	case op == opClose:
		// Held too, but not for long: go-zookeeper gives its close request
		// a second, then drops it and the session stands until it expires.
		// Its reply's zxid, recorded while go-zookeeper reads its last
		// zxid for set-watches, is the race this file is about.
		sk.pending = append(sk.pending, b...)
		if sk.late != nil {
			sk.late.Stop()
		}
		sk.late = time.AfterFunc(min(sk.timeout/10, closeHeld), sk.release)
		return len(b), true, nil
	default:
		if sk.late == nil {
			sk.late = time.AfterFunc(sk.timeout/10, sk.release)
		}
		sk.pending = append(sk.pending, b...)
		return len(b), true, nil
	}
}

// release opens the socket, writing what it held back.
func (sk *socket) release() {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.open.Load() {
		return
	}
	// go-zookeeper sets a write deadline before each write of its own, so
	// this one is left for the next to replace: cleared, it could clear
	// the one of a write waiting on sk.mu.
	sk.Conn.SetWriteDeadline(time.Now().Add(sk.timeout / 3))
	if err := sk.releaseLocked(); err != nil {
		sk.Conn.Close() // go-zookeeper hears of it from its next read
	}
}

// releaseLocked opens the socket and writes what it held back; sk.mu must
// be held.
func (sk *socket) releaseLocked() error {
	sk.released.Store(true)
	defer sk.open.Store(true)
	if sk.late != nil {
		sk.late.Stop()
	}
	b := sk.pending
	sk.pending = nil
	if len(b) == 0 {
		return nil
	}
	_, err := sk.Conn.Write(b)
	if err == nil && sk.s.awaited.Load() > 0 {
		sk.s.wrote(b)
	}
	return err
}

// opcodeOf returns the opcode of b, a request packet (length, xid,
// opcode, request), or 0.
func opcodeOf(b []byte) int32 {
	if len(b) < 12 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b[8:12]))
}

// connectRequestOf returns the session, and the session timeout, that b,
// a connect request, asks for: after the length come the protocol
// version, the last zxid, the timeout and the session.
func connectRequestOf(b []byte) (sid int64, timeout time.Duration) {
	if len(b) < 28 {
		return 0, 0
	}
	ms := int32(binary.BigEndian.Uint32(b[16:20]))
	return int64(binary.BigEndian.Uint64(b[20:28])), time.Duration(ms) * time.Millisecond
}

// guardPath is the node of the guard watch: ZooKeeper's own node, whose
// children (config, quota) nobody changes, and which cannot be deleted.
const guardPath = "/zookeeper"

// guardConn is the Client's connection when its sockets are in use: with
// the Client's first watch of a session, it sets the guard watch (a watch
// of guardPath's children, on the Client's own connection, counted by no
// wrapper), so that go-zookeeper holds a watch whenever it takes the
// session up again, and the socket knows that a set-watches request will
// come. It is set in the background, beside that first watch, at the cost
// of one request per session; a reconnect before it is set is not held
// (as before this file). A connection loss while setting it is tried
// again at the next watch; any other failure (the servers refuse to read
// guardPath) gives it up for the session, with a Debug record.
type guardConn struct {
	zkConn
	c *Client
}

// ChildrenW is zkConn's, after guard.
func (g guardConn) ChildrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	g.guard()
	return g.zkConn.ChildrenW(ctx, p)
}

// GetW is zkConn's, after guard.
func (g guardConn) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	g.guard()
	return g.zkConn.GetW(ctx, p)
}

// ExistsW is zkConn's, after guard.
func (g guardConn) ExistsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	g.guard()
	return g.zkConn.ExistsW(ctx, p)
}

// guard sets the guard watch in the current session, if it is neither set
// nor being set.
func (g guardConn) guard() {
	c, s := g.c, g.c.sockets
	sid := c.conn.SessionID()
	if sid == 0 || s.guarded.Load() == sid {
		return
	}
	fired, ok := s.arm(sid)
	if !ok {
		return
	}
	if !c.goFunc(func() {
		_, _, _, err := c.conn.ChildrenW(guardPath)
		set := err == nil && c.conn.SessionID() == sid
		again := !set && retryable(err)
		if !set && !again {
			c.log.Debug("zklock: guard watch not set; this session's reconnects are not held back", "err", err)
		}
		s.set(sid, fired, set, again)
	}) {
		s.set(sid, fired, false, true)
	}
}

// event notes ev, a go-zookeeper event: a change to guardPath's children
// fired the guard watch, to be set again at the next watch.
func (s *sockets) event(ev zk.Event) {
	if s == nil || ev.Path != guardPath || ev.Type != zk.EventNodeChildrenChanged {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fired++
	s.guarded.Store(0)
	s.arming = 0
}

// arm reports whether to set the guard watch in session sid (it is
// neither set, nor being set, nor given up), and how many times it had
// fired then.
func (s *sockets) arm(sid int64) (fired uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guarded.Load() == sid || s.arming == sid {
		return 0, false
	}
	s.arming = sid
	return s.fired, true
}

// set records that setting the guard watch in session sid, begun when it
// had fired fired times, has ended: with the watch set if ok and it has
// not fired since (a watch that fired before this is recorded is gone);
// to be tried again at the next watch if again, else given up for the
// session.
func (s *sockets) set(sid int64, fired uint64, ok, again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.arming != sid {
		return // the guard fired meanwhile, or another session's began
	}
	if ok && s.fired == fired {
		s.guarded.Store(sid)
	}
	if ok || again {
		s.arming = 0
	}
}
