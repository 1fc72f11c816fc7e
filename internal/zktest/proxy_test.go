package zktest

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// echoServer echoes every connection until closed.
type echoServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
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
			go func() {
				defer s.wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
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

func newProxyT(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectRead reads len(want) bytes within 5s and compares them.
func expectRead(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read %q: %v", want, err)
	}
	if string(buf) != want {
		t.Fatalf("read %q, want %q", buf, want)
	}
}

// expectSilence checks that nothing arrives on c for a short while.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during pause = %d bytes, %v; want a timeout", n, err)
	}
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// waitConns waits until p has accepted n connections.
func waitConns(t *testing.T, p *Proxy, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.numConns() != n {
		if time.Now().After(deadline) {
			t.Fatalf("proxy has %d connections, want %d", p.numConns(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestProxyForwardPauseResume(t *testing.T) {
	t.Parallel()
	echo := newEchoServer(t)
	p := newProxyT(t, echo.ln.Addr().String())
	if p.Target() != echo.ln.Addr().String() {
		t.Errorf("Target = %s", p.Target())
	}
	c := dialT(t, p.Addr())
	write(t, c, "hello")
	expectRead(t, c, "hello")

	p.Pause()
	p.Pause() // idempotent
	write(t, c, "one,")
	write(t, c, "two,")
	expectSilence(t, c)

	// A connection made while paused is accepted but not served.
	c2 := dialT(t, p.Addr())
	write(t, c2, "early")
	expectSilence(t, c2)

	p.Resume()
	p.Resume() // idempotent
	expectRead(t, c, "one,two,")
	expectRead(t, c2, "early")
	write(t, c, "three")
	expectRead(t, c, "three")
}

func TestProxyPauseHoldsClose(t *testing.T) {
	t.Parallel()
	echo := newEchoServer(t)
	p := newProxyT(t, echo.ln.Addr().String())
	c := dialT(t, p.Addr())
	write(t, c, "x")
	expectRead(t, c, "x")

	p.Pause()
	// The server closes its side; the client must not see it yet.
	echo.mu.Lock()
	for _, sc := range echo.conns {
		sc.Close()
	}
	echo.mu.Unlock()
	expectSilence(t, c)

	p.Resume()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read after resume = %d bytes, want EOF", n)
	}
}

func TestProxyCut(t *testing.T) {
	t.Parallel()
	echo := newEchoServer(t)
	p := newProxyT(t, echo.ln.Addr().String())
	c := dialT(t, p.Addr())
	write(t, c, "a")
	expectRead(t, c, "a")

	p.Cut()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Cut: %v, want EOF or reset", err)
	}

	c2 := dialT(t, p.Addr())
	write(t, c2, "b")
	expectRead(t, c2, "b")
}

func TestProxyCutWhilePaused(t *testing.T) {
	t.Parallel()
	echo := newEchoServer(t)
	p := newProxyT(t, echo.ln.Addr().String())
	p.Pause()
	c := dialT(t, p.Addr())
	write(t, c, "a")
	waitConns(t, p, 1) // Cut only affects accepted connections
	p.Cut()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Cut: %v, want EOF or reset", err)
	}
	p.Resume()
}

func TestProxyClose(t *testing.T) {
	t.Parallel()
	echo := newEchoServer(t)
	p, err := NewProxy(echo.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dialT(t, p.Addr())
	write(t, c, "a")
	expectRead(t, c, "a")
	p.Pause() // Close must not hang on paused connections
	c2 := dialT(t, p.Addr())
	write(t, c2, "b")

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, conn := range []net.Conn{c, c2} {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after Close: %v, want EOF or reset", err)
		}
	}
	if conn, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		conn.Close()
		t.Fatalf("proxy still accepts connections after Close")
	}
}

func TestProxyUnreachableTarget(t *testing.T) {
	t.Parallel()
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	p := newProxyT(t, target)
	c := dialT(t, p.Addr())
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through proxy to nowhere: %v, want EOF", err)
	}
}

func TestFaultsDial(t *testing.T) {
	t.Parallel()
	e1, e2 := newEchoServer(t), newEchoServer(t)
	other := newEchoServer(t)
	f, err := NewFaults([]string{e1.ln.Addr().String(), e2.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	if got := f.Proxy(1).Target(); got != e2.ln.Addr().String() {
		t.Errorf("Proxy(1).Target() = %s", got)
	}
	c1, err := f.Dial("tcp", e1.ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if c1.RemoteAddr().String() != f.Proxy(0).Addr() {
		t.Errorf("Dial(server 0) reached %s, want the proxy %s", c1.RemoteAddr(), f.Proxy(0).Addr())
	}
	c3, err := f.Dial("tcp", other.ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if c3.RemoteAddr().String() != other.ln.Addr().String() {
		t.Errorf("Dial(unknown) reached %s, want it directly", c3.RemoteAddr())
	}

	f.Pause()
	write(t, c1, "p")
	write(t, c3, "d")
	expectRead(t, c3, "d") // not proxied: unaffected
	expectSilence(t, c1)
	f.Resume()
	expectRead(t, c1, "p")
	f.Cut()
	c1.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c1.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Cut: %v, want EOF or reset", err)
	}
}
