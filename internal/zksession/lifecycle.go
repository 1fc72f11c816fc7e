package zksession

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zklock/zklock/internal/zkwire"
)

// This file is the session's states: the loop that serves connection
// after connection, the loss of one, the reconnection within the
// session, its terminal end, and Close.

// run serves c, then each connection after it, until the session ends,
// and then announces the end (whoever ended it: Close may have).
func (s *Session) run(c *conn) {
	defer s.wg.Done()
	defer func() { s.announce(s.State()) }()
	for {
		err := s.serve(c)
		if s.closing.Load() {
			s.finish(ErrClosed)
			return
		}
		if terminalErr(err) {
			s.finish(err)
			return
		}
		s.lose(err)
		if c, err = s.reconnect(); err != nil {
			s.finish(err)
			return
		}
	}
}

// terminalErr reports whether err ends the session.
func terminalErr(err error) bool {
	return errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrAuthFailed) || errors.Is(err, ErrClosed)
}

// lose fails every request queued or in flight with connection loss,
// once each, and reports the session disconnected. Requests made from now
// on wait for the next connection.
func (s *Session) lose(cause error) {
	s.mu.Lock()
	s.state = StateDisconnected
	s.mu.Unlock()
	s.failAll(func(r *request) error {
		return &Error{Op: r.op, Path: r.path, Code: zkwire.CodeConnectionLoss, Err: cause}
	})
	s.announce(StateDisconnected)
}

// reconnect tries the servers in turn, each at once after the one before
// and with a jittered pause after each round over them all (cut short by
// the expiry), until one takes the session back, the session expires (a
// server says so, or none has been heard for 4T/3), or it is closed.
func (s *Session) reconnect() (*conn, error) {
	for i := 0; ; i++ {
		expiry := s.epoch.Add(time.Duration(s.recv.Load()) + 4*s.Timeout()/3)
		if i > 0 && i%len(s.servers) == 0 && !sleep(s.quit, min(pause(i/len(s.servers)), time.Until(expiry))) {
			return nil, ErrClosed
		}
		if !time.Now().Before(expiry) {
			return nil, fmt.Errorf("no server heard for 4/3 of the session timeout: %w", ErrSessionExpired)
		}
		deadline := time.Now().Add(s.Timeout() / time.Duration(len(s.servers)))
		if expiry.Before(deadline) {
			deadline = expiry
		}
		c, err := s.attempt(s.nextServer(), deadline)
		if err == nil || terminalErr(err) {
			return c, err
		}
		if s.closing.Load() {
			return nil, ErrClosed
		}
	}
}

// finish ends the session with why (an error matching ErrSessionExpired
// or ErrAuthFailed, or ErrClosed), once: every request fails with it, every
// watch hears it and the connection closes. The reader goroutine then
// announces the end, as it leaves run.
func (s *Session) finish(why error) {
	st, ks := StateClosed, zkwire.StateClosed
	switch {
	case errors.Is(why, ErrSessionExpired):
		st, ks = StateExpired, zkwire.StateExpired
	case errors.Is(why, ErrAuthFailed):
		st, ks = StateAuthFailed, zkwire.StateAuthFailed
	}
	s.mu.Lock()
	if s.end != nil {
		s.mu.Unlock()
		return
	}
	s.end, s.state = why, st
	if s.nc != nil {
		s.nc.Close()
	}
	close(s.quit)
	s.mu.Unlock()
	s.failAll(func(r *request) error { return sessionError(r.op, r.path, why) })
	s.watches.end(ks)
}

// closeWait bounds how long Close waits for the server to answer its
// closeSession.
const closeWait = 2 * time.Second

// Close ends the session: when connected, it asks the server to close it
// (closeSession, so its ephemeral nodes go at once) and waits for the
// answer at most T/3 (and at most 2 s); then it fails whatever is still
// queued or in flight with ErrClosed, ends every watch, and returns once
// every goroutine of the Session has ended. It is idempotent and returns
// nil; after an expiry it only waits for the goroutines.
func (s *Session) Close() error {
	if s.closing.Swap(true) {
		s.wg.Wait()
		return nil
	}
	if s.State() == StateConnected {
		ctx, cancel := context.WithTimeout(context.Background(), min(s.Timeout()/3, closeWait))
		if r, err := newRequest(zkwire.OpCloseSession, "", 0, nil, nil, 0); err == nil {
			s.call(ctx, r)
		}
		cancel()
	}
	s.finish(ErrClosed)
	s.wg.Wait()
	return nil
}
