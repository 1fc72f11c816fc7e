package zksession

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A Dialer opens a connection to address within timeout, as
// net.DialTimeout does (and as zktest's Link.Dial does, for faults).
type Dialer func(network, address string, timeout time.Duration) (net.Conn, error)

// Auth is one set of credentials, sent (AuthPacket) on every connection
// before anything else: Scheme "digest" with Auth "user:password".
type Auth struct {
	Scheme string
	Auth   []byte
}

// Config configures a Session. The zero value asks for a 10 s session.
type Config struct {
	SessionTimeout time.Duration // requested; the server clamps it (default 10s)
	// Dialer dials a server's address as given ("host:port"), at every
	// connection attempt: the default, as net.DialTimeout does, resolves
	// a name afresh each time (Go keeps no DNS cache).
	Dialer Dialer
	Auth   []Auth // credentials, sent again at every reconnect
	// TLS, if set, makes every connection a TLS client connection (the
	// server's secure client port), its handshake bounded as ZooKeeper's
	// is. It is copied at Dial; each connection's copy has ServerName set
	// to the host of the server's address, unless TLS sets one.
	TLS *tls.Config
	// OnState, if set, hears every state in order, on one goroutine of
	// the Session's: it must not block for long nor call Close.
	OnState func(State)
	// OnEvent, if set, hears every watch notification and every change
	// of the session's state, in order, synchronously on the session's
	// reader goroutine (the one that reads replies and reconnects): it
	// must not block, nor wait for a call of the Session, nor call Close,
	// for the reader reads nothing until it returns. A notification
	// reaches OnEvent before any Watch's channel, so OnEvent sees the
	// notifications in wire order. A state change comes as an Event of
	// Type zkwire.EventNone and State StateSyncConnected each time a
	// ConnectResponse grants or resumes the session (before anything
	// else is read on that connection), StateDisconnected once per lost
	// connection, and last StateExpired, StateAuthFailed or StateClosed:
	// the same states in the same order as OnState hears them. A server's
	// own EventNone notifications are not passed on (its Expired comes as
	// the session's StateExpired).
	OnEvent func(Event)
	// OnDial, if set, hears how each connection attempt ended: addr, and
	// nil if the server granted or resumed the session on it, else why
	// not, in an error that begins with addr: a name that does not
	// resolve ("<addr> does not resolve: ...", wrapping the
	// *net.DNSError), a dial that failed (wrapping its error, such as
	// ECONNREFUSED), a TLS handshake that failed (matching ErrNotTLS
	// when the server does not speak TLS), a server that answered
	// but not as ZooKeeper (matching ErrNotZooKeeper), "<addr> accepted
	// the connection, then EOF before any ZooKeeper reply", "<addr>
	// accepted the connection but has not answered ZooKeeper's handshake
	// in <duration>" (no answer by the attempt's deadline, or by the end
	// of Dial's context), an offer of a read-only session (matching
	// ErrReadOnly) or an expired session (ErrSessionExpired). It is called
	// on the goroutine that dials, Dial's caller's during Dial and then
	// the reader goroutine (before OnEvent hears that connection's
	// StateSyncConnected): it must not block nor call Close.
	OnDial   func(addr string, err error)
	MaxFrame int // the largest request sent (default zkwire.MaxBuffer, the servers' own limit)
	// MaxReply is the largest reply read whole (default 64 MiB): a
	// listing of many children may pass the servers' request limit. A
	// larger reply is read past and fails its request alone, with an
	// error matching zkwire.ErrFrameSize; the connection goes on.
	MaxReply int

	resolver *net.Resolver // the default Dialer's (nil: net.DefaultResolver), set by tests
}

// A Session is one ZooKeeper session, over one connection at a time. Its
// methods are safe for concurrent use. It owns a reader goroutine (which
// also reconnects), a writer goroutine per connection and a goroutine for
// OnState; Close waits for all of them.
type Session struct {
	cfg     Config
	servers []string // shuffled once
	epoch   time.Time
	wake    chan struct{} // cap 1: something is queued
	quit    chan struct{} // closed when the session ends
	notify  *notifier
	watches watchSet
	wg      sync.WaitGroup
	closing atomic.Bool  // Close began: a lost connection is not replaced
	timeout atomic.Int64 // the negotiated timeout T, in ns
	recv    atomic.Int64 // when a frame was last read, ns since epoch
	// heard is when the newest request (or ping, or ConnectRequest) that
	// a server has answered was written, ns since epoch: that server heard
	// from the session then or later, so the session outlives heard by T
	// at least. Written by the goroutine that reads the connection.
	heard    atomic.Int64
	attempts atomic.Uint64 // connection attempts begun, counted before each dial

	mu       sync.Mutex // guards the fields below
	queue    []*request // queued, not yet written
	pending  []*request // written, awaiting their replies in order
	pings    []int64    // when the pings in flight were written, ns since epoch, oldest first
	xid      int32      // the last ordinary xid written
	lastZxid int64      // the last zxid of a FIFO reply, if positive
	id       int64      // the session id, 0 before the first connect
	passwd   []byte
	state    State
	next     int      // the index of the next server to try
	nc       net.Conn // the connection being set up or served, closed by finish
	end      error    // why the session ended; nil while it lives
}

// Dial opens a session on one of servers ("host:port", tried in a shuffled
// order, again and again until ctx ends), and returns once a server has
// granted it: a ConnectRequest with session id 0, answered by a read-write
// ConnectResponse. If no server granted one before ctx ended, it returns
// an error wrapping ctx.Err() and every server's last error (see
// Config.OnDial), each named in its text.
func Dial(ctx context.Context, servers []string, cfg Config) (*Session, error) {
	if len(servers) == 0 {
		return nil, errors.New("zksession: dial: no server")
	}
	s := newSession(servers, cfg)
	stop := context.AfterFunc(ctx, s.abortSetup)
	c, err := s.dialFirst(ctx)
	if !stop() && err == nil {
		c.nc.Close()
		err = &dialError{ctxErr: ctx.Err()}
	}
	if err != nil {
		return nil, err
	}
	if cfg.OnState != nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.notify.run() }()
	}
	s.wg.Add(1)
	go s.run(c)
	return s, nil
}

func newSession(servers []string, cfg Config) *Session {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Dialer == nil {
		cfg.Dialer = dialer(cfg.resolver)
	}
	cfg.TLS = cfg.TLS.Clone() // nil stays nil
	s := &Session{cfg: cfg, servers: append([]string(nil), servers...), epoch: time.Now()}
	rand.Shuffle(len(s.servers), func(i, j int) { s.servers[i], s.servers[j] = s.servers[j], s.servers[i] })
	s.wake = make(chan struct{}, 1)
	s.quit = make(chan struct{})
	s.notify = newNotifier(cfg.OnState)
	s.passwd = make([]byte, 16)
	s.timeout.Store(int64(cfg.SessionTimeout))
	return s
}

// dialFirst tries the servers in turn until one grants a session or ctx
// ends, pausing after each round over them all.
func (s *Session) dialFirst(ctx context.Context) (*conn, error) {
	perServer := s.cfg.SessionTimeout / time.Duration(len(s.servers))
	last := make(map[string]error, len(s.servers))
	for i := 0; ; i++ {
		if i > 0 && i%len(s.servers) == 0 && !sleep(ctx.Done(), pause(i/len(s.servers))) {
			break
		}
		deadline, ctxBound := time.Now().Add(perServer), false
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline, ctxBound = d, true
		}
		if !time.Now().Before(deadline) {
			<-ctx.Done() // no time left for an attempt: ctx ends now
			break
		}
		addr := s.nextServer()
		c, err := s.attempt(addr, deadline)
		if err == nil {
			return c, nil
		}
		// An attempt that ran out of Dial's time tells less than the
		// whole attempt before it at the same address.
		if cut := (ctxBound || ctx.Err() != nil) && isTimeout(err); !cut || last[addr] == nil {
			last[addr] = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, s.dialErr(ctx.Err(), last)
}

// dialErr returns Dial's error when ctx ended with ctxErr: it names
// every server's last error, by address.
func (s *Session) dialErr(ctxErr error, last map[string]error) error {
	e := &dialError{ctxErr: ctxErr}
	for _, addr := range slices.Sorted(maps.Keys(last)) {
		e.errs = append(e.errs, last[addr])
	}
	for _, addr := range s.servers {
		if last[addr] == nil {
			e.errs = append(e.errs, fmt.Errorf("%s: not tried", addr))
			last[addr] = e.errs[len(e.errs)-1] // once, if listed twice
		}
	}
	return e
}

// abortSetup closes the connection being set up, if any.
func (s *Session) abortSetup() {
	s.mu.Lock()
	if s.nc != nil {
		s.nc.Close()
	}
	s.mu.Unlock()
}

func (s *Session) nextServer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := s.servers[s.next%len(s.servers)]
	s.next++
	return addr
}

// pause returns the pause after n > 0 rounds over every server without
// success, as the Java client pauses when its list comes round again: at
// least half of pauseLimit(n), the rest at random, so that clients that
// lost their servers together do not all come back at once.
func pause(n int) time.Duration {
	limit := pauseLimit(n)
	return limit/2 + rand.N(limit/2)
}

// pauseLimit is the longest pause after n > 0 rounds over every server
// without success: 100 ms doubling, at most a second.
func pauseLimit(n int) time.Duration {
	return min(100*time.Millisecond<<min(n-1, 4), time.Second)
}

// sleep waits for d, or until done is closed (then it returns false).
func sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// SessionID returns the session's id.
func (s *Session) SessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Password returns the session's password.
func (s *Session) Password() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.passwd...)
}

// Timeout returns the session timeout the server negotiated: the one its
// last ConnectResponse gave (it may change at a reconnect, and is updated
// before OnEvent hears that connection's StateSyncConnected). Before the
// first ConnectResponse it is Config.SessionTimeout. It is safe for
// concurrent use.
func (s *Session) Timeout() time.Duration { return time.Duration(s.timeout.Load()) }

// ConnEpoch returns how many connection attempts the session has begun:
// each is counted before it dials. The session has one connection at a
// time, begins an attempt only once the connection before it has stopped
// (nothing more is written nor read on it), and reads a reply only on the
// connection its request was written on. So if a caller reads equal
// values before sending a request and after getting its reply, the
// request and its reply travelled on one connection, with no connection
// lost between them; unequal values say nothing either way. It is safe
// for concurrent use.
func (s *Session) ConnEpoch() uint64 { return s.attempts.Load() }

// LastZxid returns the last zxid seen in a reply to a request.
func (s *Session) LastZxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastZxid
}

// State returns the session's state now.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Done returns a channel closed when the session has ended: expired,
// refused the credentials, or closed. Err then says why.
func (s *Session) Done() <-chan struct{} { return s.quit }

// Err returns nil while the session lives, then why it ended: an error
// matching ErrSessionExpired or ErrAuthFailed, or ErrClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}
