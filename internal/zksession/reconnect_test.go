package zksession_test

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
)

// refused is the error of a dial that the server refused.
func refused(network string) error {
	return &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// dialFake dials a session on servers, the fake server among them
// granting it (session 1), closed (after the server) when the test ends.
func dialFake(t *testing.T, fs *fakeServer, servers []string, cfg zksession.Config) (*zksession.Session, *fakeConn) {
	t.Helper()
	type result struct {
		s   *zksession.Session
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, cancel := context.WithTimeout(context.Background(), fakeWait)
		defer cancel()
		s, err := zksession.Dial(c, servers, cfg)
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

// After a connection loss, the session tries every server in turn at
// once, and pauses only after a full round over them without success:
// a pause with a floor, which grows from round to round.
func TestReconnectPausesAfterEachRound(t *testing.T) {
	const failures = 6 // three rounds over two servers
	fs := newFakeServer(t)
	good, bad := fs.ln.Addr().String(), "127.0.0.1:1"
	var mu sync.Mutex
	var down bool
	var at []time.Time // when each dial after the cut began
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		fail := addr == bad
		if down {
			at = append(at, time.Now())
			fail = fail || len(at) <= failures
		}
		mu.Unlock()
		if fail {
			return nil, refused(network)
		}
		return net.DialTimeout(network, addr, timeout)
	}
	st := newStates()
	_, fc := dialFake(t, fs, []string{good, bad}, zksession.Config{Dialer: dialer, OnState: st.on})
	mu.Lock()
	down = true
	mu.Unlock()
	cut(t, fc, st)
	fs.next(t).grant(1)
	st.await(t, zksession.StateConnected)
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i <= failures; i++ {
		gap := at[i].Sub(at[i-1])
		if i%2 == 1 && gap >= zksession.PauseLimit(1)/2 {
			t.Errorf("attempt %d, in a round, came %v after the one before, not at once", i, gap)
		}
		if round := i / 2; i%2 == 0 && gap < zksession.PauseLimit(round)/2 {
			t.Errorf("attempt %d, after %d rounds, came %v after the one before: under the pause's floor %v",
				i, round, gap, zksession.PauseLimit(round)/2)
		}
	}
}

// The pause after a round is jittered between half its limit and its
// limit, which doubles from 100 ms round after round, up to a second.
func TestPauseJitter(t *testing.T) {
	for n := 1; n <= 8; n++ {
		limit := zksession.PauseLimit(n)
		if want := min(100*time.Millisecond<<(n-1), time.Second); limit != want {
			t.Errorf("limit after %d rounds = %v, want %v", n, limit, want)
		}
		seen := map[time.Duration]bool{}
		for range 100 {
			p := zksession.Pause(n)
			if p < limit/2 || p >= limit {
				t.Fatalf("pause after %d rounds = %v, outside [%v, %v)", n, p, limit/2, limit)
			}
			seen[p] = true
		}
		if len(seen) < 50 {
			t.Errorf("100 pauses after %d rounds took only %d values: no jitter", n, len(seen))
		}
	}
}

// fakeDNS is a DNS server on loopback (UDP) that answers A queries for
// the names in its table and NXDOMAIN for every other name.
type fakeDNS struct {
	pc    net.PacketConn
	mu    sync.Mutex
	hosts map[string]net.IP // by fully qualified name ("zk.test.")
	done  chan struct{}
}

func newFakeDNS(t *testing.T) *fakeDNS {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{pc: pc, hosts: map[string]net.IP{}, done: make(chan struct{})}
	go d.serve()
	t.Cleanup(func() { pc.Close(); <-d.done })
	return d
}

// set makes name (fully qualified) resolve to ip, or to nothing if nil.
func (d *fakeDNS) set(name string, ip net.IP) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ip == nil {
		delete(d.hosts, name)
		return
	}
	d.hosts[name] = ip
}

// resolver returns a resolver that asks d, and nothing else.
func (d *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "udp", d.pc.LocalAddr().String())
	}}
}

func (d *fakeDNS) serve() {
	defer close(d.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := d.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := d.answer(buf[:n]); resp != nil {
			d.pc.WriteTo(resp, from)
		}
	}
}

// answer returns the answer to the query q (RFC 1035 4.1), nil if q is
// not one.
func (d *fakeDNS) answer(q []byte) []byte {
	i, name := 12, ""
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		name += strings.ToLower(string(q[i+1:i+1+l])) + "."
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype, end := binary.BigEndian.Uint16(q[i+1:]), i+5
	d.mu.Lock()
	ip, ok := d.hosts[name]
	d.mu.Unlock()
	flags, answers := uint16(0x8580), uint16(0) // response, authoritative, recursion desired and available
	if !ok {
		flags |= 3 // NXDOMAIN
	} else if qtype == 1 {
		answers = 1
	}
	resp := append([]byte(nil), q[:2]...) // the query's id
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = append(resp, 0, 1, 0, byte(answers), 0, 0, 0, 0)
	resp = append(resp, q[12:end]...)
	if answers == 1 { // the name (a pointer to the question's), A, IN, TTL 0, 4 bytes
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		resp = append(resp, ip.To4()...)
	}
	return resp
}

// Every attempt resolves the server's name afresh: once the name stops
// resolving, the attempts fail saying so (with the *net.DNSError), and
// none reaches the server; once it resolves again, the session comes
// back.
func TestReconnectResolvesEachTime(t *testing.T) {
	const name = "zk.zksession.test"
	dns := newFakeDNS(t)
	dns.set(name+".", net.IPv4(127, 0, 0, 1))
	fs := newFakeServer(t)
	_, port, _ := net.SplitHostPort(fs.ln.Addr().String())
	addr := net.JoinHostPort(name, port)
	st, d := newStates(), newDials()
	cfg := zksession.WithResolver(zksession.Config{OnState: st.on, OnDial: d.onDial}, dns.resolver())
	_, fc := dialFake(t, fs, []string{addr}, cfg)
	dns.set(name+".", nil)
	cut(t, fc, st)
	deadline := time.After(fakeWait)
	for !isDNSError(d.last(addr)) {
		select {
		case <-d.ch:
		case <-deadline:
			t.Fatalf("OnDial heard %v for %s after its name stopped resolving, want a DNS error", d.last(addr), addr)
		}
	}
	if err := d.last(addr); !strings.HasPrefix(err.Error(), addr+" does not resolve: ") {
		t.Fatalf("OnDial heard %q", err)
	}
	select {
	case fc := <-fs.conns:
		t.Fatalf("a connection (session %#x) reached the server while its name did not resolve", fc.req.SessionID)
	default:
	}
	dns.set(name+".", net.IPv4(127, 0, 0, 1))
	fs.next(t).grant(1)
	st.await(t, zksession.StateConnected)
}
