// Package zktest provides real ZooKeeper servers, fault injection and tree
// helpers for the tests, examples and benchmarks of zklock.
//
// # Backends
//
// [Start] (and [StartT]) pick where the ZooKeeper servers come from, in
// this order:
//
//  1. ZK_SERVERS: a comma-separated list of host:port of an external
//     ensemble. Its servers cannot be stopped, started or killed
//     (those methods return an error wrapping [ErrUnsupported]), and a
//     [Config] that needs server-side settings (Size > 1, a
//     ContainerCheckInterval or TLS) makes Start fail with [ErrUnsupported];
//     [StartT] turns that into t.Skip. The ensemble's own tick time and
//     session-timeout bounds apply, whatever the Config says.
//  2. Every backend registered with [RegisterBackend] whose Available
//     method returns nil, in registration order. A backend that is not
//     available or fails to start is reported on stderr (one line) and
//     the next one is tried.
//  3. A local ZooKeeper JVM per server ("process" backend), found through
//     ZOOKEEPER_HOME (its lib/*.jar and *.jar) or Debian's zookeeper
//     package (/usr/share/java/zookeeper.jar), run with java from
//     JAVA_HOME or PATH. Servers listen on 127.0.0.1 on free ports, keep
//     their data and logs (server.log: the JVM's output and ZooKeeper's
//     log) in a temporary directory (in [Config.DataDir], by default the
//     system's temporary directory) removed by Close, and are killed by
//     the kernel if the test binary dies (Linux: PR_SET_PDEATHSIG); a
//     later run removes the directories such a binary left. Even a
//     single server runs as an ensemble of one, not in standalone mode
//     (see ZooCfg for why). With [Config.Isolatable], each server runs in
//     its own network namespace instead, and the cluster is a
//     [Partitioner]; registered backends are then skipped. With
//     [Config.Laggable], the servers reach each other's quorum ports
//     through forwarders of the harness, and the cluster is a [Lagger];
//     registered backends are then skipped too. With
//     [Config.TLS], the servers also serve TLS clients, and the cluster
//     is a [SecureCluster]; registered backends are then skipped too.
//
// # Shared server
//
// A package's TestMain calls [Main]; its tests then call [Shared] to get a
// single server started on first use and closed after all tests, after
// which Main fails the run if goroutines leaked.
//
// # Faults
//
// [Proxy] and [Faults] sit between a go-zk client and the servers (through
// zk.WithDialer) and can pause or cut the traffic, to provoke
// disconnections and session expiry, or cut a connection right after the
// server has executed a create whose reply the client never gets
// ([Proxy.CutOnCreate]). [ExpireSession] ends a session on the
// servers, on the spot; [Faults.ExpireSession] ends the session its
// proxies saw granted and, as Curator's KillSession does, tells the
// client first, with a session event of state Expired injected before
// its connection closes. Servers of a cluster started with
// [Config.Isolatable] can be cut off from each other ([Partitioner]); a
// server of one started with [Config.Laggable] can fall behind the
// others while it goes on serving its clients ([Lagger]).
package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrUnsupported is wrapped by errors returned when a backend cannot do what
// was asked: stopping, starting or killing a server of an external
// ensemble, or honouring a Config that needs server-side settings,
// network namespaces or TLS.
var ErrUnsupported = errors.New("unsupported by this zktest backend")

// Defaults applied by [Config.WithDefaults].
const (
	DefaultTickTime          = 200 * time.Millisecond
	DefaultMaxSessionTimeout = 60 * time.Second
	DefaultSyncLimit         = 5 // ticks
)

// DefaultServerJVMFlags are the process backend's heap, GC and JIT flags
// unless [Config.ServerJVMFlags] replaces them.
func DefaultServerJVMFlags() []string {
	return []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
}

// Time limits of the harness's own waits.
const (
	// startTimeout bounds how long a process cluster may take to serve.
	startTimeout = 60 * time.Second
	// stopTimeout bounds how long a server may take to exit after SIGTERM
	// before it is killed.
	stopTimeout = 15 * time.Second
	// reapTimeout bounds how long a killed process may take to be reaped.
	reapTimeout = 15 * time.Second
	// availableTimeout bounds a registered backend's Available call.
	availableTimeout = 30 * time.Second
	// startTTimeout bounds StartT and Shared.
	startTTimeout = 3 * time.Minute
	// pollInterval is how often conditions are polled.
	pollInterval = 20 * time.Millisecond
)

// Config describes the ZooKeeper servers a test wants. The zero value is a
// single server with the defaults below.
type Config struct {
	// Size is the number of servers in the ensemble; 0 or 1 means a
	// single server. The process backend runs a single server as an
	// ensemble of one rather than in standalone mode, to avoid a
	// ZooKeeper 3.8.0 bug (see ZooCfg); it behaves the same for clients
	// but reports Mode "leader".
	Size int
	// TickTime is ZooKeeper's tickTime; 0 means DefaultTickTime (200ms,
	// so the default minimum session timeout is 400ms).
	TickTime time.Duration
	// MinSessionTimeout is the smallest session timeout the servers
	// grant; 0 means 2*TickTime.
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is the largest session timeout the servers
	// grant; 0 means DefaultMaxSessionTimeout (60s).
	MaxSessionTimeout time.Duration
	// ContainerCheckInterval is how often the servers look for empty
	// container nodes to delete (znode.container.checkIntervalMs); 0
	// keeps the server default (one minute). When set, the servers also
	// get znode.container.maxPerMinute=100000 so reaping is prompt.
	ContainerCheckInterval time.Duration
	// DataDir is an existing directory in which the process backend makes
	// the cluster's temporary directory (the servers' dataDir, logs and
	// configuration), to choose the storage the servers write to, such
	// as tmpfs (/dev/shm) or a disk; "" means the system's temporary
	// directory (os.TempDir). An external ensemble (ZK_SERVERS) cannot
	// honour it: Start then fails with ErrUnsupported. Registered backends
	// may ignore it.
	DataDir string
	// Isolatable asks for servers that can be cut off from each other
	// while their client ports stay reachable from the test process: the
	// cluster then implements [Partitioner]. The process backend runs
	// each server in its own Linux network namespace, on an address of
	// a private 10.213.x.0/24 subnet (which Servers returns) instead of
	// 127.0.0.1; this needs Linux, root and the ip command (iproute2).
	// Where that is impossible, and on an external ensemble (ZK_SERVERS),
	// Start fails with an error wrapping ErrUnsupported (so StartT
	// skips). Registered backends are not tried.
	Isolatable bool
	// ServerJVMFlags, if not empty, replace the process backend's heap,
	// garbage collector and JIT settings (DefaultServerJVMFlags: a small
	// heap, the serial GC and C1 only, which start fast and suit tests)
	// with these JVM flags, separated by spaces. Benchmarks use it to run
	// the server as users do: zkServer.sh gives "-Xmx1000m" and otherwise
	// Java's defaults. Other backends ignore it. (A string, not a slice,
	// so that a Config stays comparable.)
	ServerJVMFlags string
	// TLS, if not nil, makes every server also listen for TLS clients on
	// a secure client port, with the given key and trust material; the
	// cluster is then a [SecureCluster] whose SecureServers returns those
	// addresses. Only the process backend can do this: an external
	// ensemble (ZK_SERVERS) makes Start fail with an error wrapping
	// ErrUnsupported (so StartT skips), and registered backends are not
	// tried.
	TLS *TLSConfig
	// LocalSessions turns on ZooKeeper's local sessions
	// (localSessionsEnabled and localSessionsUpgradingEnabled, ZooKeeper
	// 3.5 and later), a production setting: a session a client opens is
	// created by its server alone, answered without the leader, and
	// made global (the server asks the leader) by its first ephemeral
	// create. A local session is unknown to the other servers, so a
	// client that moves to another server with it is told it expired.
	LocalSessions bool
	// SyncLimit is ZooKeeper's syncLimit, in ticks: how far a follower
	// may fall behind the leader (a proposal unacknowledged, or silence
	// from the leader) before one drops the other; 0 means 5. Raise it
	// for a follower slowed down with [Lagger].
	SyncLimit int
	// Laggable asks for servers whose links to each other can be slowed
	// down: the cluster then implements [Lagger]. The process backend
	// gives each server, in its zoo.cfg, the other servers' quorum ports
	// as ports of forwarders of the harness on 127.0.0.1, whose delay Lag
	// sets. Only the process backend can do this, and not with
	// Isolatable: an external ensemble (ZK_SERVERS) makes Start fail with
	// an error wrapping ErrUnsupported (so StartT skips), Isolatable or a
	// single server with an error, and registered backends are not
	// tried.
	Laggable bool
	// Port, if not 0, is server 0's client port on 127.0.0.1;
	// server i listens on Port+i. 0 picks free ports. Only the
	// process backend honours it, and not with Isolatable: an external
	// ensemble makes Start fail with ErrUnsupported, Isolatable with an
	// error, and registered backends are not tried. A port in use makes
	// Start fail, naming it.
	Port int
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	if c.Size <= 0 {
		c.Size = 1
	}
	if c.TickTime == 0 {
		c.TickTime = DefaultTickTime
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.SyncLimit == 0 {
		c.SyncLimit = DefaultSyncLimit
	}
	return c
}

// Validate returns an error if c (after defaults) is not a configuration
// ZooKeeper accepts.
func (c Config) Validate() error {
	if c.Size < 0 {
		return fmt.Errorf("zktest: config: negative Size %d", c.Size)
	}
	d := c.WithDefaults()
	switch {
	case d.TickTime < time.Millisecond:
		return fmt.Errorf("zktest: config: TickTime %v is below 1ms", c.TickTime)
	case d.MinSessionTimeout < 0 || d.MaxSessionTimeout < 0:
		return fmt.Errorf("zktest: config: negative session timeout")
	case d.MinSessionTimeout > d.MaxSessionTimeout:
		return fmt.Errorf("zktest: config: MinSessionTimeout %v exceeds MaxSessionTimeout %v",
			d.MinSessionTimeout, d.MaxSessionTimeout)
	case d.ContainerCheckInterval < 0:
		return fmt.Errorf("zktest: config: negative ContainerCheckInterval %v", c.ContainerCheckInterval)
	case c.SyncLimit < 0:
		return fmt.Errorf("zktest: config: negative SyncLimit %d", c.SyncLimit)
	case c.Laggable && c.Isolatable:
		return fmt.Errorf("zktest: config: Laggable with Isolatable: isolated servers reach each other on their own addresses, not through the harness's forwarders")
	case c.Laggable && d.Size < 2:
		return fmt.Errorf("zktest: config: Laggable needs an ensemble (Size 2 or more), got %d server(s)", d.Size)
	case c.Port < 0 || c.Port+d.Size-1 > 65535:
		return fmt.Errorf("zktest: config: Port %d: want 1 to %d for %d server(s)", c.Port, 65536-d.Size, d.Size)
	case c.Port != 0 && c.Isolatable:
		return fmt.Errorf("zktest: config: Port with Isolatable: isolated servers listen on port %d of their own addresses", isoPorts[0])
	case c.TLS != nil:
		return c.TLS.validate()
	}
	return nil
}

// Cluster is a running set of ZooKeeper servers. Its methods are safe for
// concurrent use; Stop, Start and Kill are serialised.
type Cluster interface {
	// Servers returns the client addresses ("host:port"), one per server,
	// indexed like the i of Stop, Start and Kill.
	Servers() []string
	// Stop stops server i (0-based) gracefully and returns once its
	// client port no longer accepts connections. Stopping a stopped
	// server is a no-op.
	Stop(i int) error
	// Start starts server i again with the same ports and data, and
	// returns once it serves requests (and, for an ensemble, once every
	// running server serves, so the quorum is back). If fewer than a
	// majority of the ensemble's servers are running with it, the
	// ensemble cannot serve yet, and Start returns once the server
	// answers the ruok four-letter word. Starting a running server is an
	// error.
	Start(i int) error
	// Kill kills server i with SIGKILL and returns once it has exited.
	// Killing a stopped server is a no-op.
	Kill(i int) error
	// Close stops every server and removes their data. It is
	// idempotent; later calls return nil.
	Close() error
	// Backend names where the servers come from: "external", "process",
	// or the Name of a registered Backend.
	Backend() string
}

// Process is implemented by a Cluster whose servers are local processes
// (the process backend), for tools that measure them.
type Process interface {
	// PID returns the process id of server i, or 0 when it is not running.
	PID(i int) int
}

// Backend is a source of ZooKeeper clusters that can be plugged in with
// RegisterBackend, such as one starting containers.
type Backend interface {
	// Name identifies the backend in logs and in Cluster.Backend.
	Name() string
	// Available returns nil if the backend can start clusters here, or
	// an error saying why not.
	Available(ctx context.Context) error
	// Start starts a cluster as described by cfg, returning once every
	// server serves. It may return an error wrapping ErrUnsupported for
	// a Config it cannot honour.
	Start(ctx context.Context, cfg Config) (Cluster, error)
}

var registry struct {
	mu       sync.Mutex
	backends []Backend
}

// RegisterBackend adds b to the backends Start tries after ZK_SERVERS and
// before the local process backend. Backends are tried in registration
// order. It is meant to be called from init or TestMain; it panics if b is
// nil.
func RegisterBackend(b Backend) {
	if b == nil {
		panic("zktest: RegisterBackend with nil Backend")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.backends = append(registry.backends, b)
}

func registeredBackends() []Backend {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return append([]Backend(nil), registry.backends...)
}

// Start starts a cluster described by cfg on the first usable backend (see
// the package documentation for the order) and returns once every server
// serves. The caller must Close the cluster. ctx bounds the whole start.
func Start(ctx context.Context, cfg Config) (Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if servers := externalServers(); len(servers) > 0 {
		return startExternal(ctx, cfg, servers)
	}
	for _, b := range registeredBackends() {
		if cfg.Isolatable || cfg.Laggable || cfg.TLS != nil || cfg.Port != 0 {
			break // only the process backend can isolate or slow down servers, serve TLS or take given ports
		}
		actx, cancel := context.WithTimeout(ctx, availableTimeout)
		err := b.Available(actx)
		cancel()
		if err != nil {
			logLine("zktest: backend %s unavailable, trying the next one: %v", b.Name(), err)
			continue
		}
		c, err := b.Start(ctx, cfg)
		if err != nil {
			logLine("zktest: backend %s failed to start, trying the next one: %v", b.Name(), err)
			continue
		}
		return c, nil
	}
	return startProcess(ctx, cfg)
}

// StartT starts a cluster like Start, bounded by a few minutes, and closes
// it when t's test ends. It marks t as a helper, skips t if the backend
// cannot honour cfg (an error wrapping ErrUnsupported), and fails t fatally
// on any other error.
func StartT(t testing.TB, cfg Config) Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTTimeout)
	defer cancel()
	c, err := Start(ctx, cfg)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("zktest: start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("zktest: close cluster: %v", err)
		}
	})
	return c
}

// logLine writes one line to stderr.
func logLine(format string, args ...any) {
	fmt.Fprintln(os.Stderr, oneLine(fmt.Sprintf(format, args...)))
}

// oneLine folds msg into one line, separating its lines with " | ".
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " | ")
}
