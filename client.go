package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConnectionState is the state of a Client's ZooKeeper session, as Curator
// reports it. Its String method gives the name.
type ConnectionState int

const (
	// StateConnected is the state after the first session is established.
	StateConnected ConnectionState = iota
	// StateSuspended means the connection dropped; the session may still be
	// alive on the server. A Client that has not connected yet also reports
	// StateSuspended.
	StateSuspended
	// StateReconnected means the connection is back, with the same session
	// or, after a StateLost, with a new one.
	StateReconnected
	// StateLost means the session is gone: the server reported it expired,
	// the connection stayed suspended for longer than the session timeout, or
	// the connection came back with a new session.
	StateLost
	// StateClosed is the final state, after Close.
	StateClosed
)

// String returns the name of the state, such as "Suspended".
func (s ConnectionState) String() string {
	switch s {
	case StateConnected:
		return "Connected"
	case StateSuspended:
		return "Suspended"
	case StateReconnected:
		return "Reconnected"
	case StateLost:
		return "Lost"
	case StateClosed:
		return "Closed"
	}
	return fmt.Sprintf("ConnectionState(%d)", int(s))
}

// ErrorPolicy decides which connection states end a hold.
type ErrorPolicy int

const (
	// StandardPolicy ends a hold as soon as the connection is suspended,
	// because from then on the holder cannot know whether it still holds the
	// lock. It is the default.
	StandardPolicy ErrorPolicy = iota
	// SessionPolicy ends a hold only when the session is lost: reported
	// expired, or suspended for longer than the negotiated session timeout.
	// It rides out short disconnects, at the price of a window in which
	// another process may already hold the lock; guard writes with fencing
	// tokens ([Mutex.Token], [Mutex.CheckOp]) under this policy.
	SessionPolicy
)

// String returns the name of the policy.
func (p ErrorPolicy) String() string {
	switch p {
	case StandardPolicy:
		return "StandardPolicy"
	case SessionPolicy:
		return "SessionPolicy"
	}
	return fmt.Sprintf("ErrorPolicy(%d)", int(p))
}

// Option configures a Client. Invalid values make Connect, and every recipe
// constructor of a Client made by NewClient, return ErrInvalidArgument.
type Option func(*options)

type options struct {
	sessionTimeout time.Duration         // default 30s
	connectTimeout time.Duration         // default 15s
	retry          RetryPolicy           // default ExponentialBackoff{Base: 100ms, MaxRetries: 3}
	namespace      string                // "" or "/ns"; default ""
	acl            func(string) []zk.ACL // default world:anyone with all permissions
	auth           []authInfo            // default none
	logger         *slog.Logger          // default discards
	policy         ErrorPolicy           // default StandardPolicy
	nodeData       []byte                // default the host's first non-loopback IP address
	zkOpts         []func(*zk.Conn)      // default none
	wrapConn       func(zkConn) zkConn   // test seam around the connection; default none
	err            error                 // first invalid option
}

type authInfo struct {
	scheme string
	auth   []byte
}

func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("zklock: "+format+": %w", append(args, ErrInvalidArgument)...)
	}
}

// WithSessionTimeout sets the session timeout requested from ZooKeeper
// (default 30s). The server may negotiate it into its own bounds.
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("session timeout %v must be positive", d)
		}
		o.sessionTimeout = d
	}
}

// WithConnectTimeout sets how long Connect waits for the first session
// (default 15s).
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("connect timeout %v must be positive", d)
		}
		o.connectTimeout = d
	}
}

// WithRetryPolicy sets the policy for retrying operations that fail with a
// connection loss, and for re-creating a lock node that vanished while its
// owner waited. The default is ExponentialBackoff{Base: 100ms, MaxRetries: 3}.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(o *options) {
		if p == nil {
			o.invalid("retry policy must not be nil")
		}
		o.retry = p
	}
}

// WithNamespace puts every path under /ns. Paths that recipes return to
// callers are relative to the namespace; paths inside zk requests, such as
// the one in [Mutex.CheckOp], are full ZooKeeper paths. The namespace root
// is created on demand as a CONTAINER node.
func WithNamespace(ns string) Option {
	return func(o *options) {
		ns = strings.TrimPrefix(ns, "/")
		if ns == "" {
			o.namespace = ""
			return
		}
		if err := validatePath("/" + ns); err != nil {
			o.invalid("namespace %q: %v", ns, err)
		}
		o.namespace = "/" + ns
	}
}

// WithACL sets the ACL of every node the library creates, lock nodes and
// their parents alike. fn receives the full ZooKeeper path of the node (for
// a sequential node, the path before the sequence suffix) and must return a
// non-empty ACL. The default is world:anyone with all permissions.
func WithACL(fn func(path string) []zk.ACL) Option {
	return func(o *options) {
		if fn == nil {
			o.invalid("ACL provider must not be nil")
		}
		o.acl = fn
	}
}

// WithAuth adds credentials to the session, as zk.Conn.AddAuth does. They
// are sent when the Client connects, and go-zookeeper sends them again on
// every reconnect.
func WithAuth(scheme string, auth []byte) Option {
	return func(o *options) {
		if scheme == "" {
			o.invalid("auth scheme must not be empty")
		}
		o.auth = append(o.auth, authInfo{scheme, append([]byte(nil), auth...)})
	}
}

// WithLogger sets the logger for the library and for the connection that
// Connect opens. By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.invalid("logger must not be nil")
		}
		o.logger = l
	}
}

// WithErrorPolicy sets which connection states end a hold (default
// StandardPolicy).
func WithErrorPolicy(p ErrorPolicy) Option {
	return func(o *options) {
		if p != StandardPolicy && p != SessionPolicy {
			o.invalid("unknown error policy %d", int(p))
		}
		o.policy = p
	}
}

// WithNodeData sets the default data of lock and lease nodes. As in
// Curator, the default is the host's IP address.
func WithNodeData(data []byte) Option {
	return func(o *options) {
		if len(data) > maxNodeData {
			o.invalid("node data of %d bytes exceeds %d", len(data), maxNodeData)
		}
		o.nodeData = append([]byte{}, data...)
	}
}

// WithZKOptions passes options, such as zk.WithDialer, to zk.Connect.
// The Client's own event callback and logger are applied after them and
// win: use Listen and WithLogger instead. NewClient ignores them.
func WithZKOptions(opts ...func(*zk.Conn)) Option {
	return func(o *options) {
		for _, f := range opts {
			if f == nil {
				o.invalid("nil zk option")
			}
		}
		o.zkOpts = append(o.zkOpts, opts...)
	}
}

// maxNodeData keeps node data within ZooKeeper's default jute.maxbuffer.
const maxNodeData = 1000 * 1024

func buildOptions(opts []Option) options {
	o := options{
		sessionTimeout: 30 * time.Second,
		connectTimeout: 15 * time.Second,
		retry:          ExponentialBackoff{Base: 100 * time.Millisecond, MaxRetries: 3},
		acl:            func(string) []zk.ACL { return zk.WorldACL(zk.PermAll) },
		logger:         slog.New(slog.DiscardHandler),
		nodeData:       localAddress(),
	}
	for _, opt := range opts {
		if opt == nil {
			o.invalid("nil Option")
			continue
		}
		opt(&o)
	}
	return o
}

// localAddress is the default node data: the host's first non-loopback
// IPv4 address. Curator's default is close (InetAddress.getLocalHost(),
// which may resolve to a loopback address); only humans read it.
func localAddress() []byte {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return []byte{}
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			return []byte(ip.IP.String())
		}
	}
	return []byte("127.0.0.1")
}

// Client is a ZooKeeper connection with the session bookkeeping that the
// recipes need. It tracks the session state (Connected, Suspended,
// Reconnected, Lost, Closed), notices when go-zookeeper silently replaces an
// expired session, applies the namespace, ACLs and retry policy, and keeps
// deleting nodes whose deletion failed on the network.
//
// A Client is safe for concurrent use. Close it when done: closing ends the
// session (for a Client made by Connect), every hold, and every wait.
type Client struct {
	// Written once before the Client is returned, read-only after.
	conn     *zk.Conn
	zc       zkConn // the engine's view of conn; a seam for tests
	opts     options
	log      *slog.Logger
	ownsConn bool            // Connect made conn, so Close closes it
	initErr  error           // invalid options of NewClient
	zkEvents <-chan zk.Event // conn's event channel; closed when conn's goroutines end
	queue    *eventQueue     // session events from the zk callback (Connect only)
	closing  chan struct{}   // closed by Close, or when a wrapped conn is closed
	watches  watchSet

	closeOnce   sync.Once
	closingOnce sync.Once // closes closing

	goMu   sync.Mutex     // protects closed and wg.Add against Close's wg.Wait
	closed bool           // Close has begun; no goroutine may start
	wg     sync.WaitGroup // every goroutine the Client starts

	mu         sync.Mutex             // protects the fields below
	state      ConnectionState        // current state
	session    int64                  // current session id, 0 before the first
	negotiated time.Duration          // session timeout the server granted, 0 if unknown
	suspends   uint64                 // number of suspensions so far
	losses     uint64                 // number of session losses so far
	changed    chan struct{}          // closed and replaced at every transition
	listeners  map[*listener]struct{} // active Listen callbacks
}

// Connect opens a ZooKeeper connection to servers and waits, up to the
// connect timeout, for a session. On failure it returns an error and leaves
// no connection open.
func Connect(servers []string, opts ...Option) (*Client, error) {
	o := buildOptions(opts)
	if o.err != nil {
		return nil, o.err
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("zklock: connect: empty server list: %w", ErrInvalidArgument)
	}
	c := newClient(o)
	c.ownsConn = true
	c.queue = newEventQueue()
	// Ours come last: the Client must see every session event.
	zkOpts := append(slices.Clone(o.zkOpts), zk.WithEventCallback(c.queue.push), zk.WithLogger(zkLogger{c}))
	conn, events, err := zk.Connect(servers, o.sessionTimeout, convertOpts(zk.WithLogInfo(true), zkOpts)...)
	if err != nil {
		return nil, fmt.Errorf("zklock: connect %v: %w", servers, err)
	}
	c.conn, c.zc, c.zkEvents = conn, conn, events
	if o.wrapConn != nil {
		c.zc = o.wrapConn(conn)
	}
	c.start()

	t := time.NewTimer(o.connectTimeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		ok, ch := c.session != 0, c.changed
		c.mu.Unlock()
		if ok {
			break
		}
		select {
		case <-ch:
		case <-t.C:
			c.Close()
			return nil, fmt.Errorf("zklock: connect %v: no session within %v: %w", servers, o.connectTimeout, zk.ErrNoServer)
		}
	}
	for _, a := range o.auth {
		if err := conn.AddAuth(a.scheme, a.auth); err != nil {
			c.Close()
			return nil, fmt.Errorf("zklock: connect: add auth %q: %w", a.scheme, err)
		}
	}
	return c, nil
}

// NewClient wraps an existing connection. events must be the channel that
// zk.Connect returned with conn; the Client drains it from then on, so
// nobody else may read it. The Client does not own conn: Close stops the
// Client, deletes its lock nodes, and leaves conn open.
//
// go-zookeeper does not expose the negotiated session timeout, so a wrapped
// Client assumes the one set with WithSessionTimeout (default 30s). Invalid
// options, or a nil conn or events, make every recipe constructor return
// ErrInvalidArgument.
func NewClient(conn *zk.Conn, events <-chan zk.Event, opts ...Option) *Client {
	o := buildOptions(opts)
	c := newClient(o)
	c.initErr = o.err
	if conn == nil || events == nil {
		if c.initErr == nil {
			c.initErr = fmt.Errorf("zklock: NewClient: nil conn or events: %w", ErrInvalidArgument)
		}
		c.closingOnce.Do(func() { close(c.closing) })
		c.state = StateClosed
		return c
	}
	c.conn, c.zc, c.zkEvents = conn, conn, events
	if conn.State() == zk.StateHasSession {
		c.state, c.session = StateConnected, conn.SessionID()
		// Events still buffered are history (the connect that led here);
		// replayed, they would look like a suspension.
	drain:
		for {
			select {
			case _, ok := <-events:
				if !ok {
					break drain
				}
			default:
				break drain
			}
		}
	}
	for _, a := range o.auth {
		if err := conn.AddAuth(a.scheme, a.auth); err != nil {
			c.log.Error("zklock: add auth failed", "scheme", a.scheme, "err", err)
		}
	}
	c.start()
	return c
}

func newClient(o options) *Client {
	return &Client{
		opts:      o,
		log:       o.logger,
		closing:   make(chan struct{}),
		state:     StateSuspended,
		changed:   make(chan struct{}),
		listeners: make(map[*listener]struct{}),
		watches:   watchSet{m: make(map[string]<-chan zk.Event), sweepAt: 64},
	}
}

// Conn returns the underlying connection, for operations the recipes do not
// cover, such as a Multi guarded by [Mutex.CheckOp].
func (c *Client) Conn() *zk.Conn { return c.conn }

// State returns the current connection state.
func (c *Client) State() ConnectionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Listen calls fn with every connection state change, in order, on a
// goroutine of its own, so a slow fn delays no one else. The final call is
// with StateClosed. stop ends the calls; it does not wait for a call in
// progress, so it may be called from fn. Close waits for fn to return, so
// fn must not call Close.
func (c *Client) Listen(fn func(ConnectionState)) (stop func()) {
	if fn == nil {
		return func() {}
	}
	l := &listener{fn: fn, signal: make(chan struct{}, 1), stop: make(chan struct{})}
	c.mu.Lock()
	closed := c.state == StateClosed
	if !closed {
		c.listeners[l] = struct{}{}
	}
	c.mu.Unlock()
	if closed || !c.goFunc(l.run) {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.listeners, l)
			c.mu.Unlock()
			close(l.stop)
		})
	}
}

// Close ends every hold (their contexts are cancelled with ErrLockLost and
// ErrClosed) and every wait (Acquire returns ErrClosed), deletes the
// Client's lock nodes, closes the connection if Connect opened it, and waits
// for the Client's goroutines. It is idempotent and always returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.transition(func() bool {
			c.state = StateClosed
			return true
		})
		c.goMu.Lock()
		c.closed = true
		c.goMu.Unlock()
		c.closingOnce.Do(func() { close(c.closing) })
		if c.ownsConn && c.conn != nil {
			c.conn.Close()
		}
		c.wg.Wait()
		if c.ownsConn && c.zkEvents != nil {
			// Wait for go-zookeeper's own goroutines: it closes the event
			// channel when they are done.
			t := time.NewTimer(10 * time.Second)
			defer t.Stop()
			for open := true; open; {
				select {
				case _, open = <-c.zkEvents:
				case <-t.C:
					open = false
				}
			}
		}
	})
	return nil
}

// usable returns ErrClosed (or the NewClient option error) when the Client
// cannot serve recipes.
func (c *Client) usable() error {
	if c.initErr != nil {
		return c.initErr
	}
	select {
	case <-c.closing:
		return ErrClosed
	default:
		return nil
	}
}

// goFunc runs f on a goroutine that Close waits for. It reports false, and
// does not run f, once Close has begun.
func (c *Client) goFunc(f func()) bool {
	c.goMu.Lock()
	defer c.goMu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// cleanup runs f, a clean-up loop, in the background. Once Close has begun
// it runs f on the caller's goroutine instead, where f makes one attempt:
// closing the session deletes the nodes of a connection the Client owns,
// but a wrapped connection lives on.
func (c *Client) cleanup(f func()) {
	if !c.goFunc(f) && !c.ownsConn {
		f()
	}
}

// sessionTimeout is the negotiated session timeout if known, else the
// requested one.
func (c *Client) sessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.negotiated > 0 {
		return c.negotiated
	}
	return c.opts.sessionTimeout
}

// fullPath maps a caller's path into the namespace.
func (c *Client) fullPath(p string) string {
	if c.opts.namespace == "" {
		return p
	}
	if p == "/" {
		return c.opts.namespace
	}
	return c.opts.namespace + p
}

// relPath maps a ZooKeeper path back out of the namespace.
func (c *Client) relPath(p string) string {
	ns := c.opts.namespace
	if ns == "" {
		return p
	}
	if p == ns {
		return "/"
	}
	return strings.TrimPrefix(p, ns)
}

// snapshot records the session facts a hold depends on.
type snapshot struct {
	session  int64
	suspends uint64
	losses   uint64
}

func (c *Client) snapshot() snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return snapshot{c.session, c.suspends, c.losses}
}

// stateChanged returns a channel that is closed at the next transition.
func (c *Client) stateChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// holdLost reports why a hold taken at snapshot s no longer stands under
// the Client's error policy, or nil if it still stands.
func (c *Client) holdLost(s snapshot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state == StateClosed:
		return fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)
	case c.losses != s.losses || c.session != s.session:
		return fmt.Errorf("%w: session lost", ErrLockLost)
	case c.opts.policy == StandardPolicy && c.suspends != s.suspends:
		return fmt.Errorf("%w: connection suspended", ErrLockLost)
	}
	return nil
}

// transition applies f under c.mu and, if f reports a change, wakes
// waiters and queues the new state for listeners.
func (c *Client) transition(f func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == StateClosed || !f() {
		return
	}
	close(c.changed)
	c.changed = make(chan struct{})
	for l := range c.listeners {
		l.push(c.state)
	}
	c.log.Info("zklock: connection state", "state", c.state.String(), "session", fmt.Sprintf("0x%x", c.session))
}

// start launches the goroutine that owns session events.
func (c *Client) start() {
	c.goFunc(c.run)
}

// run is the only reader of session events. It never blocks on listeners.
func (c *Client) run() {
	var (
		signal <-chan struct{}
		events = c.zkEvents
		lostT  *time.Timer
		lostC  <-chan time.Time
	)
	if c.queue != nil {
		signal, events = c.queue.signal, nil
	}
	stopLost := func() {
		if lostT != nil {
			lostT.Stop()
			lostT, lostC = nil, nil
		}
	}
	defer stopLost()
	handle := func(ev zk.Event) {
		suspended := c.handle(ev)
		if suspended && lostT == nil {
			lostT = time.NewTimer(c.sessionTimeout())
			lostC = lostT.C
		} else if !suspended && c.State() != StateSuspended {
			stopLost()
		}
	}
	for {
		select {
		case <-c.closing:
			return
		case <-signal:
			for _, ev := range c.queue.drain() {
				handle(ev)
			}
		case ev, ok := <-events:
			if !ok {
				// The owner closed the wrapped connection: its session and
				// our nodes are gone, and nothing can be done any more.
				c.transition(func() bool { return c.lose() })
				c.closingOnce.Do(func() { close(c.closing) })
				return
			}
			handle(ev)
		case <-lostC:
			lostT, lostC = nil, nil
			c.transition(func() bool {
				if c.state != StateSuspended {
					return false
				}
				c.log.Warn("zklock: suspended longer than the session timeout; session lost")
				return c.lose()
			})
		}
	}
}

// handle applies one go-zookeeper event. It reports whether the event
// suspended the connection.
func (c *Client) handle(ev zk.Event) (suspended bool) {
	if ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrSessionExpired) {
		c.transition(func() bool { return c.lose() })
		return false
	}
	if ev.Type != zk.EventSession {
		return false
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := c.zc.SessionID()
		c.transition(func() bool {
			switch {
			case c.session == 0 && c.losses == 0:
				c.session, c.state = sid, StateConnected
			case sid != c.session:
				// go-zookeeper replaced an expired session without a word.
				if c.state != StateLost {
					c.lose()
				}
				c.session, c.state = sid, StateReconnected
			case c.state == StateSuspended || c.state == StateLost:
				c.state = StateReconnected
			default:
				return false
			}
			return true
		})
	case zk.StateDisconnected, zk.StateConnecting:
		c.transition(func() bool {
			if c.state != StateConnected && c.state != StateReconnected {
				return false
			}
			c.state = StateSuspended
			c.suspends++
			suspended = true
			return true
		})
	case zk.StateExpired:
		c.transition(func() bool { return c.lose() })
	case zk.StateAuthFailed:
		c.log.Error("zklock: authentication failed")
	}
	return suspended
}

// lose marks the session lost; c.mu must be held. It reports whether the
// state changed.
func (c *Client) lose() bool {
	if c.state == StateLost {
		return false
	}
	c.state = StateLost
	c.losses++
	return true
}

// setNegotiated records the session timeout the server granted.
func (c *Client) setNegotiated(d time.Duration) {
	c.mu.Lock()
	c.negotiated = d
	c.mu.Unlock()
}

// eventQueue takes go-zookeeper's callbacks without ever blocking them.
type eventQueue struct {
	mu     sync.Mutex
	events []zk.Event // guarded by mu
	signal chan struct{}
}

func newEventQueue() *eventQueue {
	return &eventQueue{signal: make(chan struct{}, 1)}
}

func (q *eventQueue) push(ev zk.Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *eventQueue) drain() []zk.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.events
	q.events = nil
	return evs
}

// listener delivers states to one Listen callback, in order.
type listener struct {
	fn     func(ConnectionState)
	mu     sync.Mutex
	states []ConnectionState // guarded by mu
	signal chan struct{}
	stop   chan struct{}
}

func (l *listener) push(s ConnectionState) {
	l.mu.Lock()
	l.states = append(l.states, s)
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

func (l *listener) run() {
	for {
		select {
		case <-l.stop:
			return
		case <-l.signal:
		}
		l.mu.Lock()
		states := l.states
		l.states = nil
		l.mu.Unlock()
		for _, s := range states {
			select {
			case <-l.stop:
				return
			default:
			}
			l.fn(s)
			if s == StateClosed {
				return
			}
		}
	}
}

// zkLogger routes go-zookeeper's log lines to the Client's logger, and
// learns the negotiated session timeout from the line go-zookeeper writes
// when a session is established (it has no accessor for it).
type zkLogger struct{ c *Client }

func (l zkLogger) Printf(format string, args ...any) {
	if format == "authenticated: id=%d, timeout=%d" && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			l.c.setNegotiated(time.Duration(ms) * time.Millisecond)
		}
	}
	l.c.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
}

// convertOpts turns plain option funcs into go-zookeeper's unexported
// option type, which sample has.
func convertOpts[T ~func(*zk.Conn)](sample T, fs []func(*zk.Conn)) []T {
	out := make([]T, 0, len(fs)+1)
	out = append(out, sample)
	for _, f := range fs {
		out = append(out, T(f))
	}
	return out
}

// zkConn is the part of *zk.Conn the engine uses.
type zkConn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Exists(path string) (bool, *zk.Stat, error)
	Delete(path string, version int32) error
	Sync(path string) (string, error)
	SessionID() int64
}

// retryable reports whether err is a connection-level failure after which
// the same operation may succeed.
func retryable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrSessionExpired)
}

// await runs op and waits for it or for ctx. go-zookeeper calls cannot be
// cancelled, so when ctx can end, op runs on its own goroutine; if ctx ends
// first, await returns ctx.Err() and hands op's late result to abandoned
// (if not nil) on that goroutine, so that whatever op created is cleaned up.
func await[T any](c *Client, ctx context.Context, op func() (T, error), abandoned func(T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		return op()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	if !c.goFunc(func() {
		v, err := op()
		ch <- result{v, err}
	}) {
		// Close has begun; clean-up still runs, on the caller's goroutine.
		return op()
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if abandoned != nil {
			late := func() {
				r := <-ch
				abandoned(r.v, r.err)
			}
			if !c.goFunc(late) {
				late() // Close has begun: clean up before returning
			}
		}
		return zero, ctx.Err()
	}
}

// retry runs op through await under the retry policy, retrying
// connection-level failures.
func retry[T any](c *Client, ctx context.Context, op func() (T, error)) (T, error) {
	r := newRetrier(c.opts.retry)
	for {
		v, err := await(c, ctx, op, nil)
		if err == nil || !retryable(err) {
			return v, closedErr(err)
		}
		if ok, werr := r.next(ctx, c.closing); !ok {
			if werr != nil {
				return v, werr
			}
			return v, err
		}
		// Like Curator's RetryLoop, give the connection a chance to come
		// back before the next attempt.
		if werr := c.awaitConnected(ctx, c.opts.connectTimeout); werr != nil && !errors.Is(werr, context.DeadlineExceeded) {
			return v, werr
		}
	}
}

// awaitConnected waits until the connection is up, for at most d. It
// returns ctx's error, ErrClosed, or context.DeadlineExceeded when d passes.
func (c *Client) awaitConnected(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		ch := c.stateChanged()
		switch c.State() {
		case StateConnected, StateReconnected:
			return nil
		case StateClosed:
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closing:
			return ErrClosed
		case <-t.C:
			return context.DeadlineExceeded
		}
	}
}

// closedErr maps go-zookeeper's closing error to ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, zk.ErrClosing) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
