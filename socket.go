package zklock

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// sockets is the dialer of a connection that Connect opens: go-zookeeper's
// own (net.DialTimeout), except that it keeps what it opened, for Close,
// and tells when a create has been written (see written).
type sockets struct {
	mu      sync.Mutex
	open    map[*socket]struct{}
	closed  bool                     // closeAll was called: no more dials
	creates map[string]chan struct{} // the paths of creates awaited, each closed once written (see written)

	awaited atomic.Int32 // len(creates), read by every write without mu
}

// socket is a connection that sockets opened; closing it forgets it.
type socket struct {
	net.Conn
	s *sockets
}

// dial is a zk.Dialer.
func (s *sockets) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	sk := &socket{Conn: conn, s: s}
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
// them. written returns nil if no socket of s is open (the Client's
// connection is a caller's dialer's, or down), or s is nil (a Client of
// NewClient).
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

// wrote tells the waiter of a create that b, a packet just written, is
// that create. A packet is the length, go-zookeeper's request header (xid,
// opcode) and the request; a create's request begins with its path.
func (s *sockets) wrote(b []byte) {
	const pathAt = 16 // length, xid, opcode, then the path's length
	if len(b) < pathAt || binary.BigEndian.Uint32(b[8:12]) != opCreate {
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
// tells a create's waiter that it has been written.
func (sk *socket) Write(b []byte) (int, error) {
	n, err := sk.Conn.Write(b)
	if err == nil && sk.s.awaited.Load() > 0 {
		sk.s.wrote(b)
	}
	return n, err
}

// Close closes the socket and forgets it.
func (sk *socket) Close() error {
	sk.s.mu.Lock()
	delete(sk.s.open, sk)
	sk.s.mu.Unlock()
	return sk.Conn.Close()
}
