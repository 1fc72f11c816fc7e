package containerzk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/zklock/zklock/internal/zktest"
)

// Ports inside the containers.
const (
	clientPort   = 2181
	quorumPort   = 2888
	electionPort = 3888
	dataDir      = "/data"
)

// Time limits of cluster operations (the zktest.Cluster methods take no
// context).
const (
	serveTimeout   = 2 * time.Minute  // a start until every server serves
	stopTimeout    = 10 * time.Second // docker stop's grace period before SIGKILL
	opTimeout      = 2 * time.Minute  // one Stop, Start or Kill
	closeTimeout   = time.Minute
	startAttempts  = 3 // tries when a chosen host port was taken meanwhile
	logTailOnError = 40
)

var clientPortSpec = network.MustParsePort(strconv.Itoa(clientPort) + "/tcp")

// Cluster is a set of ZooKeeper servers in containers, returned by
// Backend.Start. It implements zktest.Cluster; its methods are safe for
// concurrent use, and Stop, Start, Kill and Close are serialised.
type Cluster struct {
	cli     *testcontainers.DockerClient
	cfg     zktest.Config
	net     *testcontainers.DockerNetwork
	servers []*server
	addrs   []string

	mu     sync.Mutex
	closed bool
}

type server struct {
	myid     int
	alias    string // network alias (ensembles), container host name
	hostPort int    // fixed host port of the client port, on 127.0.0.1
	ctr      *testcontainers.DockerContainer
}

var _ zktest.Cluster = (*Cluster)(nil)

// Start starts the servers described by cfg and returns once every one of
// them serves (answers ruok and srvr with a serving mode).
func (b *Backend) Start(ctx context.Context, cfg zktest.Config) (zktest.Cluster, error) {
	return b.StartCluster(ctx, cfg)
}

// StartCluster is Start returning the concrete type, for its Logs and
// ContainerID methods.
func (b *Backend) StartCluster(ctx context.Context, cfg zktest.Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	cli, err := b.client(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		c, err := b.start(ctx, cli, cfg)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if !isPortConflict(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func (b *Backend) start(ctx context.Context, cli *testcontainers.DockerClient, cfg zktest.Config) (_ *Cluster, err error) {
	n := cfg.Size
	ports, err := reservePorts(n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cli: cli, cfg: cfg}
	defer func() {
		if err != nil {
			if cerr := c.Close(); cerr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
			}
		}
	}()
	for i := range n {
		c.servers = append(c.servers, &server{myid: i + 1, alias: "zk" + strconv.Itoa(i+1), hostPort: ports[i]})
		c.addrs = append(c.addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])))
	}

	var hosts []string
	var clientPorts, quorumPorts, electionPorts []int
	for _, s := range c.servers {
		hosts = append(hosts, s.alias)
		clientPorts = append(clientPorts, clientPort)
		quorumPorts = append(quorumPorts, quorumPort)
		electionPorts = append(electionPorts, electionPort)
	}
	if n > 1 {
		c.net, err = tcnetwork.New(ctx, tcnetwork.WithLabels(labels()))
		if err != nil {
			return nil, fmt.Errorf("containerzk: create network: %w", err)
		}
	} else {
		// zktest.ZooCfg configures even one server as an ensemble of one
		// (standaloneEnabled=false; see its documentation for the
		// ZooKeeper 3.8.0 standalone start-up bug this avoids); its
		// quorum address is the container's own loopback.
		hosts = nil
	}
	jvmFlags := strings.Join(zktest.JVMFlags(cfg), " ")

	for _, s := range c.servers {
		zooCfg, err := zktest.ZooCfg(cfg, dataDir, s.myid, clientPorts, quorumPorts, electionPorts, hosts)
		if err != nil {
			return nil, err
		}
		// Bind the quorum and election ports on every interface rather
		// than on the address the server's own alias resolves to (which
		// may not be resolvable yet when the server starts).
		zooCfg += "quorumListenOnAllIPs=true\n"
		hostPort := s.hostPort
		alias := s.alias
		req := testcontainers.GenericContainerRequest{
			ContainerRequest: testcontainers.ContainerRequest{
				Image:        b.image,
				ExposedPorts: []string{clientPortSpec.String()},
				Env: map[string]string{
					"ZK_CFG":          zooCfg,
					"ZK_MYID":         strconv.Itoa(s.myid),
					"SERVER_JVMFLAGS": jvmFlags,
				},
				Labels: labels(labelRole, strconv.Itoa(s.myid), labelAlias, s.alias),
				ConfigModifier: func(cc *container.Config) {
					cc.Hostname = alias
				},
				HostConfigModifier: func(hc *container.HostConfig) {
					// A fixed host port: docker start keeps it, whereas
					// an ephemeral binding ("0") may change on restart.
					hc.PortBindings = network.PortMap{clientPortSpec: {{
						HostIP:   netip.MustParseAddr("127.0.0.1"),
						HostPort: strconv.Itoa(hostPort),
					}}}
				},
			},
			Started: false,
		}
		if c.net != nil {
			if err := tcnetwork.WithNetwork([]string{s.alias}, c.net).Customize(&req); err != nil {
				return nil, err
			}
		}
		ctr, err := testcontainers.GenericContainer(ctx, req)
		if ctr != nil {
			s.ctr, _ = ctr.(*testcontainers.DockerContainer)
		}
		if err != nil {
			return nil, fmt.Errorf("containerzk: create container for server %d: %w", s.myid, err)
		}
		if s.ctr == nil {
			return nil, fmt.Errorf("containerzk: unexpected container type %T", ctr)
		}
	}
	for _, s := range c.servers {
		if err := s.ctr.Start(ctx); err != nil {
			return nil, fmt.Errorf("containerzk: start container of server %d (host port %d): %w", s.myid, s.hostPort, err)
		}
	}
	for _, s := range c.servers {
		p, err := s.ctr.MappedPort(ctx, clientPortSpec.String())
		if err != nil {
			return nil, fmt.Errorf("containerzk: server %d: mapped port: %w", s.myid, err)
		}
		if int(p.Num()) != s.hostPort {
			return nil, fmt.Errorf("containerzk: server %d: client port published on %d, want %d", s.myid, p.Num(), s.hostPort)
		}
	}
	if err := c.waitServing(ctx, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// Servers returns the client addresses, "127.0.0.1:port", one per server.
func (c *Cluster) Servers() []string { return append([]string(nil), c.addrs...) }

// Backend returns BackendName.
func (c *Cluster) Backend() string { return BackendName }

// ContainerID returns the Docker id of server i's container.
func (c *Cluster) ContainerID(i int) (string, error) {
	s, err := c.server(i)
	if err != nil {
		return "", err
	}
	return s.ctr.GetContainerID(), nil
}

// PublishedPort returns the host port Docker currently publishes server
// i's client port on (from docker inspect), or an error if the container
// is not running.
func (c *Cluster) PublishedPort(i int) (int, error) {
	s, err := c.server(i)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := s.ctr.MappedPort(ctx, clientPortSpec.String())
	if err != nil {
		return 0, err
	}
	return int(p.Num()), nil
}

// Network returns the name of the cluster's Docker network, or "" for a
// standalone server.
func (c *Cluster) Network() string {
	if c.net == nil {
		return ""
	}
	return c.net.Name
}

func (c *Cluster) server(i int) (*server, error) {
	if i < 0 || i >= len(c.servers) {
		return nil, fmt.Errorf("containerzk: no server %d in a %d-server cluster", i, len(c.servers))
	}
	return c.servers[i], nil
}

// Stop stops server i's container (docker stop: SIGTERM, then SIGKILL
// after a grace period), keeping it and its data, and returns once its
// client port refuses connections. Stopping a stopped server is a no-op.
func (c *Cluster) Stop(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.usable(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	grace := stopTimeout
	if err := s.ctr.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("containerzk: stop server %d: %w", i, err)
	}
	if err := zktest.WaitStopped(ctx, c.addrs[i]); err != nil {
		return fmt.Errorf("containerzk: stop server %d: %w", i, err)
	}
	return nil
}

// Kill kills server i's container (docker kill, SIGKILL) and returns once
// it has exited. Killing a stopped server is a no-op.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.usable(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	defer c.cli.Close()
	id := s.ctr.GetContainerID()
	_, err = c.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	if err != nil && !cerrdefs.IsConflict(err) { // conflict: not running
		return fmt.Errorf("containerzk: kill server %d: %w", i, err)
	}
	for {
		res, err := c.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return fmt.Errorf("containerzk: kill server %d: inspect: %w", i, err)
		}
		if res.Container.State == nil || !res.Container.State.Running {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerzk: kill server %d: still running: %w", i, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := zktest.WaitStopped(ctx, c.addrs[i]); err != nil {
		return fmt.Errorf("containerzk: kill server %d: %w", i, err)
	}
	return nil
}

// Start starts server i's container again (docker start), with the same
// host port and data, and returns once every running server of the
// cluster serves. Starting a running server only waits.
func (c *Cluster) Start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.usable(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := s.ctr.Start(ctx); err != nil {
		return fmt.Errorf("containerzk: start server %d: %w", i, err)
	}
	return c.waitServing(ctx, c.running(ctx))
}

// Close removes the containers (killing them) and the network. It is
// idempotent; later calls return nil.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	defer releasePorts(c.servers)
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		if s.ctr == nil {
			continue
		}
		wg.Go(func() {
			// StopTimeout(0): SIGKILL at once; the data goes with the container.
			if err := s.ctr.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil && !cerrdefs.IsNotFound(err) {
				errs[i] = fmt.Errorf("containerzk: remove container of server %d: %w", s.myid, err)
			}
		})
	}
	wg.Wait()
	if c.net != nil {
		if err := c.net.Remove(ctx); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("containerzk: remove network %s: %w", c.net.Name, err))
		}
	}
	c.cli.Close()
	return errors.Join(errs...)
}

// Logs returns the last lines (all if lines <= 0) of server i's container
// output (ZooKeeper's log).
func (c *Cluster) Logs(i, lines int) (string, error) {
	s, err := c.server(i)
	if err != nil {
		return "", err
	}
	if s.ctr == nil {
		return "", fmt.Errorf("containerzk: server %d has no container", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return containerLogs(ctx, s.ctr, lines)
}

func containerLogs(ctx context.Context, ctr *testcontainers.DockerContainer, lines int) (string, error) {
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	out := string(b)
	if lines > 0 {
		out = tail(out, lines)
	}
	return out, err
}

func (c *Cluster) usable(i int) (*server, error) {
	if c.closed {
		return nil, errors.New("containerzk: cluster is closed")
	}
	return c.server(i)
}

// running returns the indexes of the servers whose container runs.
func (c *Cluster) running(ctx context.Context) []int {
	var idx []int
	for i, s := range c.servers {
		if st, err := s.ctr.State(ctx); err == nil && st.Running {
			idx = append(idx, i)
		}
	}
	return idx
}

// waitServing waits until the servers idx (all if nil) serve; on failure
// the error has the tail of the failing servers' logs.
func (c *Cluster) waitServing(ctx context.Context, idx []int) error {
	if idx == nil {
		for i := range c.servers {
			idx = append(idx, i)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, serveTimeout)
	defer cancel()
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Go(func() {
			if err := zktest.WaitServing(ctx, c.addrs[i]); err != nil {
				s := c.servers[i]
				logs, _ := containerLogs(context.WithoutCancel(ctx), s.ctr, logTailOnError)
				errs[k] = fmt.Errorf("containerzk: server %d (%s, container %.12s) not serving: %w\n--- last log lines:\n%s",
					s.myid, c.addrs[i], s.ctr.GetContainerID(), err, logs)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func isPortConflict(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use")
}

// Host ports handed out to live clusters of this process: a stopped
// server's port is free as far as the kernel knows, but must not be given
// to another cluster.
var portsInUse = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// reservePorts picks n free TCP ports on 127.0.0.1 for published client
// ports. They are taken below the kernel's ephemeral range when possible,
// so that no outgoing connection (such as a client reconnecting to a
// stopped server) gets one as its local port while its server is stopped.
func reservePorts(n int) ([]int, error) {
	portsInUse.Lock()
	defer portsInUse.Unlock()
	lo, hi := portRange()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("containerzk: no free host port found in [%d, %d)", lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		if portsInUse.m[p] {
			continue
		}
		l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		portsInUse.m[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

func releasePorts(servers []*server) {
	portsInUse.Lock()
	defer portsInUse.Unlock()
	for _, s := range servers {
		delete(portsInUse.m, s.hostPort)
	}
}

// portRange returns where reservePorts picks ports: [10000, start of the
// ephemeral range) if that leaves room, else the upper ports.
func portRange() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	first, err1 := strconv.Atoi(f[0])
	last, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return lo, hi
	}
	if first-lo >= 1000 {
		return lo, first
	}
	if last < 65000 {
		return last + 1, 65536
	}
	return 1024, 65536
}
