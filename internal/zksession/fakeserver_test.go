package zksession_test

import (
	"context"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// fakeWait bounds every wait on the fake server.
const fakeWait = 5 * time.Second

// A fakeServer accepts connections and hands each to the test, its
// ConnectRequest read and not yet answered, on conns.
type fakeServer struct {
	ln    net.Listener
	conns chan *fakeConn
	mu    sync.Mutex
	open  []net.Conn
	done  chan struct{}
}

// A fakeConn is one connection the fake server accepted.
type fakeConn struct {
	t   *testing.T
	nc  net.Conn
	req zkwire.ConnectRequest
}

func newFakeServer(t *testing.T) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeServer{ln: ln, conns: make(chan *fakeConn, 16), done: make(chan struct{})}
	go fs.serve(t)
	return fs
}

func (fs *fakeServer) serve(t *testing.T) {
	defer close(fs.done)
	for {
		nc, err := fs.ln.Accept()
		if err != nil {
			return
		}
		fs.mu.Lock()
		fs.open = append(fs.open, nc)
		fs.mu.Unlock()
		fc := &fakeConn{t: t, nc: nc}
		nc.SetReadDeadline(time.Now().Add(fakeWait))
		payload, err := zkwire.ReadFrame(nc, nil, 0)
		if err == nil && fc.req.Decode(zkwire.NewDecoder(payload, 0)) == nil {
			fs.conns <- fc
		}
	}
}

// stop closes the listener and every connection, and waits for serve.
func (fs *fakeServer) stop() {
	fs.ln.Close()
	fs.mu.Lock()
	for _, nc := range fs.open {
		nc.Close()
	}
	fs.mu.Unlock()
	<-fs.done
}

// next returns the next connection's ConnectRequest side.
func (fs *fakeServer) next(t *testing.T) *fakeConn {
	t.Helper()
	select {
	case fc := <-fs.conns:
		return fc
	case <-time.After(fakeWait):
		t.Fatal("no connection to the fake server")
		return nil
	}
}

// dial opens a session on fs, granted session id 1, closed (after the
// server) when the test ends. It returns the first connection.
func (fs *fakeServer) dial(t *testing.T, cfg zksession.Config) (*zksession.Session, *fakeConn) {
	t.Helper()
	type result struct {
		s   *zksession.Session
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, cancel := context.WithTimeout(context.Background(), fakeWait)
		defer cancel()
		s, err := zksession.Dial(c, []string{fs.ln.Addr().String()}, cfg)
		got <- result{s, err}
	}()
	fc := fs.next(t)
	fc.grant(1)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { fs.stop(); r.s.Close() })
	return r.s, fc
}

// grant answers the ConnectRequest with session id, timeout 30 s.
func (fc *fakeConn) grant(id int64) {
	fc.t.Helper()
	fc.grantTimeout(id, 30000)
}

// grantTimeout answers the ConnectRequest with session id and a
// negotiated timeout of ms milliseconds.
func (fc *fakeConn) grantTimeout(id int64, ms int32) {
	fc.t.Helper()
	resp := zkwire.ConnectResponse{TimeOut: ms, SessionID: id, Passwd: []byte("0123456789abcdef")}
	fc.write(resp)
}

type rawRecord []byte

func (r rawRecord) Encode(dst []byte) []byte { return append(dst, r...) }

// write sends rec in one frame.
func (fc *fakeConn) write(rec zkwire.Encodable) {
	fc.t.Helper()
	frame, err := zkwire.AppendFrame(nil, 0, rec)
	if err == nil {
		_, err = fc.nc.Write(frame)
	}
	if err != nil {
		fc.t.Fatal(err)
	}
}

// reply sends a reply header h followed by body (nil for none).
func (fc *fakeConn) reply(h zkwire.ReplyHeader, body zkwire.Encodable) {
	fc.t.Helper()
	b := h.Encode(nil)
	if body != nil {
		b = body.Encode(b)
	}
	fc.write(rawRecord(b))
}

// read reads the next request: its header, and a decoder on its body.
func (fc *fakeConn) read() (zkwire.RequestHeader, *zkwire.Decoder) {
	fc.t.Helper()
	fc.nc.SetReadDeadline(time.Now().Add(fakeWait))
	payload, err := zkwire.ReadFrame(fc.nc, nil, 0)
	var h zkwire.RequestHeader
	d := zkwire.NewDecoder(payload, 0)
	if err == nil {
		err = h.Decode(d)
	}
	if err != nil {
		fc.t.Fatalf("fake server: read request: %v", err)
	}
	return h, d
}

// call runs f on its own goroutine and returns a channel for its error.
func call(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// result waits for a call's error.
func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(fakeWait):
		t.Fatal("call did not return")
		return nil
	}
}

// awaitQueued waits until n requests are queued on s (a condition the
// fake server cannot signal: the session is between connections).
func awaitQueued(t *testing.T, s *zksession.Session, n int) {
	t.Helper()
	deadline := time.Now().Add(fakeWait)
	for s.Queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", s.Queued(), n)
		}
		runtime.Gosched()
	}
}
