package zksession_test

import (
	"context"
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
	fc.grantTimeout(1, int32(timeout.Milliseconds()))
	granted := time.Now()
	s := <-opened
	if s == nil {
		return
	}
	t.Cleanup(func() { fs.stop(); s.Close() })
	st.await(t, zksession.StateConnected)

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
