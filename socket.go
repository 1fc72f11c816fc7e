package zklock

import (
	"encoding/binary"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-zookeeper/zk"
)

// sockets stands between go-zookeeper and the dialer of a connection that
// Connect opens (go-zookeeper's own, net.DialTimeout, or a caller's
// zk.WithDialer; see wrap): it keeps what was opened, for Close, tells
// when a create has been written (see written), and orders a session's
// new connection (see socket.hold).
type sockets struct {
	mu      sync.Mutex
	open    map[*socket]struct{}
	closed  bool                     // closeAll was called: no more dials
	creates map[string]chan struct{} // the paths of creates awaited, each closed once written (see written)

	awaited atomic.Int32 // len(creates), read by every write without mu

	guarded atomic.Int64 // the session in which go-zookeeper holds the guard watch (see guardConn)
	arming  int64        // the session whose guard watch is being set, or was given up
	fired   uint64       // how many times the guard watch fired (see sockets.event)
	wrapped bool         // wrap put s in place; set before the connection starts

	failed func(addr string, err error) // told of a failed handshake (see socket.check); set before the connection starts
}

// socket is a connection that sockets opened; closing it forgets it.
type socket struct {
	net.Conn
	s     *sockets
	addr  string    // the server's address, as go-zookeeper dialled it
	since time.Time // when it was dialled

	answered atomic.Bool // the connect response's length was read, and is ZooKeeper's
	hs       handshake   // read until answered

	// open is set once the socket writes as it is asked to; until then
	// it may hold back what go-zookeeper writes after the connect request
	// (see hold). Set under mu, after what was held is written; released
	// is set before it is (see Read).
	open, released atomic.Bool

	mu      sync.Mutex    // guards the fields below, and the writes of a socket not yet open
	greeted bool          // the connect request is written
	timeout time.Duration // the session timeout the connect request asks for
	pending []byte        // packets held back
	late    *time.Timer   // writes what is held back if no set-watches request comes
}

// wrap is a go-zookeeper option, given after the caller's, that puts s
// between go-zookeeper and the dialer then in effect. go-zookeeper has no
// way to read its dialer, so wrap reaches into its unexported field; if a
// version of go-zookeeper has none (TestSocketsWrapDialer says so), the
// dialer stays as it is and s opens nothing. It reports whether it wrapped.
func (s *sockets) wrap(zc *zk.Conn) bool {
	d := dialerOf(zc)
	if d == nil || *d == nil {
		return false
	}
	inner := *d
	*d = func(network, address string, timeout time.Duration) (net.Conn, error) {
		return s.dial(inner, network, address, timeout)
	}
	s.wrapped = true
	return true
}

// dialerOf returns go-zookeeper's dialer field of zc, or nil if it has none.
func dialerOf(zc *zk.Conn) *zk.Dialer {
	f := reflect.ValueOf(zc).Elem().FieldByName("dialer")
	if !f.IsValid() || f.Type() != reflect.TypeFor[zk.Dialer]() {
		return nil
	}
	return (*zk.Dialer)(unsafe.Pointer(f.UnsafeAddr()))
}

// dial dials with inner, and keeps the connection.
func (s *sockets) dial(inner zk.Dialer, network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := inner(network, address, timeout)
	if err != nil {
		return nil, err
	}
	sk := &socket{Conn: conn, s: s, addr: address, since: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		conn.Close()
		return nil, net.ErrClosed
	}
	s.open[sk] = struct{}{}
	return sk, nil
}

// closeAll closes every socket still open, and any dialed later.
func (s *sockets) closeAll() {
	s.mu.Lock()
	open := s.open
	s.open, s.closed = nil, true
	s.mu.Unlock()
	for sk := range open {
		sk.Conn.Close()
	}
}

// written returns a channel closed once a socket of s has written the
// create (go-zookeeper's Create: an unconditional, single create) of a
// node at p, and a function that forgets p, to call once the create has
// returned. A read sent after the channel is closed is served after the
// create: ZooKeeper serves one session's requests in the order it reads
// them. written returns nil if no socket of s is open (the connection is
// down), or s is nil (a Client of NewClient).
func (s *sockets) written(p string) (<-chan struct{}, func()) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) == 0 {
		return nil, nil
	}
	if s.creates == nil {
		s.creates = make(map[string]chan struct{})
	}
	ch := make(chan struct{})
	s.creates[p] = ch
	s.awaited.Add(1)
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.creates[p] == ch {
			delete(s.creates, p)
			s.awaited.Add(-1)
		}
	}
}

// wrote tells the waiters of creates that b, packets just written (one,
// or those a release wrote at once), holds them. A packet is the length,
// go-zookeeper's request header (xid, opcode) and the request; a create's
// request begins with its path.
func (s *sockets) wrote(b []byte) {
	for len(b) >= 4 {
		n := min(4+int(binary.BigEndian.Uint32(b[:4])), len(b))
		s.wroteOne(b[:n])
		b = b[n:]
	}
}

// wroteOne tells the waiter of a create that b, a packet, is that create.
func (s *sockets) wroteOne(b []byte) {
	const pathAt = 16 // length, xid, opcode, then the path's length
	if len(b) < pathAt || opcodeOf(b) != opCreate {
		return
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:16])))
	if n < 0 || pathAt+n > len(b) {
		return
	}
	p := b[pathAt : pathAt+n]
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.creates[string(p)]; ok {
		close(ch)
		delete(s.creates, string(p))
		s.awaited.Add(-1)
	}
}

// opCreate is ZooKeeper's opcode of a create (go-zookeeper's Create).
const opCreate = 1

// Write writes b, a packet (go-zookeeper writes each in one write), and
// tells a create's waiter that it has been written. On a socket not yet
// open it may hold b back (see hold).
func (sk *socket) Write(b []byte) (int, error) {
	if !sk.open.Load() {
		if n, held, err := sk.hold(b); held {
			return n, err
		}
	}
	n, err := sk.Conn.Write(b)
	if err == nil && sk.s.awaited.Load() > 0 {
		sk.s.wrote(b)
	}
	return n, err
}

// Read reads from the connection. What it reads after a release began
// (an answer to a request held back) comes after the release for the race
// detector too, not through the network alone: Read loads released,
// stored before the held requests are written. It never waits: a
// connection whose far end answers before it reads on (a pipe) would
// otherwise deadlock with a release's write. Until the length of the
// connect response has been read, Read checks that it is ZooKeeper's (see
// check).
func (sk *socket) Read(b []byte) (int, error) {
	n, err := sk.Conn.Read(b)
	_ = sk.released.Load()
	if !sk.answered.Load() {
		return sk.check(b[:n], err)
	}
	return n, err
}

// Close closes the socket and forgets it. The connection is closed first:
// a release under way (writing under sk.mu) then fails at once.
func (sk *socket) Close() error {
	sk.s.mu.Lock()
	delete(sk.s.open, sk)
	sk.s.mu.Unlock()
	err := sk.Conn.Close()
	sk.mu.Lock()
	if sk.late != nil {
		sk.late.Stop()
	}
	sk.mu.Unlock()
	return err
}
