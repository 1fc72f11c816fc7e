package zklock

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

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
	deletes  recentDeletes // checked again after a reconnect
	obs      *observer     // nil without WithObserver

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
	suspended  time.Time              // when the last suspension began
	losses     uint64                 // number of session losses so far
	changed    chan struct{}          // closed and replaced at every transition
	listeners  map[*listener]struct{} // active Listen callbacks
}

// Connect opens a ZooKeeper connection to servers and waits, up to the
// connect timeout, for a session. On failure it returns an error and leaves
// no connection open; when no session came within the connect timeout, the
// error wraps zk.ErrNoServer and context.DeadlineExceeded.
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
			// The connect timeout is a deadline: say so to errors.Is.
			return nil, fmt.Errorf("zklock: connect %v: no session within %v: %w (%w)", servers, o.connectTimeout, zk.ErrNoServer, context.DeadlineExceeded)
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
// cover, such as a Multi guarded by [Mutex.CheckOp]. It is nil for a Client
// not made by Connect or NewClient.
func (c *Client) Conn() *zk.Conn {
	if c == nil {
		return nil
	}
	return c.conn
}

// errZeroClient is returned for a nil Client, or one not made by Connect or
// NewClient.
var errZeroClient = fmt.Errorf("nil or zero Client (use Connect or NewClient): %w", ErrInvalidArgument)

// zero reports whether c was not made by Connect or NewClient.
func (c *Client) zero() bool { return c == nil || c.closing == nil }

// Close ends every hold (their contexts are cancelled with ErrLockLost and
// ErrClosed) and every wait (Acquire returns ErrClosed), deletes the
// Client's lock nodes, closes the connection if Connect opened it, and waits
// for the Client's goroutines. It is idempotent and always returns nil.
func (c *Client) Close() error {
	if c.zero() {
		return nil
	}
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
	if c.zero() {
		return errZeroClient
	}
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

// recipeData checks what a recipe constructor needs of c and of its path
// p, and returns the data of the recipe's nodes: data, or if it is nil the
// Client's default. what names the recipe in errors.
func (c *Client) recipeData(what, p string, data []byte) ([]byte, error) {
	if c.zero() {
		return nil, fmt.Errorf("zklock: %s %s: %w", what, quotePath(p), errZeroClient)
	}
	if c.initErr != nil {
		return nil, fmt.Errorf("zklock: %s %s: %w", what, quotePath(p), c.initErr)
	}
	if err := validateLockPath(p); err != nil {
		return nil, err
	}
	if data == nil {
		data = c.opts.nodeData
	}
	return data, checkRequest(what, p, c.fullPath(p), data)
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
