package zksession_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// TestServerThatNeverHearsUsTimesOut: a server that keeps sending
// notifications but answers no ping has not heard from the session, and
// may expire it T after it last did. The connection must be given up
// 2T/3 after the last answer, however many bytes still arrive (it was
// kept as long as they did, when the read timeout counted any byte).
func TestServerThatNeverHearsUsTimesOut(t *testing.T) {
	const timeout = 900 * time.Millisecond
	fs := newFakeServer(t)
	st := newStates()
	s, fc := dialGranted(t, fs, st, timeout, 0)
	if s == nil {
		return
	}
	granted := time.Now()

	// Notifications for 4T, answering nothing.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		b := zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: -1}.Encode(nil)
		b = zkwire.WatcherEvent{Type: zkwire.EventNodeDataChanged, State: zkwire.StateSyncConnected, Path: "/busy"}.Encode(b)
		frame := withLength(b)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for end := time.After(4 * timeout); ; {
			select {
			case <-stop:
				return
			case <-end:
				return
			case <-tick.C:
				if _, err := fc.nc.Write(frame); err != nil {
					return
				}
			}
		}
	}()
	st.await(t, zksession.StateDisconnected)
	if took := time.Since(granted); took > timeout {
		t.Fatalf("disconnected %v after the server last answered, want 2T/3 (%v) and no later than T (%v)", took, 2*timeout/3, timeout)
	}
}

// dialGranted opens a session on fs that the server grants with timeout,
// after a delay (the fault: a server slow to answer the handshake). It
// returns nil if the dial failed (the test has failed then).
func dialGranted(t *testing.T, fs *fakeServer, st *states, timeout, delay time.Duration) (*zksession.Session, *fakeConn) {
	t.Helper()
	opened := make(chan *zksession.Session, 1)
	go func() {
		c, cancel := context.WithTimeout(context.Background(), fakeWait)
		defer cancel()
		s, err := zksession.Dial(c, []string{fs.ln.Addr().String()}, zksession.Config{OnState: st.on, SessionTimeout: timeout})
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	fc := fs.next(t)
	time.Sleep(delay)
	fc.grantTimeout(1, int32(timeout.Milliseconds()))
	s := <-opened
	if s != nil {
		t.Cleanup(func() { fs.stop(); s.Close() })
		st.await(t, zksession.StateConnected)
	}
	return s, fc
}

// TestSlowHandshakeKeepsHealthyConnection: a server slow to grant the
// session (a part of T/3, or close to T/2), then answering every ping
// within a tenth of T, serves a healthy idle connection, which must be
// kept for 3T. The read timeout counts from the ConnectRequest's write;
// when the first ping was timed from the handshake's end instead, it came
// too late and the connection was given up (the review of 339b751).
func TestSlowHandshakeKeepsHealthyConnection(t *testing.T) {
	const timeout = 900 * time.Millisecond
	for _, tc := range []struct{ grant, answer time.Duration }{
		{timeout * 45 / 100, 0},
		{timeout / 4, timeout / 10},
	} {
		t.Run(fmt.Sprintf("grant after %v, pings answered after %v", tc.grant, tc.answer), func(t *testing.T) {
			fs := newFakeServer(t)
			st := newStates()
			s, fc := dialGranted(t, fs, st, timeout, tc.grant)
			if s == nil {
				return
			}
			go answerPings(fc, tc.answer)
			end := time.After(3 * timeout)
			for {
				select {
				case got := <-st.ch:
					if got == zksession.StateDisconnected {
						t.Fatal("a healthy idle connection was given up")
					}
				case <-end:
					return
				}
			}
		})
	}
}

// answerPings answers each ping fc reads, after delay, until the
// connection ends.
func answerPings(fc *fakeConn, delay time.Duration) {
	reply := withLength(zkwire.ReplyHeader{Xid: zkwire.XidPing}.Encode(nil))
	for {
		fc.nc.SetReadDeadline(time.Now().Add(fakeWait))
		payload, err := zkwire.ReadFrame(fc.nc, nil, 0)
		var h zkwire.RequestHeader
		if err != nil || h.Decode(zkwire.NewDecoder(payload, 0)) != nil {
			return
		}
		if h.Xid == zkwire.XidPing {
			time.Sleep(delay) // the server's answer time
			if _, err := fc.nc.Write(reply); err != nil {
				return
			}
		}
	}
}
