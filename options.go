package zklock

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrorPolicy decides which connection states end a hold.
type ErrorPolicy int

const (
	// StandardPolicy ends a hold as soon as the connection is suspended,
	// because from then on the holder cannot know whether it still holds the
	// lock. It is the default.
	StandardPolicy ErrorPolicy = iota
	// SessionPolicy ends a hold only when the session is lost: reported
	// expired, or suspended for so long that the servers may have expired
	// it. go-zookeeper notices a silent connection two thirds of the
	// session timeout after the server last spoke, and the servers may
	// expire the session one timeout after they last heard from it, so
	// the Client trusts a suspended session for a third of the session
	// timeout less a tenth (kept back for the hand-off): about 23%, 7s of
	// a 30s session. It then reports [StateLost], whether or not the
	// servers have expired the session yet. A hold rides out disconnects
	// that reconnect within that time. This holds only if the ensemble's
	// syncLimit × tickTime (how long a server cut off from its leader
	// keeps serving) is well under the session timeout; see the README.
	// Guard writes with fencing tokens ([Mutex.Token], [Mutex.CheckOp])
	// under either policy.
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
	dialer         Dialer                // default net.DialTimeout
	tls            *tls.Config           // default none: plain TCP
	observer       func(Event)           // default none
	wrapConn       func(zkConn) zkConn   // test seam around the connection; default none
	err            error                 // first invalid option
}

type authInfo struct {
	scheme string
	auth   []byte
}

func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = errorf(ErrInvalidArgument, format, args...)
	}
}

// Bounds of the session timeout a Client may request. ZooKeeper carries it
// in milliseconds as an int32, and go-zookeeper derives its ping interval
// from it.
const (
	minSessionTimeout = 100 * time.Millisecond
	maxSessionTimeout = math.MaxInt32 * time.Millisecond
)

// WithSessionTimeout sets the session timeout requested from ZooKeeper
// (default 30s), between 100ms and about 24 days (2^31-1 ms). The server
// negotiates it into its own bounds (by default 2 to 20 ticks).
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < minSessionTimeout || d > maxSessionTimeout {
			o.invalid("session timeout %v is outside [%v, %v]", d, minSessionTimeout, maxSessionTimeout)
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

// WithRetryPolicy sets the policy for two things only: retrying a
// ZooKeeper request that failed with a connection loss while the
// connection was believed up (between retries the Client waits for the
// connection, each time up to the connect timeout), and re-creating a lock
// node that vanished while its owner waited (its session expired, someone
// deleted it). The default is ExponentialBackoff{Base: 100ms,
// MaxRetries: 3}.
//
// It does not bound how long a blocking acquire (Lock, Acquire, AcquireN,
// Campaign, a Selector's wait) waits for the connection: that acquire
// waits, for the lock and for the connection alike, as long as its
// context allows, and one started while the server is down goes on once
// it is back. Its error, if the context ends while the Client is not
// connected, wraps ctx.Err() and ErrNotConnected. TryLock and TryAcquire
// never wait for the connection: they fail at once with ErrNotConnected.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(o *options) {
		if p == nil {
			o.invalid("retry policy must not be nil")
		}
		o.retry = p
	}
}

// WithNamespace puts every path under /ns. Paths given to the Client and
// its recipes, and those they return, are relative to the namespace; the
// requests made for go-zookeeper's own calls on [Client.Conn], such as
// [Mutex.CheckOp]'s, carry full ZooKeeper paths (see "Paths" in the
// package doc). The namespace root is created on demand as a CONTAINER
// node.
func WithNamespace(ns string) Option {
	return func(o *options) {
		ns = strings.TrimPrefix(ns, "/")
		if ns == "" {
			o.namespace = ""
			return
		}
		if err := validatePath("/" + ns); err != nil {
			o.invalid("namespace %q: %s", ns, unprefixed(err))
		}
		o.namespace = "/" + ns
	}
}

// WithACL sets the ACL of every node the library creates, lock nodes and
// their parents alike, and the nodes of [Client.EnsurePath]. fn receives
// the full ZooKeeper path of the node; for a lock or lease node, the path
// as created, before ZooKeeper adds the sequence suffix and without
// Curator's protection prefix (such as "/ns/locks/job/lock-"; in kazoo's
// layout, without its uuid: "/ns/locks/job/__lock__", and for a kazoo
// Semaphore's lease the pool's path and a slash, "/ns/pool/"), so that
// one path stands for all of a lock's nodes. It must return a non-empty
// ACL. The default is world:anyone with all permissions.
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

// WithZKOptions passes options to zk.Connect, and so makes Connect open a
// go-zookeeper connection instead of zklock's own session: the Client then
// runs on it as one made by NewClient does, with go-zookeeper's limits
// (see NewClient), and Conn returns it; Connect then waits out its connect
// timeout when every server refuses. NewClient ignores them.
//
// Deprecated: Connect runs on zklock's own session, which needs none of
// go-zookeeper's options: use [WithDialer] for zk.WithDialer (zktest's
// Link.Dial included), [WithTLS] for TLS, [WithLogger] for logging.
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

// A Dialer opens a connection to address ("host:port") within timeout, as
// net.DialTimeout does. It has the shape of go-zookeeper's zk.Dialer, so
// the fault links of package zktest serve as one (WithDialer(link.Dial)).
type Dialer func(network, address string, timeout time.Duration) (net.Conn, error)

// WithDialer sets how Connect opens its connections to the servers
// (default net.DialTimeout): through a proxy, a fault injector such as
// zktest's Link, or a connection of your own. With [WithTLS], TLS runs
// over what the dialer returns.
func WithDialer(d Dialer) Option {
	return func(o *options) {
		if d == nil {
			o.invalid("nil dialer")
		}
		o.dialer = d
	}
}

// WithTLS makes Connect speak TLS to the servers (ZooKeeper's
// secureClientPort), with cfg: its RootCAs to trust the servers, its
// Certificates for client authentication. When cfg names no ServerName,
// each server's host name is checked. The Client uses a clone of cfg.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) {
		if cfg == nil {
			o.invalid("nil TLS config")
		}
		o.tls = cfg.Clone()
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

// LockOption configures a lock recipe.
type LockOption func(*lockOptions)

type lockOptions struct {
	data    []byte        // default nil: the Client's node data
	driver  Driver        // default StandardDriver
	fast    Shortcuts     // what a recipe allows the built-in driver it set in driver (see lockInternals.fast); never set by an option
	maxHold time.Duration // default 0: none
	layout  Layout        // default LayoutCurator
	err     error         // first invalid option
}

// WithLockData sets the data of the lock's nodes, instead of the Client's
// default node data.
func WithLockData(data []byte) LockOption {
	return func(o *lockOptions) {
		if len(data) > maxNodeData && o.err == nil {
			o.err = errorf(ErrInvalidArgument, "lock data of %d bytes exceeds %d", len(data), maxNodeData)
		}
		o.data = append([]byte{}, data...)
	}
}

// WithDriver replaces the predicate engine, as Curator's LockInternalsDriver
// does. See [Driver] for what the engine expects of it.
func WithDriver(d Driver) LockOption {
	return func(o *lockOptions) {
		if d == nil && o.err == nil {
			o.err = errorf(ErrInvalidArgument, "nil Driver")
		}
		o.driver = d
	}
}

// parseLockOptions applies opts for the recipe kind on path. A recipe whose
// predicates are its definition refuses a Driver (allowDriver false).
func parseLockOptions(kind, path string, opts []LockOption, allowDriver bool) (lockOptions, error) {
	var o lockOptions
	for _, opt := range opts {
		if opt == nil {
			return o, errorf(ErrInvalidArgument, "%s %s: nil LockOption", kind, path)
		}
		opt(&o)
	}
	if o.err == nil && o.driver != nil && !allowDriver {
		o.err = errorf(ErrInvalidArgument, "a Driver cannot be set")
	}
	if o.err == nil && o.driver != nil && o.layout != LayoutCurator {
		o.err = errorf(ErrInvalidArgument, "a Driver makes its own nodes: WithLayout(%v) cannot be combined with WithDriver", o.layout)
	}
	if o.err != nil {
		return o, wrapf(o.err, "%s %s", kind, path)
	}
	return o, nil
}
