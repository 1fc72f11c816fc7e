package zksession_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	izk "github.com/zklock/zklock/internal/zktest"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

// dialTLS dials a session on addr over TLS with conf, within d.
func dialTLS(addr string, conf *tls.Config, d time.Duration) (*zksession.Session, error) {
	c, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return zksession.Dial(c, []string{addr}, zksession.Config{SessionTimeout: 4 * time.Second, TLS: conf})
}

// A session over TLS works like one in the clear. The certificate is
// checked against the host of the address dialed, unless the config
// names the server: then against that name. The config given is not
// changed.
func TestIntegration_TLS(t *testing.T) {
	pki, err := izk.NewPKI("zksession CA")
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := izk.StartT(t, izk.Config{TLS: pki.TLSConfig("need")}).(izk.SecureCluster)
	if !ok || len(sc.SecureServers()) != 1 {
		t.Fatal("no TLS server")
	}
	secure := sc.SecureServers()[0]
	_, port, _ := net.SplitHostPort(secure)
	conf := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12}
	for _, addr := range []string{secure, net.JoinHostPort("localhost", port)} {
		s, err := dialTLS(addr, conf, wait)
		if err != nil {
			t.Fatalf("Dial %s over TLS: %v", addr, err)
		}
		if _, err := s.Create(ctx(t), "/tls", []byte(addr), zksession.OpenACL, zkwire.ModeEphemeral); err != nil {
			t.Fatalf("Create over TLS to %s: %v", addr, err)
		}
		if data, _, err := s.GetData(ctx(t), "/tls"); err != nil || string(data) != addr {
			t.Fatalf("GetData over TLS to %s = %q, %v", addr, data, err)
		}
		s.Close()
	}
	if conf.ServerName != "" {
		t.Fatalf("Dial set the caller's ServerName to %q", conf.ServerName)
	}
	plain, err := dialTLS(secure, nil, time.Second)
	if eof := secure + " accepted the connection, then EOF"; plain != nil || err == nil || !strings.Contains(err.Error(), eof) {
		t.Errorf("Dial in the clear to the TLS port = %v, %v; want %q...", plain, err, eof)
	}
	wrong := conf.Clone()
	wrong.ServerName = "wrong.example"
	s, err := dialTLS(secure, wrong, time.Second)
	var verr *tls.CertificateVerificationError
	if s != nil || !errors.As(err, &verr) {
		t.Fatalf("Dial with ServerName wrong.example = %v, %v; want a certificate verification error", s, err)
	}
}

// A server that accepts the connection and never answers the TLS
// handshake is given up on after the handshake's bound, and the next
// attempt is made.
func TestTLSHandshakeBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		var open []net.Conn
		defer func() {
			for _, nc := range open {
				nc.Close()
			}
		}()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			open = append(open, nc) // held open, never answered
		}
	}()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conf := &tls.Config{ServerName: "zk", MinVersion: tls.VersionTLS12}
	addr, d := ln.Addr().String(), newDials()
	s, err := zksession.Dial(c, []string{addr}, zksession.Config{SessionTimeout: 400 * time.Millisecond, TLS: conf, OnDial: d.onDial})
	ln.Close()
	<-done
	if s != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a server silent in TLS = %v, %v", s, err)
	}
	if n := accepted.Load(); n < 2 {
		t.Fatalf("%d connection in 2 s with a handshake bound of 400 ms", n)
	}
	if want := addr + " accepted the connection but has not answered the TLS handshake in "; !strings.HasPrefix(d.first(addr).Error(), want) {
		t.Fatalf("OnDial heard %v, want %q...", d.first(addr), want)
	}
}

// A server that does not speak TLS is named as such (ErrNotTLS): one
// that answers the client hello with something else (HTTP), and one that
// closes the handshake but answers in the clear. One that closes the
// handshake and says nothing in the clear either may be a TLS port
// closing at once (too many connections): it is not.
func TestTLSNotSpoken(t *testing.T) {
	t.Parallel()
	conf := &tls.Config{ServerName: "zk", MinVersion: tls.VersionTLS12}
	http := notZooKeeper(t, func(nc net.Conn) {
		nc.Read(make([]byte, 512))
		io.WriteString(nc, "HTTP/1.1 400 Bad Request\r\n\r\n")
	})
	clear := notZooKeeper(t, func(nc net.Conn) { // as ZooKeeper's plaintext port
		buf := make([]byte, 4)
		if _, err := io.ReadFull(nc, buf); err == nil && string(buf) == "srvr" {
			io.WriteString(nc, "Zookeeper version: 3.8\n")
		}
	})
	closing := notZooKeeper(t, func(nc net.Conn) { nc.Read(make([]byte, 512)) })
	// A TLS port that closes a handshake at once and answers the probe in
	// the clear as a TLS server does, with an alert record: it speaks TLS.
	alerting := notZooKeeper(t, func(nc net.Conn) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(nc, buf); err == nil && string(buf) == "srvr\n" {
			nc.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a}) // fatal alert: unexpected_message
		}
	})
	for _, tc := range []struct {
		name, addr string
		want       bool
		text       string
	}{
		{"http", http, true, http + ` does not speak TLS: it answered the TLS handshake with "HTTP/"`},
		{"plaintext port", clear, true, clear + ` does not speak TLS: it closed the connection during the TLS handshake`},
		{"closing", closing, false, closing + ": TLS handshake: "},
		{"TLS alert to the probe", alerting, false, alerting + ": TLS handshake: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDials()
			s, err := dialTLSWith(tc.addr, conf, 500*time.Millisecond, d.onDial)
			if s != nil || err == nil {
				t.Fatalf("Dial = %v, %v; want no session", s, err)
			}
			got := d.first(tc.addr)
			if errors.Is(got, zksession.ErrNotTLS) != tc.want || !strings.HasPrefix(got.Error(), tc.text) {
				t.Fatalf("OnDial heard %v (ErrNotTLS: %v), want ErrNotTLS %v, %q...", got, errors.Is(got, zksession.ErrNotTLS), tc.want, tc.text)
			}
		})
	}
}

// dialTLSWith dials a session on addr over TLS with conf, within d,
// reporting each attempt to onDial.
func dialTLSWith(addr string, conf *tls.Config, d time.Duration, onDial func(string, error)) (*zksession.Session, error) {
	c, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return zksession.Dial(c, []string{addr}, zksession.Config{SessionTimeout: 4 * time.Second, TLS: conf, OnDial: onDial})
}

// notZooKeeper starts a TCP server that serves each connection with
// serve, then closes it; it stops when the test ends.
func notZooKeeper(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer nc.Close(); serve(nc) }()
		}
	}()
	return ln.Addr().String()
}

// dials records what OnDial hears, and what OnEvent hears, in one log.
type dials struct {
	mu  sync.Mutex
	log []string
	err map[string][]error
	ch  chan struct{} // receives after each attempt, if it has room
}

func newDials() *dials { return &dials{err: map[string][]error{}, ch: make(chan struct{}, 1)} }

func (d *dials) onDial(addr string, err error) {
	d.mu.Lock()
	d.err[addr] = append(d.err[addr], err)
	d.log = append(d.log, fmt.Sprintf("dial %s: %v", addr, err))
	d.mu.Unlock()
	select {
	case d.ch <- struct{}{}:
	default:
	}
}

// last returns the last error OnDial heard for addr.
func (d *dials) last(addr string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.err[addr]) == 0 {
		return errors.New("no attempt")
	}
	return d.err[addr][len(d.err[addr])-1]
}

func (d *dials) onEvent(ev zksession.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, "event "+ev.State.String())
}

// first returns the first error OnDial heard for addr.
func (d *dials) first(addr string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.err[addr]) == 0 {
		return errors.New("no attempt")
	}
	return d.err[addr][0]
}

// Each failed attempt is reported, by address, with why: another
// protocol's answer, EOF or silence after the connection was accepted, a
// refused connection, a name that does not resolve. Dial's error, when
// its context ends, names every address's last error.
func TestDialErrors(t *testing.T) {
	http := notZooKeeper(t, func(nc net.Conn) {
		nc.Read(make([]byte, 512))
		io.WriteString(nc, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
	})
	silent := notZooKeeper(t, func(nc net.Conn) { io.Copy(io.Discard, nc) })
	closing := notZooKeeper(t, func(nc net.Conn) { nc.Read(make([]byte, 512)) })
	refused := izk.ClosedAddr(t)
	const unresolved = "nosuch.invalid:2181"
	want := map[string]struct {
		text string
		is   func(error) bool
	}{
		http:       {http + ` answered, but not as ZooKeeper: its reply began "HTTP"`, func(err error) bool { return errors.Is(err, zksession.ErrNotZooKeeper) }},
		silent:     {silent + " accepted the connection but has not answered ZooKeeper's handshake in ", nil},
		closing:    {closing + " accepted the connection, then EOF before any ZooKeeper reply", func(err error) bool { return errors.Is(err, io.EOF) }},
		refused:    {refused + ": ", func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }},
		unresolved: {unresolved + " does not resolve: ", isDNSError},
	}
	d := newDials()
	c, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	servers := slices.Collect(maps.Keys(want))
	s, err := zksession.Dial(c, servers, zksession.Config{SessionTimeout: 2500 * time.Millisecond, OnDial: d.onDial})
	if s != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, %v; want a context.DeadlineExceeded", s, err)
	}
	for addr, w := range want {
		got := d.first(addr)
		if !strings.HasPrefix(got.Error(), w.text) || w.is != nil && !w.is(got) {
			t.Errorf("OnDial(%s) heard %v, want %q...", addr, got, w.text)
		}
		if !strings.Contains(err.Error(), w.text) || w.is != nil && !w.is(err) {
			t.Errorf("Dial's error %v does not name %q", err, w.text)
		}
	}
}

func isDNSError(err error) bool {
	var d *net.DNSError
	return errors.As(err, &d)
}

// OnDial hears nil for an attempt that got the session, at Dial and at
// each reconnect, before OnEvent hears that connection's SyncConnected.
func TestIntegration_OnDial(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	st, d := newStates(), newDials()
	s := openWith(t, link, zksession.Config{SessionTimeout: 4 * time.Second, OnState: st.on, OnEvent: d.onEvent, OnDial: d.onDial})
	link.Cut()
	st.await(t, zksession.StateDisconnected)
	st.await(t, zksession.StateConnected)
	s.Close()
	addr := cluster.Servers()[0]
	want := []string{
		"dial " + addr + ": <nil>",
		"event SyncConnected",
		"event Disconnected",
		"dial " + addr + ": <nil>",
		"event SyncConnected",
		"event Closed",
	}
	if d.mu.Lock(); !slices.Equal(d.log, want) {
		t.Errorf("OnDial and OnEvent heard\n%s\nwant\n%s", strings.Join(d.log, "\n"), strings.Join(want, "\n"))
	}
	d.mu.Unlock()
}
