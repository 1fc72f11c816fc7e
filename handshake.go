package zklock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// errNotZooKeeper is why a server's address is given up on: it answered
// the connect request with bytes that are no ZooKeeper connect response.
var errNotZooKeeper = errors.New("answered, but not as ZooKeeper")

// The bounds of a connect response's length: protocol version, timeout,
// session id and a password of 16 bytes make 36 (37 with the read-only
// flag); a length outside these is not ZooKeeper's, and go-zookeeper
// would allocate whatever it says (an HTTP server's "HTTP" reads as 1.2
// GB).
const (
	minConnectResponse = 20
	maxConnectResponse = 4096
)

// handshake follows the start of a socket's first reply, the connect
// response: only go-zookeeper's reader touches it, and only until answered.
type handshake struct {
	head [4]byte // the reply's first bytes: its length
	n    int     // bytes of head read
}

// check looks at what a Read before the connect response's length was
// known returned (b, err) and returns what the Read returns: the same, or
// an error wrapping errNotZooKeeper, which go-zookeeper takes as a failed
// handshake and which the Client reports (see sockets.failed).
func (sk *socket) check(b []byte, err error) (int, error) {
	hs := &sk.hs
	hs.n += copy(hs.head[hs.n:], b)
	if hs.n < len(hs.head) {
		if err != nil {
			sk.s.report(sk.addr, fmt.Errorf("%s accepted the connection, then %w before any ZooKeeper reply", sk.addr, err))
		}
		return len(b), err
	}
	length := int32(binary.BigEndian.Uint32(hs.head[:]))
	if length < minConnectResponse || length > maxConnectResponse {
		bad := fmt.Errorf("%s %w: its reply began %s", sk.addr, errNotZooKeeper, strconv.Quote(string(hs.head[:])))
		sk.s.report(sk.addr, bad)
		return 0, bad
	}
	sk.answered.Store(true)
	return len(b), err
}

// report hands a failed handshake to the Client, if it listens.
func (s *sockets) report(addr string, err error) {
	if s.failed != nil {
		s.failed(addr, err)
	}
}

// unanswered describes the sockets open that have not had their connect
// response, for an error when no session came: a server that accepts
// connections and says nothing.
func (s *sockets) unanswered() []error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for sk := range s.open {
		if !sk.answered.Load() {
			errs = append(errs, fmt.Errorf("%s accepted the connection but has not answered ZooKeeper's handshake in %v", sk.addr, time.Since(sk.since).Round(time.Millisecond)))
		}
	}
	return errs
}
