package zksession_test

import (
	"errors"
	"fmt"
	"strings"
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
		if err := result(t, ch); zksession.CodeOf(err) != zkwire.CodeConnectionLoss {
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
	{"truncated notification", func(int32) []byte {
		b := zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: -1}.Encode(nil)
		b = zkwire.WatcherEvent{Type: zkwire.EventNodeCreated, State: zkwire.StateSyncConnected, Path: "/n"}.Encode(b)
		return withLength(b[:len(b)-1])
	}, isDecodeError},
	{"negative string length", func(xid int32) []byte {
		b := zkwire.ReplyHeader{Xid: xid, Zxid: 3}.Encode(nil)
		return withLength(zkwire.AppendInt32(b, -7))
	}, isDecodeError},
	{"short header", func(int32) []byte { return withLength([]byte{0, 0, 0, 1, 0, 0}) }, isDecodeError},
	{"negative length", func(int32) []byte { return zkwire.AppendInt32(nil, -1) }, isFrameSize},
}

func withLength(payload []byte) []byte {
	return append(zkwire.AppendInt32(nil, int32(len(payload))), payload...)
}

func isDecodeError(err error) bool {
	var d *zkwire.DecodeError
	return errors.As(err, &d)
}

func isFrameSize(err error) bool { return errors.Is(err, zkwire.ErrFrameSize) }

// A reply over MaxReply is read past: its request alone fails, with an
// error matching zkwire.ErrFrameSize, and the connection goes on (go
// -zookeeper read such a listing; the servers' limit is on requests).
func TestReplyOverMaxReplyFailsItsRequestAlone(t *testing.T) {
	fs := newFakeServer(t)
	s, fc := fs.dial(t, zksession.Config{MaxReply: 4096})
	big := getData(t, s, "/big")
	h, _ := fc.read()
	next := getData(t, s, "/next")
	h2, _ := fc.read()
	body := zkwire.ReplyHeader{Xid: h.Xid, Zxid: 7}.Encode(nil)
	body = append(body, make([]byte, 8192)...)
	if _, err := fc.nc.Write(withLength(body)); err != nil {
		t.Fatal(err)
	}
	fc.reply(zkwire.ReplyHeader{Xid: h2.Xid, Zxid: 8}, zkwire.GetDataResponse{Data: []byte("x")})
	if err := result(t, big); !isFrameSize(err) {
		t.Fatalf("GetData of a reply over MaxReply: %v, want ErrFrameSize", err)
	}
	if err := result(t, next); err != nil {
		t.Fatalf("the request behind it: %v", err)
	}
	if s.LastZxid() != 8 {
		t.Fatalf("LastZxid %d, want 8", s.LastZxid())
	}
}

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

// expect reads the next request and fails unless it has xid and op.
func expect(t *testing.T, fc *fakeConn, xid int32, op zkwire.OpCode) *zkwire.Decoder {
	t.Helper()
	h, d := fc.read()
	if h.Xid != xid || h.Type != op {
		t.Fatalf("request %d %v on the wire, want %d %v", h.Xid, h.Type, xid, op)
	}
	return d
}

var digest = []zksession.Auth{{Scheme: "digest", Auth: []byte("u:p")}}

// cut closes fc from the server's side and waits until the session
// has heard it.
func cut(t *testing.T, fc *fakeConn, st *states) {
	t.Helper()
	fc.nc.Close()
	st.await(t, zksession.StateDisconnected)
}

// Each connection sends, after its ConnectResponse, the auth packets,
// then SetWatches, then what was queued during the cut, in that order.
func TestReconnectWireOrder(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	s, fc := fs.dial(t, zksession.Config{Auth: digest, OnState: st.on})
	d := expect(t, fc, zkwire.XidAuth, zkwire.OpAuth)
	var auth zkwire.AuthPacket
	if err := auth.Decode(d); err != nil || auth.Scheme != "digest" || string(auth.Auth) != "u:p" {
		t.Fatalf("auth packet %+v, %v; want digest u:p", auth, err)
	}
	fc.reply(zkwire.ReplyHeader{Xid: zkwire.XidAuth}, nil)
	w := call(func() error { _, _, err := s.ExistsW(ctx(t), "/w"); return err })
	h, _ := fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 5, Err: zkwire.CodeNoNode}, nil)
	if err := result(t, w); !errors.Is(err, zksession.ErrNoNode) {
		t.Fatalf("ExistsW of a missing node: %v", err)
	}
	cut(t, fc, st)
	fc2 := fs.next(t)
	queued := getData(t, s, "/q")
	awaitQueued(t, s, 1)
	fc2.grant(1)
	expect(t, fc2, zkwire.XidAuth, zkwire.OpAuth)
	expect(t, fc2, zkwire.XidSetWatches, zkwire.OpSetWatches)
	h, _ = fc2.read()
	if h.Xid <= 0 || h.Type != zkwire.OpGetData {
		t.Fatalf("request %d %v after SetWatches, want the queued getData", h.Xid, h.Type)
	}
	fc2.reply(zkwire.ReplyHeader{Xid: zkwire.XidAuth}, nil)
	fc2.reply(zkwire.ReplyHeader{Xid: zkwire.XidSetWatches, Zxid: 5}, nil)
	fc2.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 6}, zkwire.GetDataResponse{})
	if err := result(t, queued); err != nil {
		t.Fatalf("GetData queued during the cut: %v", err)
	}
}

// A server that answers the auth packet with AuthFailed ends the
// session: calls fail with ErrAuthFailed, OnState hears AuthFailed, and
// no reconnection follows.
func TestAuthFailedIsTerminal(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	s, fc := fs.dial(t, zksession.Config{Auth: digest, OnState: st.on})
	expect(t, fc, zkwire.XidAuth, zkwire.OpAuth)
	inflight := getData(t, s, "/a")
	fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: zkwire.XidAuth, Err: zkwire.CodeAuthFailed}, nil)
	fc.nc.Close()
	if err := result(t, inflight); zksession.CodeOf(err) != zkwire.CodeAuthFailed {
		t.Fatalf("call in flight at the auth failure: %v, want ErrAuthFailed", err)
	}
	st.await(t, zksession.StateAuthFailed)
	if _, _, err := s.GetData(ctx(t), "/b"); zksession.CodeOf(err) != zkwire.CodeAuthFailed {
		t.Fatalf("call after the auth failure: %v, want ErrAuthFailed", err)
	}
	if !errors.Is(s.Err(), zksession.ErrAuthFailed) {
		t.Fatalf("Err() = %v, want ErrAuthFailed", s.Err())
	}
	select {
	case fc2 := <-fs.conns:
		t.Fatalf("session reconnected (session %#x) after an auth failure", fc2.req.SessionID)
	default:
	}
}

// A ConnectResponse naming another session at a reconnect is the
// session's expiry: it is never adopted.
func TestReconnectOtherSessionExpires(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	s, fc := fs.dial(t, zksession.Config{OnState: st.on})
	cut(t, fc, st)
	fs.next(t).grant(2)
	st.await(t, zksession.StateExpired)
	if id := s.SessionID(); id != 1 {
		t.Fatalf("SessionID() = %#x after a reconnect answered for 0x2, want 0x1", id)
	}
	if _, _, err := s.GetData(ctx(t), "/a"); zksession.CodeOf(err) != zkwire.CodeSessionExpired {
		t.Fatalf("call after the other session's answer: %v, want ErrSessionExpired", err)
	}
}

// watchMany sets an exist watch on n paths of about 1 KiB each through
// fc, the replies carrying zxids 101 to 100+n. It returns the paths.
func watchMany(t *testing.T, s *zksession.Session, fc *fakeConn, n int) map[string]bool {
	t.Helper()
	paths := map[string]bool{}
	var calls []<-chan error
	for i := range n {
		p := fmt.Sprintf("/w/%s%04d", strings.Repeat("x", 1000), i)
		paths[p] = true
		calls = append(calls, call(func() error { _, _, err := s.ExistsW(ctx(t), p); return err }))
	}
	for i := range n {
		h, _ := fc.read()
		fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: int64(101 + i), Err: zkwire.CodeNoNode}, nil)
	}
	for _, c := range calls {
		if err := result(t, c); !errors.Is(err, zksession.ErrNoNode) {
			t.Fatalf("ExistsW of a missing node: %v", err)
		}
	}
	return paths
}

// readSetWatches reads SetWatches frames from fc until another request,
// which it returns with the batches.
func readSetWatches(t *testing.T, fc *fakeConn) ([]zkwire.SetWatches, zkwire.RequestHeader) {
	t.Helper()
	var batches []zkwire.SetWatches
	for {
		h, d := fc.read()
		if h.Xid != zkwire.XidSetWatches {
			return batches, h
		}
		var sw zkwire.SetWatches
		if err := sw.Decode(d); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, sw)
	}
}

// Watches whose paths total over 128 KiB are set again in several
// SetWatches, each under 128 KiB of paths, all relative to the zxid of
// the last reply (not of a ping or a notification), before any queued
// request.
func TestSetWatchesBatches(t *testing.T) {
	const n = 200
	fs := newFakeServer(t)
	st := newStates()
	s, fc := fs.dial(t, zksession.Config{OnState: st.on})
	paths := watchMany(t, s, fc, n)
	fc.reply(zkwire.ReplyHeader{Xid: zkwire.XidPing, Zxid: 9000}, nil)
	fc.reply(zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: 9001},
		zkwire.WatcherEvent{Type: zkwire.EventNodeCreated, State: zkwire.StateSyncConnected, Path: "/other"})
	cut(t, fc, st)
	fc2 := fs.next(t)
	if fc2.req.LastZxidSeen != 100+n {
		t.Fatalf("reconnect sent last zxid %d, want %d", fc2.req.LastZxidSeen, 100+n)
	}
	queued := getData(t, s, "/q")
	awaitQueued(t, s, 1)
	fc2.grant(1)
	batches, h := readSetWatches(t, fc2)
	if h.Type != zkwire.OpGetData || len(batches) < 2 {
		t.Fatalf("%d SetWatches then %v, want several then the queued getData", len(batches), h.Type)
	}
	for _, sw := range batches {
		checkBatch(t, sw, paths, 100+n)
	}
	if len(paths) != 0 {
		t.Fatalf("%d watched paths in no SetWatches", len(paths))
	}
	for range batches {
		fc2.reply(zkwire.ReplyHeader{Xid: zkwire.XidSetWatches, Zxid: 300}, nil)
	}
	fc2.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 301}, zkwire.GetDataResponse{})
	if err := result(t, queued); err != nil {
		t.Fatalf("GetData queued during the cut: %v", err)
	}
}

// checkBatch checks one SetWatches and strikes its paths off paths.
func checkBatch(t *testing.T, sw zkwire.SetWatches, paths map[string]bool, zxid int64) {
	t.Helper()
	if sw.RelativeZxid != zxid || len(sw.DataWatches)+len(sw.ChildWatches) != 0 {
		t.Fatalf("SetWatches relative to %d with %d data, %d child watches; want %d, exist watches only",
			sw.RelativeZxid, len(sw.DataWatches), len(sw.ChildWatches), zxid)
	}
	size := 0
	for _, p := range sw.ExistWatches {
		if !paths[p] {
			t.Fatalf("SetWatches names %.20s... twice or unwatched", p)
		}
		delete(paths, p)
		size += len(p)
	}
	if size > 128*1024 {
		t.Fatalf("one SetWatches carries %d bytes of paths, over 128 KiB", size)
	}
}
