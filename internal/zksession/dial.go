package zksession

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/zklock/zklock/internal/zkwire"
)

// This file is one connection attempt: the dial, TLS when configured,
// and ZooKeeper's handshake, all bounded by one deadline.

// handshake dials addr and sends the ConnectRequest (session id 0 for a
// new session, else the session's id, password and last zxid), then reads
// the ConnectResponse before anything else is written: a server that
// refuses the session closes the connection right after its answer, and a
// write of ours could make that a reset that loses the answer.
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
	if _, err := nc.Write(frame); err != nil {
		nc.Close()
		return nil, err
	}
	payload, err := zkwire.ReadFrame(c.br, nil, s.cfg.MaxFrame)
	var resp zkwire.ConnectResponse
	if err == nil {
		err = resp.Decode(zkwire.NewDecoder(payload, s.cfg.MaxFrame))
	}
	if err == nil {
		err = s.accept(resp)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// open dials addr and, with Config.TLS, runs the TLS handshake, by
// deadline, which it leaves set on the connection.
func (s *Session) open(addr string, deadline time.Time) (net.Conn, error) {
	nc, err := s.cfg.Dialer("tcp", addr, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	if !s.track(nc) {
		nc.Close()
		return nil, ErrClosed
	}
	nc.SetDeadline(deadline)
	if s.cfg.TLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, tlsConfig(s.cfg.TLS, addr))
	if err := tc.Handshake(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: TLS handshake: %w", addr, err)
	}
	return tc, nil
}

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

// accept takes a ConnectResponse: a timeout <= 0, or another session's
// id, is the session's expiry; a read-only session is refused.
func (s *Session) accept(resp zkwire.ConnectResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case resp.TimeOut <= 0:
		return fmt.Errorf("server says: %w", ErrSessionExpired)
	case s.id != 0 && resp.SessionID != s.id:
		return fmt.Errorf("server answered with session %#x for %#x: %w", resp.SessionID, s.id, ErrSessionExpired)
	case resp.ReadOnly:
		return ErrReadOnly
	}
	s.id, s.passwd = resp.SessionID, resp.Passwd
	s.timeout.Store(int64(resp.TimeOut) * int64(time.Millisecond))
	s.recv.Store(int64(time.Since(s.epoch)))
	s.state = StateConnected
	return nil
}
