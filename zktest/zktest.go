// Package zktest runs real ZooKeeper servers for the tests of code built
// on zklock (or on go-zookeeper), as Apache Curator's curator-test
// (TestingServer, TestingCluster) does for Java: a server or an ensemble
// for a test or a whole package, servers to kill and restart, faults on
// one client's connection, servers cut off from each other, and a root
// path per test whose tree is deleted when the test ends.
//
// # Where the servers come from
//
// [Start] and [StartT] take, in this order:
//
//  1. ZK_SERVERS, a comma-separated list of host:port of a running
//     ensemble. Its servers cannot be stopped or killed (those methods,
//     and a Config that needs server-side settings, give an error
//     wrapping [ErrUnsupported]; StartT then skips the test).
//  2. A local ZooKeeper: one JVM per server, from ZOOKEEPER_HOME (an
//     unpacked distribution) or Debian's zookeeper package
//     (/usr/share/java/zookeeper.jar), run with java from JAVA_HOME or
//     PATH, on free ports of 127.0.0.1, with its data in a temporary
//     directory removed by Close. The servers die with the test binary.
//
// When neither is there, Start fails at once with an error that says what
// to install or set; it never hangs.
//
// # A server for a package
//
// A package's tests share one server through [Shared], which starts it
// on first use; TestMain must call [Main], which closes it after the
// tests:
//
//	func TestMain(m *testing.M) { zktest.Main(m) }
//
//	func TestJob(t *testing.T) {
//		cluster := zktest.Shared(t)
//		root := cluster.Root(t) // "/zktest/TestJob", deleted after the test
//		c, err := zklock.Connect(cluster.Servers())
//		…
//	}
//
// # Faults
//
// A [Link] sits between one client and the servers (through
// zklock.WithDialer(link.Dial) for a zklock Client, zk.WithDialer for a
// go-zookeeper connection): [Link.Cut] drops the client's connection at once,
// [Link.Pause] makes it silent (the client's reads time out, and a pause
// longer than the session timeout expires the session on the servers),
// [Link.Resume] ends a pause; [Link.Blackhole] swallows the traffic until
// [Link.Restore]; [Link.SetDelay] adds latency; and [Link.ExpireSession]
// expires the client's session on the spot and tells the client so
// before its connection closes, as Curator's KillSession does: a
// go-zookeeper client gets zk.StateExpired with no disconnection before
// it, and zklock reports the session lost (StateLost, and holds lost
// with CauseSession) under either ErrorPolicy.
//
// The package imports only go-zookeeper and the standard library.
package zktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	izk "github.com/zklock/zklock/internal/zktest"
)

// ErrUnsupported is wrapped by the errors of what the servers' source
// cannot do: stopping, restarting or killing a server of an ensemble
// given by ZK_SERVERS, or honouring a Config that needs server-side
// settings there.
var ErrUnsupported = izk.ErrUnsupported

// Config describes the servers a test wants. The zero value is one server
// with the defaults below.
type Config struct {
	// Servers is the size of the ensemble; 0 or 1 means one server.
	Servers int
	// TickTime is ZooKeeper's tickTime; 0 means 200ms (so the smallest
	// session timeout the servers grant is 400ms by default).
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeouts
	// the servers grant; 0 means 2*TickTime and 60s.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// ContainerCheckInterval is how often the servers delete empty
	// container nodes (ZooKeeper's znode.container.checkIntervalMs); 0
	// keeps ZooKeeper's default, a minute.
	ContainerCheckInterval time.Duration
	// Partitionable asks for servers that can be cut off from each
	// other ([Cluster.Isolate]) while clients still reach them. Each
	// server then runs in a Linux network namespace of its own, on an
	// address of a private 10.213.x.0/24 subnet, which needs root and
	// the ip command (iproute2). Where that is impossible, and on
	// ZK_SERVERS, Start fails with an error wrapping ErrUnsupported (so
	// StartT skips).
	Partitionable bool
	// Port, if not 0, is the first server's client port on 127.0.0.1;
	// server i listens on Port+i. 0 picks free ports, which is what tests
	// want: two test binaries never collide. A port in use makes Start
	// fail, naming it. Start fails with an error wrapping ErrUnsupported
	// on ZK_SERVERS, and with an error when Partitionable is set too.
	Port int
}

// internal returns the harness's configuration for c.
func (c Config) internal() izk.Config {
	return izk.Config{
		Size:                   c.Servers,
		TickTime:               c.TickTime,
		MinSessionTimeout:      c.MinSessionTimeout,
		MaxSessionTimeout:      c.MaxSessionTimeout,
		ContainerCheckInterval: c.ContainerCheckInterval,
		Isolatable:             c.Partitionable,
		Port:                   c.Port,
	}
}

// Cluster is a running ZooKeeper server or ensemble. Its methods are safe
// for concurrent use.
type Cluster struct {
	c      izk.Cluster // written once
	shared bool        // Shared's: not to be stopped, killed or closed by a test
}

// Start starts the servers cfg describes (see the package documentation
// for where they come from) and returns once every one serves. ctx bounds
// the start. The caller must Close the Cluster. An invalid cfg gives an
// error before anything starts.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if ctx == nil {
		return nil, errors.New("zktest: start: nil context")
	}
	c, err := izk.Start(ctx, cfg.internal())
	if err != nil {
		return nil, err
	}
	return &Cluster{c: c}, nil
}

// StartT is Start for a test: bounded by a few minutes, closed when t's
// test ends. It skips t if the servers' source cannot honour cfg (an error
// wrapping ErrUnsupported), and fails t at once on any other error.
func StartT(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	return &Cluster{c: izk.StartT(t, cfg.internal())}
}

// Servers returns the servers' client addresses ("host:port"), indexed
// like the i of Stop, Restart and Kill: what zklock.Connect takes.
func (c *Cluster) Servers() []string { return c.c.Servers() }

// ConnectString returns the servers' addresses joined with commas, as
// Curator's connect string and zkCli.sh -server take them.
func (c *Cluster) ConnectString() string { return strings.Join(c.c.Servers(), ",") }

// External reports whether the servers are an ensemble given by
// ZK_SERVERS, which cannot be stopped, restarted or killed.
func (c *Cluster) External() bool { return c.c.Backend() == "external" }

// Stop stops server i (0-based) gracefully and returns once it no longer
// accepts connections; stopping a stopped server does nothing. It returns
// an error wrapping ErrUnsupported for an external ensemble or the shared
// cluster.
func (c *Cluster) Stop(i int) error {
	if err := c.controllable("stop"); err != nil {
		return err
	}
	return c.c.Stop(i)
}

// Kill kills server i with SIGKILL and returns once it has exited; killing
// a stopped server does nothing. Its errors are Stop's.
func (c *Cluster) Kill(i int) error {
	if err := c.controllable("kill"); err != nil {
		return err
	}
	return c.c.Kill(i)
}

// Restart starts server i again, with its ports and data, after Stop or
// Kill, and returns once it serves (for an ensemble, once every running
// server serves; without a majority running, once the server answers at
// all). Restarting a running server is an error. Its errors are Stop's.
func (c *Cluster) Restart(i int) error {
	if err := c.controllable("restart"); err != nil {
		return err
	}
	return c.c.Start(i)
}

// Leader returns the index of the server that leads the ensemble (0 for a
// single server), waiting until exactly one does, or until ctx ends (by
// default, after 30 seconds).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	return izk.Leader(ctx, c.c)
}

// Isolate cuts server i off from every other server of the ensemble, in
// both directions, while its clients still reach it: a server that loses
// the quorum so stops serving them, and a leader isolated so is replaced
// by a new one (see Leader). Isolating several servers cuts each off from
// all others. It needs a Cluster started with Config.Partitionable, else
// it returns an error wrapping ErrUnsupported.
func (c *Cluster) Isolate(i int) error {
	p, err := c.partitioner("isolate")
	if err != nil {
		return err
	}
	return p.Isolate(i)
}

// Heal restores every link Isolate cut. The servers find each other
// again by themselves; Heal does not wait for that (Leader does). Its
// errors are Isolate's.
func (c *Cluster) Heal() error {
	p, err := c.partitioner("heal")
	if err != nil {
		return err
	}
	return p.Heal()
}

// partitioner returns c's servers as a Partitioner, or why they are not.
func (c *Cluster) partitioner(what string) (izk.Partitioner, error) {
	if p, ok := c.c.(izk.Partitioner); ok && !c.shared {
		return p, nil
	}
	return nil, fmt.Errorf("zktest: %s: the cluster was not started with Config.Partitionable: %w", what, ErrUnsupported)
}

// Close stops every server and removes their data. It is idempotent. On
// the shared cluster it does nothing: Main closes that one.
func (c *Cluster) Close() error {
	if c.shared {
		return nil
	}
	return c.c.Close()
}

// controllable returns an error wrapping ErrUnsupported if c is the
// shared cluster, whose servers a test may not stop, restart or kill. (An
// ensemble given by ZK_SERVERS refuses by itself.)
func (c *Cluster) controllable(what string) error {
	if c.shared {
		return fmt.Errorf("zktest: %s: the shared cluster's servers belong to every test (start one of the test's own with StartT): %w", what, ErrUnsupported)
	}
	return nil
}
