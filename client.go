package zklock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock/internal/zksession"
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
	opts options
	log  *slog.Logger
	obs  *observer // nil without WithObserver

	// The Client's parts, each a type in its own file, which says who
	// writes each field and under which lock. Their fields and methods
	// are promoted: c.zc is c.transport.zc.
	transport      // transport.go: the connection or session, and its events
	lifecycle      // lifecycle.go: the closing signal and the goroutines Close waits for
	sessionState   // session.go: the connection state, its history and its listeners
	holdTable      // holdtable.go: the holds that stand and how they are followed
	opsMemory      // zkops.go: what the ZooKeeper operations remember between calls
	drainState     // shutdown.go: Shutdown's drain of the acquires
	backgroundWork // background.go: work left to the background
}

// Connect opens a ZooKeeper connection to servers and waits, up to the
// connect timeout, for a session. On failure it returns an error and leaves
// no connection open.
//
// Each entry of servers is "host:port" or "host" (port 2181; an IPv6
// address in brackets, as "[::1]:2181" or "[::1]"), or several
// of them separated by commas, as in a Curator connect string
// ("zk1:2181,zk2:2181"). An empty list or an empty entry is refused with
// ErrInvalidArgument, and so is a chroot suffix ("zk1:2181/app"): use
// [WithNamespace] instead, which zklock applies on the client side. A URL
// scheme ("zk://", "http://") is refused too, naming it.
//
// Connect does not wait in vain: when no server name resolves, or when
// every server has refused the connection (nothing listens on that port)
// or answered with bytes that are not ZooKeeper's (another service on that
// port), or, with [WithTLS], did not speak TLS (a plaintext port), it
// returns at once an error that says so and names each address;
// the error wraps zk.ErrNoServer and the network errors. Names that do not
// resolve while others do are skipped, with a warning in the log. When no
// session came within the connect timeout, the error wraps zk.ErrNoServer
// and context.DeadlineExceeded, and says what each address last did: a
// dial's error, a connection closed before ZooKeeper's reply, or one
// accepted and never answered.
func Connect(servers []string, opts ...Option) (*Client, error) {
	o := buildOptions(opts)
	if o.err != nil {
		return nil, o.err
	}
	addrs, err := parseServers(servers)
	if err != nil {
		return nil, err
	}
	if len(o.zkOpts) == 0 {
		return connectOwn(addrs, o)
	}
	return connectGo(addrs, o)
}

// connectGo is Connect with WithZKOptions: a go-zookeeper connection that
// the Client owns, and runs on as one made by NewClient does.
func connectGo(addrs []string, o options) (*Client, error) {
	if o.tls != nil {
		return nil, errorf(ErrInvalidArgument, "connect: WithTLS with WithZKOptions: give go-zookeeper a TLS dialer, or drop WithZKOptions")
	}
	log := o.logger
	zkOpts := o.zkOpts
	if o.dialer != nil {
		zkOpts = append(zkOpts, zk.WithDialer(zk.Dialer(o.dialer)))
	}
	conn, events, err := zk.Connect(addrs, o.sessionTimeout, convertOpts(zk.WithLogger(zkLogger{log}), zkOpts)...)
	if err != nil {
		return nil, wrapf(err, "connect %s", strings.Join(addrs, ","))
	}
	c := newWrapped(conn, events, o)
	c.ownsConn = true
	c.start()
	if err := c.awaitFirstSession(addrs); err != nil {
		c.Close()
		return nil, err
	}
	for _, a := range o.auth {
		if err := conn.AddAuth(a.scheme, a.auth); err != nil {
			c.Close()
			return nil, wrapf(err, "connect: add auth %q", a.scheme)
		}
	}
	return c, nil
}

// awaitFirstSession waits for Connect's first session, up to the connect
// timeout.
func (c *Client) awaitFirstSession(addrs []string) error {
	t := time.NewTimer(c.opts.connectTimeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		ok, ch := c.session != 0, c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
			// The connect timeout is a deadline: say so to errors.Is.
			msg := fmt.Sprintf("zklock: connect %s: no session within %v: %s", strings.Join(addrs, ","), c.opts.connectTimeout, zk.ErrNoServer)
			return &wrapError{msg: msg, errs: []error{zk.ErrNoServer, context.DeadlineExceeded}}
		}
	}
}

// parseServers splits Curator-style connect strings into addresses
// "host:port", with the default port where there is none. It refuses an
// empty list, empty entries, bad ports and a chroot suffix.
func parseServers(servers []string) ([]string, error) {
	if len(servers) == 0 {
		return nil, errorf(ErrInvalidArgument, "connect: empty server list")
	}
	var addrs []string
	for _, s := range servers {
		for _, a := range strings.Split(s, ",") {
			addr, err := parseServer(strings.TrimSpace(a))
			if err != nil {
				return nil, errorf(ErrInvalidArgument, "connect: server %q: %s", s, err)
			}
			addrs = append(addrs, addr)
		}
	}
	return addrs, nil
}

// parseServer checks one address and adds the default port if needed.
func parseServer(a string) (string, error) {
	if a == "" {
		return "", errors.New("empty address")
	}
	if scheme, rest, ok := strings.Cut(a, "://"); ok {
		return "", fmt.Errorf("a URL scheme (%s://) is not part of a ZooKeeper address: give host:port, such as %q", scheme, strings.TrimSuffix(rest, "/"))
	}
	if i := strings.Index(a, "/"); i >= 0 {
		return "", fmt.Errorf("chroot suffix %q not supported (use WithNamespace(%q))", a[i:], strings.Trim(a[i:], "/"))
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		host, port = a, strconv.Itoa(zk.DefaultPort)
		if ip, ok := bracketedIPv6(a); ok {
			host = ip // "[::1]": an IPv6 host without a port
		} else if strings.ContainsAny(a, ":[]") {
			return "", fmt.Errorf("address %q: want host:port (an IPv6 address in brackets)", a)
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("address %q: bad port %q", a, port)
	}
	if host == "" {
		return "", fmt.Errorf("address %q: no host", a)
	}
	return net.JoinHostPort(host, port), nil
}

// bracketedIPv6 returns the IPv6 address inside a, if a is one in
// brackets, such as "[::1]" or "[fe80::1%eth0]".
func bracketedIPv6(a string) (string, bool) {
	inner, opened := strings.CutPrefix(a, "[")
	inner, closed := strings.CutSuffix(inner, "]")
	if !opened || !closed {
		return "", false
	}
	ip, err := netip.ParseAddr(inner)
	return inner, err == nil && ip.Is6()
}

// NewClient wraps an existing connection. events must be the channel that
// zk.Connect returned with conn; the Client drains it from then on, so
// nobody else may read it. The Client does not own conn: Close stops the
// Client, deletes its lock nodes, and leaves conn open.
//
// go-zookeeper does not expose the negotiated session timeout, so a wrapped
// Client assumes the one set with WithSessionTimeout (default 30s). Nor
// does it let a wrapped connection's node events reach the Client as they
// reach one made by Connect, so a wrapped Client follows each hold's node
// with a goroutine of its own; Connect's keeps none per hold. Invalid
// options, or a nil conn or events, make every recipe constructor return
// ErrInvalidArgument.
func NewClient(conn *zk.Conn, events <-chan zk.Event, opts ...Option) *Client {
	o := buildOptions(opts)
	c := newClient(o)
	c.initErr = o.err
	if conn == nil || events == nil {
		if c.initErr == nil {
			c.initErr = errorf(ErrInvalidArgument, "NewClient: nil conn or events")
		}
		c.end()
		c.startedAt(StateClosed, 0)
		registered(c, false) // closed from the start
		return c
	}
	c.adopt(conn, events)
	for _, a := range o.auth {
		if err := conn.AddAuth(a.scheme, a.auth); err != nil {
			c.log.Error("zklock: add auth failed", "scheme", a.scheme, "err", err)
		}
	}
	c.start()
	return c
}

// newWrapped is a Client on conn, not yet started.
func newWrapped(conn *zk.Conn, events <-chan zk.Event, o options) *Client {
	c := newClient(o)
	c.adopt(conn, events)
	return c
}

// adopt makes conn the Client's connection, before it starts.
func (c *Client) adopt(conn *zk.Conn, events <-chan zk.Event) {
	c.conn, c.zc, c.zkEvents = conn, goConn{conn}, events
	if c.opts.wrapConn != nil {
		c.zc = c.opts.wrapConn(c.zc)
	}
	if conn.State() == zk.StateHasSession {
		c.startedAt(StateConnected, conn.SessionID())
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
}

func newClient(o options) *Client {
	c := &Client{opts: o, log: o.logger}
	c.lifecycle.init()
	c.sessionState.init()
	c.setUpLocked()
	c.holdTable.init(c)
	c.opsMemory.init()
	c.drainState.init()
	c.backgroundWork.init(c)
	registered(c, true)
	return c
}

// Conn returns the go-zookeeper connection of a Client made by NewClient
// (or by Connect with the deprecated [WithZKOptions]), for operations the
// recipes do not cover. It knows no namespace: its paths are full
// ZooKeeper paths (see "Paths" in the package doc). It is nil for a Client
// made by Connect, which runs on zklock's own session: use the Client's
// context-aware data operations ([Client.Get], [Client.Create]...) and
// [Hold.Multi] there; they work on every Client.
func (c *Client) Conn() *zk.Conn {
	if c == nil {
		return nil
	}
	return c.conn
}

// EnsurePath creates path, relative to the Client's namespace, and every
// missing ancestor, as persistent nodes with no data and the Client's ACL
// (see [WithACL]); nodes that exist are left as they are, as Curator's
// creatingParentsIfNeeded does. It is for the nodes that a holder writes
// under, with [Hold.Multi] for instance, whose creates need their parent;
// the recipes make their own paths (as containers, which the servers
// remove once empty). A create that fails with a connection loss is
// retried under the retry policy. EnsurePath returns an error wrapping
// ErrInvalidPath for a bad path, ErrInvalidArgument for a nil ctx,
// ErrClosed on a closed Client, or the ZooKeeper error (such as
// zk.ErrNoAuth), naming the node it could not create.
func (c *Client) EnsurePath(ctx context.Context, path string) error {
	switch {
	case c.zero():
		return errZeroClient
	case ctx == nil:
		return errorf(ErrInvalidArgument, "ensure path %s: nil context", quotePath(path))
	}
	if err := validatePath(path); err != nil {
		return wrapf(err, "ensure path")
	}
	if err := c.usable(); err != nil {
		return wrapf(err, "ensure path %s", path)
	}
	// Read first, as Curator does: the servers check a create's right on
	// the parent before they look for the node, so a create of a node that
	// exists under a parent the Client may only read fails with NoAuth.
	full := c.fullPath(path)
	switch st, err := c.stat(ctx, full); {
	case err != nil:
		return wrapf(closedErr(err), "ensure path %s: read %s", path, full)
	case st != nil:
		return nil
	}
	budget := strings.Count(full, "/") + missingParentTries
	if err := c.mkdir(ctx, full, false, &budget); err != nil {
		return wrapf(closedErr(err), "ensure path %s", path)
	}
	return nil
}

// errZeroClient is returned for a nil Client, or one not made by Connect or
// NewClient.
var errZeroClient = errorf(ErrInvalidArgument, "nil or zero Client (use Connect or NewClient)")

// zero reports whether c was not made by Connect or NewClient.
func (c *Client) zero() bool { return c == nil || c.closing == nil }

// Close ends every hold (their contexts are cancelled with ErrLockLost and
// ErrClosed) and every wait (Acquire returns ErrClosed), closes the
// connection if Connect opened it (ending the session, and with it the
// Client's lock nodes) or else deletes the nodes, and waits for the
// Client's goroutines. It is idempotent and always returns nil.
// Holds that stood are summed up in one Warn record on the Client's
// logger, with their count and their locks (see [Client.Shutdown]); each
// loss is an EventLost for the Observer, logged at Debug.
//
// A connection that Connect opened ends its session with the server, and
// the server deletes the nodes with it: Close sends no deletes, and a
// delete already on its way that Close cuts short (of a wait cancelled
// just before, say) is left to the session's end, which is logged at
// Debug only: nothing goes on in the background after Close. If the
// connection is down, the session cannot be ended: the nodes stand until
// the ensemble expires it, at most a session timeout after the cut. Close
// waits for the server's answer to its close request at most a third of
// the session timeout, and 2 s; a connection still in its handshake is
// cut at once. (With the deprecated WithZKOptions, go-zookeeper's own
// close is waited for, up to ten seconds.)
//
// On a connection the Client does not own (NewClient), the session, and
// with it the nodes, outlive the Client. So Close sees every pending delete
// through: it retries each until the node is deleted or gone, the session
// is replaced, or the caller closes the connection. If the connection is
// down, Close may thus wait until it comes back, and at most until a
// session timeout after it went down (the session has then expired, if
// the ensemble is up, and the nodes are gone with it), plus a request in
// flight.
func (c *Client) Close() error {
	if c.zero() {
		return nil
	}
	c.closeOnce.Do(func() {
		c.cut.begin() // every hold that ends from now on was cut short
		registered(c, false)
		c.startDrain()
		c.markClosed()
		c.shut()
		c.holds.sweep() // every hold standing is lost
		if c.ownsConn && c.conn != nil {
			c.conn.Close()
		}
		if c.own != nil {
			c.own.close()
		}
		c.wg.Wait() // the sweep run's too: every hold that stood has ended
		if n, locks := c.cut.read(); n > 0 {
			// One record, not one per hold: each loss is logged at Debug.
			c.log.Warn("zklock: closed with holds standing; they were lost", "holds", n, "locks", locks)
		}
		if c.ownsConn && c.zkEvents != nil {
			c.awaitConnGone()
		}
	})
	return nil
}

// awaitConnGone waits, for at most ten seconds, for go-zookeeper's own
// goroutines to end: it closes the event channel when they are done (a
// connection in its handshake with a silent server keeps them longer).
func (c *Client) awaitConnGone() {
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for open := true; open; {
		select {
		case _, open = <-c.zkEvents:
		case <-limit.C:
			open = false
		}
	}
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
		return nil, wrapf(errZeroClient, "%s %s", what, quotePath(p))
	}
	if c.initErr != nil {
		return nil, wrapf(c.initErr, "%s %s", what, quotePath(p))
	}
	if err := validateLockPath(p); err != nil {
		return nil, err
	}
	if data == nil {
		data = c.opts.nodeData
	}
	return data, checkRequest(what, p, c.fullPath(p), data)
}

// cleanup runs f, clean-up work, in the background, on the Client's
// background queue. Once Close has begun it runs f on the caller's
// goroutine instead, for a wrapped connection (which lives on, and its
// nodes with it; see untilDone): closing the session deletes the nodes of
// a connection the Client owns.
func (c *Client) cleanup(f func()) {
	c.background.add(f)
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

// dialWatch follows Connect's attempts to open a session, so that Connect
// can give up once every server has refused, and say what each did.
type dialWatch struct {
	log *slog.Logger

	mu      sync.Mutex       // protects the fields below
	n       int              // addresses to dial
	refused map[string]error // addresses whose last attempt was refused
	last    map[string]error // every address's last attempt's error
	warned  map[string]bool  // names whose failure to resolve was logged
}

func newDialWatch(log *slog.Logger, n int) *dialWatch {
	return &dialWatch{
		log:     log,
		n:       n,
		refused: make(map[string]error),
		last:    make(map[string]error),
		warned:  make(map[string]bool),
	}
}

// connected records an attempt on addr that gave a session.
func (w *dialWatch) connected(addr string) {
	w.mu.Lock()
	delete(w.refused, addr)
	delete(w.last, addr)
	w.mu.Unlock()
}

// failed records a failed attempt on addr. A name that does not resolve
// is logged once, as a warning: the other servers are still tried.
func (w *dialWatch) failed(addr string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last[addr] = err
	if refusedForGood(err) {
		w.refused[addr] = err
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && !w.warned[addr] {
		w.warned[addr] = true
		w.log.Warn("zklock: server name does not resolve; skipped", "addr", addr, "err", err)
	}
}

// refusedForGood reports whether err, an attempt's, will not pass if the
// same server is tried again soon: a refused connection, a name that does
// not resolve, a reply that is not ZooKeeper's, a TLS handshake that
// failed on a certificate or with the server's alert, or a server that
// does not speak TLS (a plaintext port dialed with WithTLS).
func refusedForGood(err error) bool {
	var (
		dnsErr   *net.DNSError
		alert    tls.AlertError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
	)
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr) || errors.Is(err, zksession.ErrNotZooKeeper) ||
		errors.Is(err, zksession.ErrNotTLS) || errors.As(err, &alert) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname)
}

// allRefused returns an error naming every address and why, when each
// address's last dial was refused for good (see refusedForGood), else nil.
// Its headline says what they share, and only that: a list where one
// server refused and another is no ZooKeeper is "no server would give a
// session", not either alone.
func (w *dialWatch) allRefused() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 || len(w.refused) < w.n {
		return nil
	}
	errs := sortedErrs(w.refused)
	kinds := map[string]bool{}
	for _, err := range errs {
		kinds[refusalKind(err)] = true
	}
	what := "no server would give a session: "
	switch {
	case len(kinds) == 1 && kinds["refused"]:
		what = "every server refused the connection: "
	case len(kinds) == 1 && kinds["dns"]:
		what = "no server name resolves: "
	case len(kinds) == 2 && kinds["refused"] && kinds["dns"]:
		what = "every server refused the connection or did not resolve: "
	case len(kinds) == 1 && kinds["tls"]:
		what = "no TLS server at these addresses: "
	case len(kinds) == 1 && kinds["zookeeper"]:
		what = "no ZooKeeper server at these addresses: "
	case len(kinds) == 1 && kinds["handshake"]:
		what = "the TLS handshake failed at every server: "
	}
	return &wrapError{msg: what + joinMsgs(errs), errs: errs}
}

// refusalKind names the kind of a refusal for good: "refused", "dns",
// "tls" (no TLS server), "zookeeper" (not ZooKeeper) or "handshake" (a
// TLS handshake that failed).
func refusalKind(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.Is(err, zksession.ErrNotTLS):
		return "tls"
	case errors.Is(err, zksession.ErrNotZooKeeper):
		return "zookeeper"
	}
	return "handshake"
}

// lastErrors describes every address's last dial or handshake error, ""
// if none.
func (w *dialWatch) lastErrors() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := sortedErrs(w.last)
	if len(errs) == 0 {
		return ""
	}
	return "last errors: " + joinMsgs(errs)
}

// sortedErrs returns m's errors, by address, each naming its address.
func sortedErrs(m map[string]error) []error {
	var out []error
	for _, addr := range slices.Sorted(maps.Keys(m)) {
		err := m[addr]
		if !strings.Contains(err.Error(), addr) {
			err = fmt.Errorf("%s: %w", addr, err)
		}
		out = append(out, err)
	}
	return out
}

// joinMsgs joins the messages of errs on one line.
func joinMsgs(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}
