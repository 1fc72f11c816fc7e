package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyDialTimeout bounds the proxy's connection to its target.
const proxyDialTimeout = 5 * time.Second

// Proxy is a TCP proxy from a local address to a target, for provoking
// network faults between a client and a server. Its methods are safe for
// concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu      sync.Mutex // guards the fields below and proxyConn's upstream, sid and expiry
	paused  bool
	deaf    bool          // Deafen: only the client's bytes are held
	resumed chan struct{} // closed while neither paused nor deaf; replaced by Pause and Deafen
	conns   map[*proxyConn]struct{}
	closed  bool
	armed   *cutTrigger // set by CutOnCreate, cleared by the first create

	sessions *sessionLog  // the last session granted through the proxy (shared by a Faults' proxies); written before the accept loop starts
	delay    atomic.Int64 // nanoseconds each chunk is held before it is forwarded (SetDelay)
}

// proxyConn is one proxied connection.
type proxyConn struct {
	client   net.Conn
	upstream net.Conn // nil until dialled; guarded by Proxy.mu
	ctx      context.Context
	cancel   context.CancelFunc

	sid    int64   // the session its connect response granted, 0 before; guarded by Proxy.mu
	expiry *expiry // set while Faults.ExpireSession ends sid; guarded by Proxy.mu

	cut atomic.Pointer[createCut] // set once, by filterUp, if pc carries the cut

	// Owned by the client-to-server pipe (filterUp).
	up       frameScanner
	upCut    bool // pc claimed the cut: forward upLeft more bytes, then none
	upLeft   int
	upWaited bool // the wait for the cut request's reply began, once it was forwarded

	// Owned by the server-to-client pipe (filterDown, tellExpiry). It is
	// the only writer to client, the event an expiry injects included, so
	// no frame can land inside another.
	down  frameScanner
	hi    hello        // the connect response, for Session
	wrote frameScanner // what was written to client
}

// NewProxy returns a proxy listening on 127.0.0.1 on a free port and
// forwarding every connection it accepts to target. The caller must Close
// it.
func NewProxy(target string) (*Proxy, error) {
	return newProxy(target, &sessionLog{})
}

// newProxy is NewProxy, recording the sessions it sees in sessions.
func newProxy(target string, sessions *sessionLog) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zktest: proxy for %s: listen: %w", target, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:   target,
		ln:       ln,
		ctx:      ctx,
		cancel:   cancel,
		resumed:  make(chan struct{}),
		conns:    make(map[*proxyConn]struct{}),
		sessions: sessions,
	}
	close(p.resumed)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the address the proxy listens on ("127.0.0.1:port").
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Session returns the last session a server granted through the proxy
// (a zero Session if none), for ExpireSession.
func (p *Proxy) Session() Session { return p.sessions.get() }

// Pause stops forwarding, in both directions, on every current connection
// and on connections accepted later (those are accepted but not connected
// to the target), until Resume. The sockets stay open, so the client sees
// silence: its reads time out (go-zk then reports StateDisconnected and
// reconnects, through the paused proxy), and a pause longer than the
// session timeout lets the server expire the session. Bytes received while
// paused are held, not lost or reordered, and delivered by Resume; so are
// closes. A write already under way when Pause is called completes.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdLocked()
	p.paused = true
}

// Deafen is Pause in one direction: the server hears nothing more from
// the client (its bytes are held, until Resume), while the server's bytes
// still reach the client. A client whose read timeout counts any byte it
// receives (notifications of a persistent watch, say) then never times
// out, and the server expires its session.
func (p *Proxy) Deafen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdLocked()
	p.deaf = true
}

// holdLocked starts holding bytes, if nothing was held; p.mu must be held.
func (p *Proxy) holdLocked() {
	if !p.paused && !p.deaf {
		p.resumed = make(chan struct{})
	}
}

// Resume ends a Pause and a Deafen: held bytes are delivered and
// forwarding continues.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused || p.deaf {
		p.paused, p.deaf = false, false
		close(p.resumed)
	}
}

// SetDelay holds every chunk of data read from either side for d before
// forwarding it, from now on (0 ends the delay): a round trip gains about
// 2d. Chunks are delayed one after the other, so a busy connection's
// throughput drops too.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(max(d, 0))) }

// Cut closes every connection the proxy has accepted, at once and in both
// directions, so the client sees an immediate disconnect; data held by a
// Pause is dropped. Later connections are served normally (or held, while
// paused); that includes one the client has just dialled but the proxy has
// not accepted yet, still in the kernel's backlog.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		p.closeConnLocked(pc)
	}
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines to finish. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	var err error
	if !p.closed {
		p.closed = true
		p.cancel()
		err = p.ln.Close()
		for pc := range p.conns {
			p.closeConnLocked(pc)
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("zktest: close proxy for %s: %w", p.target, err)
	}
	return nil
}

// numConns returns how many connections the proxy has accepted and not
// yet closed.
func (p *Proxy) numConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: back off briefly.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			conn.Close()
			return
		}
		ctx, cancel := context.WithCancel(p.ctx)
		pc := &proxyConn{client: conn, ctx: ctx, cancel: cancel}
		pc.up.hdrLen, pc.down.hdrLen, pc.wrote.hdrLen = requestHeaderLen, replyHeaderLen, replyHeaderLen
		p.conns[pc] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(pc)
	}
}

// closeConnLocked closes both sides of pc; p.mu must be held.
func (p *Proxy) closeConnLocked(pc *proxyConn) {
	pc.cancel()
	pc.client.Close()
	if pc.upstream != nil {
		pc.upstream.Close()
	}
}

func (p *Proxy) closeConn(pc *proxyConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeConnLocked(pc)
}

// endUp ends pc once its client-to-server pipe has stopped: it closes
// both sides, unless an expiry holds pc's client open to tell it that
// its session expired. Then it only passes the end on to the server,
// whose close ends the other pipe, which closes pc once it has told the
// client.
func (p *Proxy) endUp(pc *proxyConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc.expiry == nil || pc.ctx.Err() != nil {
		p.closeConnLocked(pc)
		return
	}
	if cw, ok := pc.upstream.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		pc.upstream.Close()
	}
}

// waitResumed blocks while the proxy is paused, or (up, for the
// client's bytes) deaf. It returns false if pc was closed meanwhile.
func (p *Proxy) waitResumed(pc *proxyConn, up bool) bool {
	for {
		p.mu.Lock()
		paused, resumed := p.paused || up && p.deaf, p.resumed
		p.mu.Unlock()
		if !paused {
			return pc.ctx.Err() == nil
		}
		select {
		case <-resumed:
			// Loop: the proxy may have been paused again.
		case <-pc.ctx.Done():
			return false
		}
	}
}

func (p *Proxy) serve(pc *proxyConn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		p.closeConnLocked(pc)
		delete(p.conns, pc)
		p.mu.Unlock()
		if cut := pc.cut.Load(); cut != nil {
			cut.trigger.fire()
		}
	}()

	if !p.waitResumed(pc, false) {
		return
	}
	dctx, cancel := context.WithTimeout(pc.ctx, proxyDialTimeout)
	var d net.Dialer
	up, err := d.DialContext(dctx, "tcp", p.target)
	cancel()
	if err != nil {
		return // the client sees the connection close
	}
	p.mu.Lock()
	if pc.ctx.Err() != nil {
		p.mu.Unlock()
		up.Close()
		return
	}
	pc.upstream = up
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.pipe(pc, true, up, pc.client, func(b []byte) ([]byte, bool) { return p.filterUp(pc, b), false }, func([]byte) { p.forwarded(pc) })
		p.endUp(pc)
	}()
	go func() {
		defer wg.Done()
		if p.pipe(pc, false, pc.client, up, func(b []byte) ([]byte, bool) { return p.filterDown(pc, b) }, pc.wrote.skim) {
			p.tellExpiry(pc)
		}
		p.closeConn(pc)
	}()
	wg.Wait()
}

// pipe copies from src to dst until either fails or filter says stop,
// holding each chunk (and the final close) while the proxy is paused (or,
// for up, the client-to-server pipe, deaf).
// filter returns what of each chunk to forward; sent runs with what was
// forwarded of each chunk. It reports whether it stopped because src
// ended (or failed, or passed a read deadline) while pc was open; its
// caller closes pc.
func (p *Proxy) pipe(pc *proxyConn, up bool, dst, src net.Conn, filter func([]byte) ([]byte, bool), sent func([]byte)) (srcEnded bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if d := time.Duration(p.delay.Load()); d > 0 && n > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-pc.ctx.Done():
				t.Stop()
				return false
			}
		}
		if !p.waitResumed(pc, up) {
			return false
		}
		if n > 0 {
			out, stop := filter(buf[:n])
			if len(out) > 0 {
				if _, werr := dst.Write(out); werr != nil {
					return false
				}
				sent(out)
			}
			if stop {
				return false
			}
		}
		if err != nil {
			return true
		}
	}
}

// Faults holds one Proxy per server of a cluster and a zk.Dialer that
// routes go-zk's connections through them, so a test can disturb the
// traffic of the clients that use it. Its methods are safe for concurrent
// use.
type Faults struct {
	servers []string
	proxies []*Proxy
	byAddr  map[string]*Proxy

	t          testing.TB  // set by NewFaultsT
	sessions   *sessionLog // the last session granted through any proxy
	resumeOnce sync.Once
	mu         sync.Mutex // serialises CutOnCreate
}

// NewFaults starts one Proxy for each address in servers. The caller must
// Close it.
func NewFaults(servers []string) (*Faults, error) {
	f := &Faults{servers: append([]string(nil), servers...), byAddr: make(map[string]*Proxy), sessions: &sessionLog{}}
	for _, s := range servers {
		p, err := newProxy(s, f.sessions)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.proxies = append(f.proxies, p)
		f.byAddr[s] = p
		// go-zk resolves host names before dialling: register the
		// resolved addresses too.
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if _, ok := f.byAddr[net.JoinHostPort(a, port)]; !ok {
				f.byAddr[net.JoinHostPort(a, port)] = p
			}
		}
	}
	return f, nil
}

// NewFaultsT is NewFaults that fails t fatally on error and closes the
// proxies when t's test ends. Its first Pause also registers a cleanup
// that resumes the proxies, which runs before the cleanups registered
// earlier, such as closing the connections made by ConnectT: a go-zk
// connection in the middle of a handshake through a paused proxy would
// otherwise take ten times its read timeout to close.
func NewFaultsT(t testing.TB, servers []string) *Faults {
	t.Helper()
	f, err := NewFaults(servers)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	f.t = t
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("zktest: %v", err)
		}
	})
	return f
}

// Dial is a zk.Dialer: use it as zk.WithDialer(f.Dial) with the server
// addresses f was made for. It connects to the proxy of address, or
// directly to address if f has no proxy for it.
func (f *Faults) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if p, ok := f.byAddr[address]; ok && strings.HasPrefix(network, "tcp") {
		address = p.Addr()
	}
	return net.DialTimeout(network, address, timeout)
}

// Proxy returns the proxy of server i, in the order given to NewFaults.
func (f *Faults) Proxy(i int) *Proxy { return f.proxies[i] }

// Pause pauses every proxy (see Proxy.Pause). Call it from the test's
// goroutine if f was made by NewFaultsT.
func (f *Faults) Pause() {
	if f.t != nil {
		f.resumeOnce.Do(func() { f.t.Cleanup(f.Resume) })
	}
	for _, p := range f.proxies {
		p.Pause()
	}
}

// Deafen deafens every proxy (see Proxy.Deafen). Call it from the test's
// goroutine if f was made by NewFaultsT.
func (f *Faults) Deafen() {
	if f.t != nil {
		f.resumeOnce.Do(func() { f.t.Cleanup(f.Resume) })
	}
	for _, p := range f.proxies {
		p.Deafen()
	}
}

// Resume resumes every proxy (see Proxy.Resume).
func (f *Faults) Resume() {
	for _, p := range f.proxies {
		p.Resume()
	}
}

// SetDelay sets every proxy's delay (see Proxy.SetDelay).
func (f *Faults) SetDelay(d time.Duration) {
	for _, p := range f.proxies {
		p.SetDelay(d)
	}
}

// Cut cuts every connection of every proxy (see Proxy.Cut).
func (f *Faults) Cut() {
	for _, p := range f.proxies {
		p.Cut()
	}
}

// Session returns the last session a server granted through any proxy
// of f: that of the client's current connection, if one client uses f.
func (f *Faults) Session() Session { return f.sessions.get() }

// ExpireSession expires f's last session on the servers, as the function
// ExpireSession does, and tells its client so, as Curator's KillSession
// does (ZooKeeper's injectSessionExpiration): each connection of the
// session through f's proxies gets a session event of state Expired
// (go-zookeeper's zk.StateExpired) before the proxy closes it. The
// client is told first, with no disconnection before; then its
// connection closes, and on reconnecting it learns from a server that
// the session expired, and gets a new one.
//
// The proxy holds the client's side of the connection open from before
// the servers are asked to end the session until they have (ZooKeeper
// closes the session's connection as soon as another attaches to the
// session), then passes on what the server sent before it closed the
// connection, and the event at the end (a server that keeps the
// connection open is read from for no more than expiryDrain, two
// seconds, after the session ended). The event is not sent (the
// connection just closes) when the client has not had its connect
// response, when a frame the server sent was cut short (one started and
// never finished cannot be finished by the proxy), when the connection
// is cut or the proxy closed meanwhile, or when the session cannot be
// ended (ExpireSession then returns the error). While the proxy is
// paused, the event and the close wait for Resume, as held bytes do.
func (f *Faults) ExpireSession(ctx context.Context) error {
	return f.expire(ctx, f.Session(), ExpireSession)
}

// Close closes every proxy. It is idempotent.
func (f *Faults) Close() error {
	var errs []error
	for _, p := range f.proxies {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
