package zksession_test

import (
	"errors"
	"testing"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// getData starts a GetData of path on its own goroutine.
func getData(t *testing.T, s *zksession.Session, path string) <-chan error {
	return call(func() error { _, _, err := s.GetData(ctx(t), path); return err })
}

// A reply whose xid is not the head of the FIFO ends the connection:
// every call in flight fails with connection loss, and the session comes
// back on a new connection with the same id and password.
func TestXidOutOfOrderReconnects(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	s, fc := fs.dial(t, zksession.Config{OnState: st.on})
	a := getData(t, s, "/a")
	fc.read()
	b := getData(t, s, "/b")
	h, _ := fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 7}, zkwire.GetDataResponse{})
	for _, ch := range []<-chan error{a, b} {
		if err := result(t, ch); !errors.Is(err, zksession.ErrConnectionLoss) {
			t.Fatalf("call in flight after an out-of-order reply: %v, want connection loss", err)
		}
	}
	fc2 := fs.next(t)
	if fc2.req.SessionID != 1 || string(fc2.req.Passwd) != "0123456789abcdef" {
		t.Fatalf("reconnect sent session %#x password %q, want the session's", fc2.req.SessionID, fc2.req.Passwd)
	}
	fc2.grant(1)
	st.await(t, zksession.StateDisconnected)
	st.await(t, zksession.StateConnected)
	c := getData(t, s, "/c")
	h, _ = fc2.read()
	fc2.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 8}, zkwire.GetDataResponse{Data: []byte("c")})
	if err := result(t, c); err != nil {
		t.Fatalf("GetData after the reconnect: %v", err)
	}
}

// badFrames are frames a server must never send, each with the cause
// the call in flight must carry.
var badFrames = []struct {
	name  string
	frame func(xid int32) []byte
	cause func(error) bool
}{
	{"truncated body", func(xid int32) []byte {
		b := zkwire.ReplyHeader{Xid: xid, Zxid: 3}.Encode(nil)
		b = zkwire.AppendBuffer(b, []byte("data"))
		return withLength(b[:len(b)-2])
	}, isDecodeError},
	{"short header", func(int32) []byte { return withLength([]byte{0, 0, 0, 1, 0, 0}) }, isDecodeError},
	{"negative length", func(int32) []byte { return zkwire.AppendInt32(nil, -1) }, isFrameSize},
	{"over MaxFrame", func(int32) []byte { return zkwire.AppendInt32(nil, 8192) }, isFrameSize},
}

func withLength(payload []byte) []byte {
	return append(zkwire.AppendInt32(nil, int32(len(payload))), payload...)
}

func isDecodeError(err error) bool {
	var d *zkwire.DecodeError
	return errors.As(err, &d)
}

func isFrameSize(err error) bool { return errors.Is(err, zkwire.ErrFrameSize) }

// A reply that does not decode, or a frame of a bad length, ends the
// connection with an error saying so, never a panic; the session then
// reconnects.
func TestBadReplyEndsConnection(t *testing.T) {
	for _, tc := range badFrames {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t)
			s, fc := fs.dial(t, zksession.Config{MaxFrame: 4096})
			a := getData(t, s, "/a")
			h, _ := fc.read()
			if _, err := fc.nc.Write(tc.frame(h.Xid)); err != nil {
				t.Fatal(err)
			}
			if err := result(t, a); err == nil || !tc.cause(err) {
				t.Fatalf("GetData answered with a bad frame: %v", err)
			}
			if fc2 := fs.next(t); fc2.req.SessionID != 1 {
				t.Fatalf("reconnect asked for session %#x, want 0x1", fc2.req.SessionID)
			}
		})
	}
}
