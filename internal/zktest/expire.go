package zktest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Session is a ZooKeeper session's credentials, as its server's connect
// response hands them to the client: enough to attach to the session
// from another connection, as Curator's KillSession does.
type Session struct {
	ID       int64
	Password []byte
	Timeout  time.Duration // as the server granted it
	Server   string        // the server that granted it
}

// helloCap bounds what a proxy keeps of a connection's first reply: a
// connect response is 37 bytes (36 before ZooKeeper 3.4's read-only flag).
const helloCap = 64

// hello collects the start of one connection's server-to-client stream,
// up to its first frame: the connect response.
type hello struct {
	buf  []byte
	done bool
}

// add takes the next bytes from the server and reports the session once
// the connect response is complete (ok false before, and after).
func (h *hello) add(b []byte) (Session, bool) {
	if h.done {
		return Session{}, false
	}
	h.buf = append(h.buf, b[:min(len(b), helloCap-len(h.buf))]...)
	if len(h.buf) < 4 {
		return Session{}, false
	}
	n := int(binary.BigEndian.Uint32(h.buf))
	if n > helloCap-4 || n < 4+8+4 {
		h.done = true // not a connect response we know
		return Session{}, false
	}
	if len(h.buf) < 4+n {
		return Session{}, false
	}
	h.done = true
	s, err := parseConnectResponse(h.buf[4 : 4+n])
	return s, err == nil && s.ID != 0
}

// parseConnectResponse reads ZooKeeper's ConnectResponse: protocol
// version, timeout (ms), session id, password (length-prefixed).
func parseConnectResponse(b []byte) (Session, error) {
	if len(b) < 4+4+8+4 {
		return Session{}, errors.New("short connect response")
	}
	timeout := int32(binary.BigEndian.Uint32(b[4:]))
	id := int64(binary.BigEndian.Uint64(b[8:]))
	pl := int(int32(binary.BigEndian.Uint32(b[16:])))
	if pl < 0 || len(b) < 20+pl {
		return Session{}, errors.New("bad password length in connect response")
	}
	return Session{ID: id, Password: append([]byte(nil), b[20:20+pl]...), Timeout: time.Duration(timeout) * time.Millisecond}, nil
}

// sessionLog keeps the last session a proxy saw granted.
type sessionLog struct {
	mu   sync.Mutex
	last Session
}

func (l *sessionLog) set(s Session) {
	l.mu.Lock()
	l.last = s
	l.mu.Unlock()
}

func (l *sessionLog) get() Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// ExpireSession ends session s on the servers, as Curator's KillSession
// does: it attaches to the session from a connection of its own to
// s.Server, with the session's id and password, and closes it there. The
// servers then delete the session's ephemeral nodes at once. ZooKeeper
// closes the client's connection to the session's server when another
// connection attaches to the session, so its client sees a disconnection
// first, and learns that the session expired only when it next reaches
// a server; [Faults.ExpireSession] tells the client of the expiry first,
// as KillSession does.
func ExpireSession(ctx context.Context, s Session) error {
	if s.ID == 0 {
		return errors.New("zktest: expire session: no session seen yet")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Server)
	if err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: %w", s.ID, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(defaultWaitTimeout))
	}
	if err := attachAndClose(conn, s); err != nil {
		return fmt.Errorf("zktest: expire session 0x%x at %s: %w", s.ID, s.Server, err)
	}
	return nil
}

// attachAndClose sends a connect request for s on conn and, once the
// server accepts it, a closeSession request, and waits for its reply.
func attachAndClose(conn net.Conn, s Session) error {
	req := make([]byte, 0, 64)
	req = binary.BigEndian.AppendUint32(req, 0) // length, set below
	req = binary.BigEndian.AppendUint32(req, 0) // protocol version
	req = binary.BigEndian.AppendUint64(req, 0) // last zxid seen
	req = binary.BigEndian.AppendUint32(req, uint32(s.Timeout/time.Millisecond))
	req = binary.BigEndian.AppendUint64(req, uint64(s.ID))
	req = binary.BigEndian.AppendUint32(req, uint32(len(s.Password)))
	req = append(req, s.Password...)
	req = append(req, 0) // not read-only
	binary.BigEndian.PutUint32(req, uint32(len(req)-4))
	if _, err := conn.Write(req); err != nil {
		return err
	}
	resp, err := readFrame(conn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	got, err := parseConnectResponse(resp)
	switch {
	case err != nil:
		return err
	case got.ID != s.ID:
		return errors.New("the session has already expired")
	}
	var closeSession int32 = -11 // opcode
	var closeReq []byte
	closeReq = binary.BigEndian.AppendUint32(closeReq, 8)
	closeReq = binary.BigEndian.AppendUint32(closeReq, 1) // xid
	closeReq = binary.BigEndian.AppendUint32(closeReq, uint32(closeSession))
	if _, err := conn.Write(closeReq); err != nil {
		return err
	}
	if _, err := readFrame(conn); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("close session: %w", err)
	}
	return nil
}

// readFrame reads one length-prefixed frame.
func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	l := int32(binary.BigEndian.Uint32(n[:]))
	if l < 0 || l > maxFrame {
		return nil, fmt.Errorf("bad frame length %d", l)
	}
	b := make([]byte, l)
	_, err := io.ReadFull(r, b)
	return b, err
}

// expiryDrain bounds how long, once a session has been ended, a proxied
// connection of it waits for its server to close it (ZooKeeper does at
// once) before the proxy stops reading from the server and tells the
// client.
const expiryDrain = 2 * time.Second

// expiry is one Faults.ExpireSession under way. The proxied connections
// of the session it ends hold their client's side open until its outcome
// is known, so that the client can be told of the expiry before its
// connection closes.
type expiry struct {
	done    chan struct{} // closed once the session has been ended, or failed to be
	expired bool          // the session was ended; written before done is closed
}

// expiredEvent is the frame a proxy injects to tell its client that its
// session expired, as a server sends a watcher notification (see
// ZooKeeper's zookeeper.jute): a ReplyHeader (xid -1, a notification;
// zxid -1, as servers give notifications; err 0), then a WatcherEvent
// (type -1, None: a session event, go-zookeeper's zk.EventSession; state
// -112, Expired, zk.StateExpired; path "", not null, which go-zookeeper
// cannot read).
var expiredEvent = func() []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, struct {
		Length, Xid int32
		Zxid        int64
		Err         int32
		Type, State int32
		PathLength  int32
	}{Length: 4 + 8 + 4 + 4 + 4 + 4, Xid: -1, Zxid: -1, Type: -1, State: -112})
	return b.Bytes()
}()

// expire ends s with end (ExpireSession, or a test's stand-in) and tells
// the session's connections through f's proxies that it expired (see
// Faults.ExpireSession).
func (f *Faults) expire(ctx context.Context, s Session, end func(context.Context, Session) error) error {
	e := &expiry{done: make(chan struct{})}
	if s.ID != 0 {
		for _, p := range f.proxies {
			p.holdClients(s.ID, e)
		}
	}
	err := end(ctx, s)
	e.expired = err == nil
	close(e.done)
	for _, p := range f.proxies {
		p.settle(e)
	}
	return err
}

// holdClients makes e hold the client's side of p's open connections of
// session sid open until e's outcome is known. A connection held by an
// earlier expiry stays with it: of two at once, the first ends the
// session and tells the client, and the other fails.
func (p *Proxy) holdClients(sid int64, e *expiry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		if pc.sid == sid && pc.expiry == nil && pc.ctx.Err() == nil {
			pc.expiry = e
		}
	}
}

// settle acts on the outcome of e, now known, on the connections it
// holds: if the session was ended, each is to be told once its server has
// closed it (which expiryDrain bounds); if not, the hold ends.
func (p *Proxy) settle(e *expiry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		switch {
		case pc.expiry != e:
		case !e.expired:
			pc.expiry = nil
		case pc.upstream != nil:
			pc.upstream.SetReadDeadline(time.Now().Add(expiryDrain))
		}
	}
}

// tellExpiry runs once pc's server-to-client pipe has forwarded all the
// server sent: if an expiry holds pc, it waits for its outcome and, if
// the session was ended, writes expiredEvent to pc's client, provided
// what was written to it ends at a frame boundary after the connect
// response. It tells nothing if pc is cut or closed meanwhile. While the
// proxy is paused, the event waits for Resume.
func (p *Proxy) tellExpiry(pc *proxyConn) {
	p.mu.Lock()
	e := pc.expiry
	p.mu.Unlock()
	if e == nil {
		return
	}
	select {
	case <-e.done:
	case <-pc.ctx.Done():
		return
	}
	if !e.expired || pc.wrote.frames == 0 || !pc.wrote.atBoundary() || !p.waitResumed(pc, false) {
		return
	}
	pc.client.Write(expiredEvent) // an error: the client is gone, and is told nothing
}
