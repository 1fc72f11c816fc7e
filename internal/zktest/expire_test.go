package zktest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// testSession is the session a sessionServer grants.
const testSession int64 = 0x1234

// sessionServer answers each connection's connect request with a connect
// response granting testSession, then hands the connection to the test,
// which writes to it and closes it as a ZooKeeper server would.
type sessionServer struct {
	ln    net.Listener
	conns chan net.Conn // each connection, once answered
	wg    sync.WaitGroup

	mu       sync.Mutex // guards accepted
	accepted []net.Conn
}

func newSessionServer(t *testing.T) *sessionServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sessionServer{ln: ln, conns: make(chan net.Conn, 10)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted = append(s.accepted, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if _, err := readFrame(c); err == nil {
					c.Write(connectResponse(testSession))
					s.conns <- c
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.accepted {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// next returns the next connection the server answered.
func (s *sessionServer) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection reached the server")
		return nil
	}
}

// connectResponse returns a connect response frame granting session id.
func connectResponse(id int64) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, struct {
		Length, Version, Timeout int32
		ID                       int64
		PasswordLength           int32
		Password                 [16]byte
		ReadOnly                 bool
	}{Length: 4 + 4 + 8 + 4 + 16 + 1, Timeout: 10000, ID: id, PasswordLength: 16})
	return b.Bytes()
}

// connected dials f's proxy, sends a connect request and reads the
// connect response; it returns the client's and the server's ends.
func connected(t *testing.T, f *Faults, srv *sessionServer) (client, server net.Conn) {
	t.Helper()
	client = dialT(t, f.Proxy(0).Addr())
	write(t, client, string(connectReq))
	server = srv.next(t)
	expectRead(t, client, string(connectResponse(testSession)))
	if got := f.Session().ID; got != testSession {
		t.Fatalf("session seen 0x%x, want 0x%x", got, testSession)
	}
	return client, server
}

// The injected frame is ZooKeeper's watcher notification of an expired
// session, byte for byte (zookeeper.jute's ReplyHeader and WatcherEvent).
func TestExpiredEventFrame(t *testing.T) {
	t.Parallel()
	want := "0000001c" + // length: 28
		"ffffffff" + "ffffffffffffffff" + "00000000" + // xid -1, zxid -1, err 0
		"ffffffff" + "ffffff90" + "00000000" // type None, state Expired (-112), path ""
	if got := hex.EncodeToString(expiredEvent); got != want {
		t.Fatalf("expiredEvent = %s, want %s", got, want)
	}
}

// The client is told that its session expired before its connection
// closes, even though the server closes it first: it gets what the
// server sent before closing, then the event, then the close.
func TestFaultsExpireTellsClientFirst(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	late := reply(5, "sent-before-the-close")

	err := f.expire(context.Background(), f.Session(), func(_ context.Context, s Session) error {
		if s.ID != testSession || s.Server != srv.ln.Addr().String() {
			t.Fatalf("expire %+v, want session 0x%x of %s", s, testSession, srv.ln.Addr())
		}
		// ZooKeeper closes the session's connection once another
		// attaches to the session, before it ends it.
		write(t, server, string(late))
		server.Close()
		expectRead(t, client, string(late))
		expectSilence(t, client) // the close is held
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	expectFramesThenEOF(t, client, expiredEvent)
}

// A frame the server began and never finished cannot be finished by the
// proxy: the client gets what came of it, and the close, with no event.
func TestFaultsExpirePartialFrame(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	half := reply(6, "cut-short")[:10]

	err := f.expire(context.Background(), f.Session(), func(context.Context, Session) error {
		write(t, server, string(half))
		server.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	expectFramesThenEOF(t, client, half)
}

// A connection that has not had its connect response is not told: the
// connect response must come first. Nor is one of another session.
func TestFaultsExpireNoConnectResponseYet(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	waiting := dialT(t, f.Proxy(0).Addr()) // answered by no one yet
	waitConns(t, f.Proxy(0), 2)

	err := f.expire(context.Background(), f.Session(), func(context.Context, Session) error {
		server.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	expectFramesThenEOF(t, client, expiredEvent)
	write(t, waiting, string(connectReq))
	srv.next(t).Close()
	expectFramesThenEOF(t, waiting, connectResponse(testSession))
}

// A Cut during an expiry closes the client's connection at once, and it
// is told nothing; so does a session that could not be ended.
func TestFaultsExpireCutOrFailed(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	err := f.expire(context.Background(), f.Session(), func(context.Context, Session) error {
		server.Close()
		f.Cut()
		expectFramesThenEOF(t, client, nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	client, server = connected(t, f, srv)
	failed := errors.New("the session has already expired")
	err = f.expire(context.Background(), f.Session(), func(context.Context, Session) error { return failed })
	if !errors.Is(err, failed) {
		t.Fatalf("expire = %v, want %v", err, failed)
	}
	ok := reply(7, "still-served")
	write(t, server, string(ok))
	expectRead(t, client, string(ok))
	server.Close()
	expectFramesThenEOF(t, client, nil)
}

// A client that closes its connection while the proxy holds it for an
// expiry that fails has its close passed on to the server, so that the
// connection ends.
func TestFaultsExpireFailedClientGone(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	failed := errors.New("the session has already expired")
	err := f.expire(context.Background(), f.Session(), func(context.Context, Session) error {
		client.Close()
		expectFramesThenEOF(t, server, nil) // the server sees the close
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("expire = %v, want %v", err, failed)
	}
	server.Close()
	waitConns(t, f.Proxy(0), 0)
}

// Of two expiries at once, the first tells the client, although the
// second fails and ends first.
func TestFaultsExpireTwiceAtOnce(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	failed := errors.New("the session has already expired")
	err := f.expire(context.Background(), f.Session(), func(ctx context.Context, s Session) error {
		if err := f.expire(ctx, s, func(context.Context, Session) error { return failed }); !errors.Is(err, failed) {
			t.Fatalf("second expire = %v, want %v", err, failed)
		}
		server.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	expectFramesThenEOF(t, client, expiredEvent)
}

// While the proxy is paused, the event and the close wait for Resume,
// after what the pause held.
func TestFaultsExpireWhilePaused(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, server := connected(t, f, srv)
	late := reply(8, "held-by-the-pause")
	f.Pause()
	err := f.expire(context.Background(), f.Session(), func(context.Context, Session) error {
		write(t, server, string(late))
		server.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	expectSilence(t, client)
	f.Resume()
	expectFramesThenEOF(t, client, slices.Concat(late, expiredEvent))
}

// A server that does not close the session's connection keeps its
// client from being told for no longer than expiryDrain.
func TestFaultsExpireServerKeepsConnection(t *testing.T) {
	t.Parallel()
	srv := newSessionServer(t)
	f := NewFaultsT(t, []string{srv.ln.Addr().String()})
	client, _ := connected(t, f, srv)
	start := time.Now()
	if err := f.expire(context.Background(), f.Session(), func(context.Context, Session) error { return nil }); err != nil {
		t.Fatal(err)
	}
	expectFramesThenEOF(t, client, expiredEvent)
	if d := time.Since(start); d < expiryDrain {
		t.Fatalf("told after %v, before the server had expiryDrain (%v) to close", d, expiryDrain)
	}
}

// writeLog is a client's end that records what the proxy writes to it.
type writeLog struct {
	net.Conn
	wrote []byte
}

func (w *writeLog) Write(b []byte) (int, error) {
	w.wrote = append(w.wrote, b...)
	return len(b), nil
}

// tellExpiry writes the event only after a connect response and at a
// frame boundary of what was written to the client, and only once the
// session has been ended, with the connection still open.
func TestTellExpiry(t *testing.T) {
	t.Parallel()
	whole := slices.Concat(connectResponse(testSession), reply(1, "a"), reply(-1, "watch"))
	cases := []struct {
		name    string
		written []byte
		expired bool // the session was ended
		cut     bool // the connection was cut before the outcome
		want    []byte
	}{
		{"at a boundary", whole, true, false, expiredEvent},
		{"after the connect response alone", connectResponse(testSession), true, false, expiredEvent},
		{"no connect response yet", nil, true, false, nil},
		{"connect response cut short", connectResponse(testSession)[:7], true, false, nil},
		{"a frame's head pending", whole[:len(whole)-len(reply(-1, "watch"))+6], true, false, nil},
		{"a frame's body pending", whole[:len(whole)-1], true, false, nil},
		{"not ZooKeeper's", []byte("HTTP/1.1 200 OK\r\n"), true, false, nil},
		{"session not ended", whole, false, false, nil},
		{"connection cut", whole, true, true, nil},
	}
	for _, tc := range cases {
		for _, sizes := range chunkings(len(tc.written)) {
			ctx, cancel := context.WithCancel(context.Background())
			log := &writeLog{}
			pc := &proxyConn{client: log, ctx: ctx, cancel: cancel, expiry: &expiry{done: make(chan struct{})}}
			pc.wrote.hdrLen = replyHeaderLen
			feed(tc.written, sizes, func(b []byte) ([]byte, bool) { pc.wrote.skim(b); return nil, false })
			if tc.cut {
				cancel() // the outcome never comes
			} else {
				pc.expiry.expired = tc.expired
				close(pc.expiry.done)
			}
			(&Proxy{}).tellExpiry(pc)
			cancel()
			if !bytes.Equal(log.wrote, tc.want) {
				t.Fatalf("%s, written in reads of %v: told %x, want %x", tc.name, sizes, log.wrote, tc.want)
			}
		}
	}
}
