package zktest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// frame returns a frame: the length of header+body, then both.
func frame(body []byte, header ...int32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, int32(4*len(header)+len(body)))
	for _, h := range header {
		binary.Write(&b, binary.BigEndian, h)
	}
	b.Write(body)
	return b.Bytes()
}

// request returns a request frame with the given xid and opcode.
func request(xid, op int32, body string) []byte { return frame([]byte(body), xid, op) }

// reply returns a reply frame for xid (zxid 0, err 0).
func reply(xid int32, body string) []byte { return frame([]byte(body), xid, 0, 0, 0) }

// chunkings returns ways to cut a stream of n bytes into reads: whole,
// byte by byte, and at every single point.
func chunkings(n int) [][]int {
	whole := []int{n}
	ones := slices.Repeat([]int{1}, n)
	all := [][]int{whole, ones}
	for i := 1; i < n; i++ {
		all = append(all, []int{i, n - i})
	}
	return all
}

// feed passes stream to filter in reads of the given sizes, until filter
// says stop; it returns what filter forwarded and whether it stopped.
func feed(stream []byte, sizes []int, filter func([]byte) ([]byte, bool)) ([]byte, bool) {
	var out []byte
	for _, n := range sizes {
		fwd, stop := filter(stream[:n])
		out = append(out, fwd...)
		stream = stream[n:]
		if stop {
			return out, true
		}
	}
	return out, false
}

var (
	connectReq = frame([]byte("connect-request-with-some-body"))
	connectRsp = frame([]byte("connect-response"))
)

func TestFrameScannerHeads(t *testing.T) {
	t.Parallel()
	stream := slices.Concat(connectReq, request(1, 4, "/a"), frame(nil), request(-2, 11, ""),
		frame([]byte{9}), request(7, 1, "/node-with-a-longer-body"))
	want := []int32{1, -2, 7}
	for _, sizes := range chunkings(len(stream)) {
		s := frameScanner{hdrLen: requestHeaderLen}
		var xids []int32
		rest := stream
		for _, n := range sizes {
			for b := rest[:n]; len(b) > 0; {
				k, done := s.advance(b)
				b = b[k:]
				if done && s.frames > 1 && s.n == 4+requestHeaderLen {
					xids = append(xids, s.word(4))
				}
			}
			rest = rest[n:]
		}
		if !slices.Equal(xids, want) || s.frames != 6 || s.broken {
			t.Fatalf("reads %v: xids %v, frames %d, broken %v; want %v, 6, false", sizes, xids, s.frames, s.broken, want)
		}
	}
}

func TestFrameScannerBroken(t *testing.T) {
	t.Parallel()
	s := frameScanner{hdrLen: requestHeaderLen}
	garbage := []byte("GET / HTTP/1.1\r\n")
	if n, done := s.advance(garbage); n != 4 || done || !s.broken {
		t.Fatalf("advance = %d, %v, broken %v; want 4, false, true", n, done, s.broken)
	}
	p := &Proxy{}
	p.CutOnCreate()
	pc := &proxyConn{up: s}
	if out := p.filterUp(pc, garbage); !bytes.Equal(out, garbage) || pc.cut.Load() != nil {
		t.Fatalf("filterUp on a broken stream = %q, cut %v", out, pc.cut.Load())
	}
}

func TestFilterUnarmedForwardsAll(t *testing.T) {
	t.Parallel()
	up := slices.Concat(connectReq, request(1, 1, "/create"), request(2, 15, "/create2"))
	for _, sizes := range chunkings(len(up)) {
		p := &Proxy{}
		pc := &proxyConn{up: frameScanner{hdrLen: requestHeaderLen}}
		out, _ := feed(up, sizes, func(b []byte) ([]byte, bool) { return p.filterUp(pc, b), false })
		if !bytes.Equal(out, up) || pc.cut.Load() != nil {
			t.Fatalf("reads %v: forwarded %q, cut %v; want everything, no cut", sizes, out, pc.cut.Load())
		}
	}
}

func TestFilterCutOnCreate(t *testing.T) {
	t.Parallel()
	create := request(7, 1, "/node-with-a-body")
	upBefore := slices.Concat(connectReq, request(1, 4, "/a"), request(-2, 11, ""))
	up := slices.Concat(upBefore, create, request(8, 4, "/after"))
	downBefore := slices.Concat(connectRsp, reply(1, "data-of-a"), reply(-1, "watch-event"), reply(-2, ""))
	down := slices.Concat(downBefore, reply(7, "/node-with-a-body"), reply(8, "after"))

	for _, sizes := range chunkings(len(up)) {
		p, pc := &Proxy{}, &proxyConn{up: frameScanner{hdrLen: requestHeaderLen}}
		ch := p.CutOnCreate()
		out, _ := feed(up, sizes, func(b []byte) ([]byte, bool) { return p.filterUp(pc, b), false })
		if want := slices.Concat(upBefore, create); !bytes.Equal(out, want) {
			t.Fatalf("up reads %v: forwarded %q, want %q", sizes, out, want)
		}
		if cut := pc.cut.Load(); cut == nil || cut.xid != 7 || cut.trigger.done != ch {
			t.Fatalf("up reads %v: cut %+v, want xid 7 on the armed trigger", sizes, cut)
		}
	}

	// Server bytes read before the claim go through unfiltered; the rest
	// is cut at the create's reply, however it is split.
	for pre := 0; pre <= len(downBefore); pre++ {
		for _, sizes := range chunkings(len(down) - pre) {
			p, pc := &Proxy{}, &proxyConn{down: frameScanner{hdrLen: replyHeaderLen}}
			first, _ := p.filterDown(pc, down[:pre])
			p.CutOnCreate()
			if !p.claimCut(pc, 7, 1) {
				t.Fatal("claimCut on an armed proxy failed")
			}
			out, stop := feed(down[pre:], sizes, func(b []byte) ([]byte, bool) { return p.filterDown(pc, b) })
			if got := slices.Concat(first, out); !stop || !bytes.Equal(got, downBefore) {
				t.Fatalf("%d bytes before the claim, then reads %v: forwarded %q, stop %v; want %q, true",
					pre, sizes, got, stop, downBefore)
			}
		}
	}
}

func TestCutOnCreateArming(t *testing.T) {
	t.Parallel()
	p := &Proxy{}
	ch := p.CutOnCreate()
	if p.CutOnCreate() != ch {
		t.Fatal("arming twice returned a new channel")
	}
	pc := &proxyConn{}
	if !p.claimCut(pc, 1, 1) || p.claimCut(&proxyConn{}, 2, 1) {
		t.Fatal("the armed cut was not claimed exactly once")
	}
	pc.cut.Load().trigger.fire()
	select {
	case <-ch:
	default:
		t.Fatal("channel open after fire")
	}
	if p.CutOnCreate() == ch {
		t.Fatal("arming after a cut returned the fired channel")
	}

	// A Faults cut is claimed by one proxy only.
	p1, p2 := &Proxy{}, &Proxy{}
	f := &Faults{proxies: []*Proxy{p1, p2}}
	fch := f.CutOnCreate()
	if f.CutOnCreate() != fch || p1.CutOnCreate() != fch {
		t.Fatal("arming a Faults twice returned a new channel")
	}
	if !p2.claimCut(&proxyConn{}, 1, 15) || p1.claimCut(&proxyConn{}, 2, 1) {
		t.Fatal("the Faults cut was not claimed exactly once")
	}
	if p1.armedTrigger() != nil || p2.armedTrigger() != nil {
		t.Fatal("proxies still armed after the cut")
	}
}

// frameServer is a fake ZooKeeper: it answers the first frame of each
// connection with connectRsp and every later one with reply(xid), the
// replies to one read in one write, and records the requests' xids.
type frameServer struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mute atomic.Int32 // an opcode whose requests it records but never answers; 0: none

	mu    sync.Mutex // guards xids and conns
	xids  []int32
	conns []net.Conn
}

func newFrameServer(t *testing.T) *frameServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &frameServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *frameServer) serve(c net.Conn) {
	defer c.Close()
	sc := frameScanner{hdrLen: requestHeaderLen}
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		var out []byte
		for b := buf[:n]; len(b) > 0; {
			k, done := sc.advance(b)
			b = b[k:]
			switch {
			case !done:
			case sc.frames == 1:
				out = append(out, connectRsp...)
			default:
				s.mu.Lock()
				s.xids = append(s.xids, sc.word(4))
				s.mu.Unlock()
				if op := sc.word(8); op == 0 || op != s.mute.Load() {
					out = append(out, reply(sc.word(4), "ok")...)
				}
			}
		}
		if _, werr := c.Write(out); werr != nil || err != nil {
			return
		}
	}
}

func (s *frameServer) seen() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.xids)
}

// expectFrames reads exactly want from c, then expects the connection to
// be closed.
func expectFramesThenEOF(t *testing.T, c net.Conn, want []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection not closed; got %q", got)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("client got %q, want %q", got, want)
	}
}

func TestProxyCutOnCreate(t *testing.T) {
	t.Parallel()
	srv0, srv1 := newFrameServer(t), newFrameServer(t)
	f := NewFaultsT(t, []string{srv0.ln.Addr().String(), srv1.ln.Addr().String()})
	ch := f.CutOnCreate()

	c1 := dialT(t, f.Proxy(1).Addr())
	write(t, c1, string(slices.Concat(connectReq, request(1, 4, "/a"))))
	expectRead(t, c1, string(slices.Concat(connectRsp, reply(1, "ok"))))
	// A ping, the create and a request after it, in one write.
	write(t, c1, string(slices.Concat(request(-2, 11, ""), request(5, 15, "/x"), request(6, 4, "/x"))))
	expectFramesThenEOF(t, c1, reply(-2, "ok"))
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("cut channel not closed")
	}
	if got, want := srv1.seen(), []int32{1, -2, 5}; !slices.Equal(got, want) {
		t.Fatalf("server saw xids %v, want %v (the create, nothing after it)", got, want)
	}

	// The other proxy was disarmed, and so was the one that cut.
	for i := range 2 {
		c := dialT(t, f.Proxy(i).Addr())
		write(t, c, string(slices.Concat(connectReq, request(9, 1, "/y"))))
		expectRead(t, c, string(slices.Concat(connectRsp, reply(9, "ok"))))
	}
}

func TestCutOnRequestArming(t *testing.T) {
	t.Parallel()
	p := &Proxy{}
	ch := p.CutOnRequest(time.Second, 3, 4)
	if p.CutOnRequest(time.Second, 4, 3) != ch {
		t.Fatal("arming twice alike returned a new channel")
	}
	if !p.claimCut(&proxyConn{}, 1, 3) {
		t.Fatal("an exists did not claim a cut armed for it")
	}
	ch = p.CutOnRequest(time.Second, 3)
	for _, other := range []<-chan struct{}{p.CutOnRequest(2*time.Second, 3), p.CutOnRequest(time.Second, 3, 4), p.CutOnCreate()} {
		if other == ch {
			t.Fatal("arming with another wait or other opcodes returned the armed channel")
		}
		ch = other
	}
	// Requests of other opcodes neither claim nor disarm the cut.
	if p.claimCut(&proxyConn{}, 1, 3) || p.claimCut(&proxyConn{}, 2, 4) {
		t.Fatal("a request that does not create claimed the create cut")
	}
	if p.armedTrigger() == nil || !p.claimCut(&proxyConn{}, 3, 15) {
		t.Fatal("the create cut was disarmed by other requests")
	}
}

// A cut with a short wait closes the connection that long after its
// request was forwarded, when the server does not answer it, and the
// server has the request.
func TestProxyCutOnRequestShortWait(t *testing.T) {
	t.Parallel()
	srv := newFrameServer(t)
	srv.mute.Store(3)
	p := newProxyT(t, srv.ln.Addr().String())
	const wait = 100 * time.Millisecond
	ch := p.CutOnRequest(wait, 3)
	c := dialT(t, p.Addr())
	write(t, c, string(slices.Concat(connectReq, request(1, 4, "/a"))))
	expectRead(t, c, string(slices.Concat(connectRsp, reply(1, "ok"))))
	start := time.Now()
	write(t, c, string(slices.Concat(request(2, 3, "/exists"), request(3, 4, "/after"))))
	expectFramesThenEOF(t, c, nil)
	if took := time.Since(start); took < wait || took >= cutReplyTimeout {
		t.Errorf("cut %v after the request, want about %v", took, wait)
	}
	waitCut(t, ch)
	if got, want := srv.seen(), []int32{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("server saw xids %v, want %v (the exists, nothing after it)", got, want)
	}
}

// waitCut waits for a CutOnCreate channel to close.
func waitCut(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("CutOnCreate channel not closed within 10s")
	}
}

func TestIntegration_CutOnCreate(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	f := NewFaultsT(t, c.Servers())
	direct := ConnectT(t, c.Servers())
	root := testRoot(t, direct)
	rec := newRecorder()
	conn := ConnectT(t, c.Servers(), zk.WithDialer(f.Dial), zk.WithEventCallback(rec.callback))
	sid := conn.SessionID()

	m := rec.mark()
	ch := f.CutOnCreate()
	start := time.Now()
	_, err := conn.Create(root+"/plain", []byte("p"), 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Create through the cut = %v, want ErrConnectionClosed", err)
	}
	// The proxy cuts when the reply comes, not after cutReplyTimeout.
	if d := time.Since(start); d >= cutReplyTimeout {
		t.Errorf("Create took %v to fail: the reply was not recognised", d)
	}
	waitCut(t, ch)
	mustGet(t, direct, root+"/plain", "p")
	m = rec.waitFor(t, m, zk.StateDisconnected, 5*time.Second)
	rec.waitFor(t, m, zk.StateHasSession, 15*time.Second)
	if got := conn.SessionID(); got != sid {
		t.Fatalf("SessionID = %#x after the cut, want %#x", got, sid)
	}

	// A second arm cuts again, here on a multi. (Not through go-zk's
	// CreateProtectedEphemeralSequential: its lookup after the cut races
	// the reconnect, and with one server go-zk fails unsent requests with
	// ErrNoServer when it starts over its server list.)
	m = rec.mark()
	ch = f.CutOnCreate()
	_, err = conn.Multi(&zk.CreateRequest{Path: root + "/multi", Data: []byte("q"), Acl: zk.WorldACL(zk.PermAll)})
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Multi through the cut = %v, want ErrConnectionClosed", err)
	}
	waitCut(t, ch)
	mustGet(t, direct, root+"/multi", "q")
	rec.waitFor(t, m, zk.StateHasSession, 15*time.Second)
	children, _, err := direct.Children(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 2 {
		t.Fatalf("children of %s = %v, want plain and multi", root, children)
	}
}
