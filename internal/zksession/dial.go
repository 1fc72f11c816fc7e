package zksession

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/zklock/zklock/internal/zkwire"
)

// This file is one connection attempt: the dial, TLS when configured,
// and ZooKeeper's handshake, all bounded by one deadline.

// attempt is one connection attempt to addr, by deadline, which
// OnDial hears the outcome of.
func (s *Session) attempt(addr string, deadline time.Time) (*conn, error) {
	c, err := s.handshake(addr, deadline)
	if s.cfg.OnDial != nil {
		s.cfg.OnDial(addr, err)
	}
	return c, err
}

// handshake dials addr and sends the ConnectRequest (session id 0 for a
// new session, else the session's id, password and last zxid), then reads
// the ConnectResponse before anything else is written: a server that
// refuses the session closes the connection right after its answer, and a
// write of ours could make that a reset that loses the answer. Its
// errors name addr.
func (s *Session) handshake(addr string, deadline time.Time) (*conn, error) {
	s.attempts.Add(1) // before the dial: see ConnEpoch
	nc, err := s.open(addr, deadline)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	req := zkwire.ConnectRequest{LastZxidSeen: s.lastZxid, TimeOut: int32(s.cfg.SessionTimeout.Milliseconds()),
		SessionID: s.id, Passwd: s.passwd}
	s.mu.Unlock()
	frame, _ := zkwire.AppendFrame(nil, 0, req)
	c := &conn{nc: nc, addr: addr, br: bufio.NewReaderSize(nc, 64<<10)}
	sent := time.Now()
	_, err = nc.Write(frame)
	var resp zkwire.ConnectResponse
	if err != nil {
		err = fmt.Errorf("%s: %w", addr, err)
	} else if err = readConnectResponse(c.br, addr, sent, &resp); err == nil {
		err = s.accept(addr, resp, sent)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// dialer returns the default Dialer: net.DialTimeout's, with resolver
// (nil: net.DefaultResolver), which resolves the name at every dial.
func dialer(resolver *net.Resolver) Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout, Resolver: resolver}
		return d.Dial(network, address)
	}
}

// open dials addr and, with Config.TLS, runs the TLS handshake, by
// deadline, which it leaves set on the connection.
func (s *Session) open(addr string, deadline time.Time) (net.Conn, error) {
	nc, err := s.cfg.Dialer("tcp", addr, time.Until(deadline))
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return nil, fmt.Errorf("%s does not resolve: %w", addr, err)
		}
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if !s.track(nc) {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", addr, ErrClosed)
	}
	nc.SetDeadline(deadline)
	if s.cfg.TLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, tlsConfig(s.cfg.TLS, addr))
	start := time.Now()
	if err := tc.Handshake(); err != nil {
		nc.Close()
		if silence(err) {
			return nil, &silenceError{addr: addr, what: "the TLS handshake", d: since(start)}
		}
		return nil, s.tlsRefused(addr, deadline, err)
	}
	return tc, nil
}

// tlsRefused is the error of a TLS handshake with addr that failed with
// err. A server that answered with bytes that are no TLS record does not
// speak TLS. One that closed the connection (EOF, or a reset) may be a
// plaintext port (ZooKeeper reads the client hello as a request of
// impossible length and closes), or a TLS port closing at once (too many
// connections, a proxy without a backend): a probe in the clear, by
// deadline, tells them apart, an answer in TLS records counting as TLS.
// A server found not to speak TLS gets an error matching ErrNotTLS.
func (s *Session) tlsRefused(addr string, deadline time.Time, err error) error {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return &notTLSError{addr: addr, head: rh.RecordHeader[:], err: err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		if head := s.probeClear(addr, deadline); len(head) > 0 && !tlsRecord(head) {
			return &notTLSError{addr: addr, head: head, probed: true, err: err}
		}
	}
	return fmt.Errorf("%s: TLS handshake: %w", addr, err)
}

// tlsRecord reports whether head begins as a TLS record does (a content
// type from change_cipher_spec to application_data, then a major version
// of 3): a TLS port answers the probe in the clear with an alert, and
// speaks TLS.
func tlsRecord(head []byte) bool {
	return len(head) >= 2 && head[0] >= 0x14 && head[0] <= 0x17 && head[1] == 0x03
}

// probeClear sends addr, in the clear, ZooKeeper's four-letter word
// "srvr" and a newline (as `echo srvr | nc` sends it), which a ZooKeeper
// server answers with its version, or with a refusal when four-letter
// words are disabled. The newline makes it five bytes, a TLS record's
// header, so that a TLS port reads it at once as no TLS record and
// closes (with four it waits for the fifth), or answers with an alert. It
// returns the first bytes of the reply, none if the server closed the
// connection or said nothing by deadline.
func (s *Session) probeClear(addr string, deadline time.Time) []byte {
	nc, err := s.cfg.Dialer("tcp", addr, time.Until(deadline))
	if err != nil {
		return nil
	}
	defer nc.Close()
	if !s.track(nc) {
		return nil
	}
	nc.SetDeadline(deadline)
	if _, err := io.WriteString(nc, "srvr\n"); err != nil {
		return nil
	}
	head := make([]byte, 32)
	n, _ := nc.Read(head)
	return head[:n]
}

// The bounds of a ConnectResponse's length: protocol version, timeout,
// session id and an empty password make 20 (ZooKeeper's password has 16
// bytes, and a read-only flag may follow); a length outside these is not
// ZooKeeper's (an HTTP server's "HTTP" reads as 1.2 GB).
const (
	minConnectResponse = 20
	maxConnectResponse = 4096
)

// readConnectResponse reads the ConnectResponse from br into resp. Its
// errors say what addr did instead, sent being when it was asked: said
// nothing, closed the connection, or answered with something else.
func readConnectResponse(br *bufio.Reader, addr string, sent time.Time, resp *zkwire.ConnectResponse) error {
	var head [4]byte
	n, err := io.ReadFull(br, head[:])
	switch {
	case n == 0 && silence(err):
		return &silenceError{addr: addr, what: "ZooKeeper's handshake", d: since(sent)}
	case n == 0:
		return fmt.Errorf("%s accepted the connection, then %w before any ZooKeeper reply", addr, err)
	case err != nil:
		return &notZooKeeperError{addr: addr, head: head[:n]}
	}
	length := int32(binary.BigEndian.Uint32(head[:]))
	if length < minConnectResponse || length > maxConnectResponse {
		return &notZooKeeperError{addr: addr, head: head[:]}
	}
	payload := make([]byte, length)
	if _, err := io.ReadFull(br, payload); err != nil {
		return fmt.Errorf("%s: read its ConnectResponse: %w", addr, err)
	}
	if err := resp.Decode(zkwire.NewDecoder(payload, maxConnectResponse)); err != nil {
		return &notZooKeeperError{addr: addr, head: head[:], err: err}
	}
	return nil
}

// silence reports whether err ended a wait for an answer that did not
// come: the deadline passed, or the connection was closed under the read
// (Dial's context ended, or the session was closed).
func silence(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed)
}

// isTimeout reports whether err is a wait that ran out of time: a
// silence, or a dial or a name lookup that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// since returns the time since t, to the millisecond.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// tlsConfig returns a copy of conf for a connection to addr: its
// ServerName, unless conf sets one, is addr's host.
func tlsConfig(conf *tls.Config, addr string) *tls.Config {
	conf = conf.Clone()
	if conf.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		conf.ServerName = host
	}
	return conf
}

// track records nc as the connection being set up, for Close; false
// if the session has ended.
func (s *Session) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		return false
	}
	s.nc = nc
	return true
}

// accept takes addr's ConnectResponse: a timeout <= 0, or another session's
// id, is the session's expiry; a read-only session is refused.
func (s *Session) accept(addr string, resp zkwire.ConnectResponse, sent time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case resp.TimeOut <= 0:
		return fmt.Errorf("%s says: %w", addr, ErrSessionExpired)
	case s.id != 0 && resp.SessionID != s.id:
		return fmt.Errorf("%s answered with session %#x for %#x: %w", addr, resp.SessionID, s.id, ErrSessionExpired)
	case resp.ReadOnly:
		return fmt.Errorf("%s: %w", addr, ErrReadOnly)
	}
	s.id, s.passwd = resp.SessionID, resp.Passwd
	s.timeout.Store(int64(resp.TimeOut) * int64(time.Millisecond))
	s.recv.Store(int64(time.Since(s.epoch)))
	s.heard.Store(int64(sent.Sub(s.epoch)))
	s.state = StateConnected
	return nil
}
