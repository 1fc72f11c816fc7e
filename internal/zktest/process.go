package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errNoZooKeeper says what to install when no ZooKeeper can be found.
var errNoZooKeeper = errors.New("zktest: no ZooKeeper found: install Debian's zookeeper package (apt-get install zookeeper) or set ZOOKEEPER_HOME or ZK_SERVERS")

// debianJavaDir is where Debian installs ZooKeeper's jar and the optional
// logging jars (a variable for tests).
var debianJavaDir = "/usr/share/java"

// startAttempts is how many times a process cluster start is tried when a
// server cannot bind one of its ports (another process took it between
// choosing and binding).
const startAttempts = 3

// install is a ZooKeeper installation the process backend can run.
type install struct {
	java      string
	classpath []string
	jvmFlags  []string // installation-specific flags (logging)
}

// findInstall locates java and ZooKeeper's jars.
func findInstall() (*install, error) {
	inst := &install{}
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		var jars []string
		for _, pattern := range []string{filepath.Join(home, "lib", "*.jar"), filepath.Join(home, "*.jar")} {
			m, err := filepath.Glob(pattern)
			if err != nil {
				return nil, fmt.Errorf("zktest: ZOOKEEPER_HOME=%s: %w", home, err)
			}
			sort.Strings(m)
			jars = append(jars, m...)
		}
		if len(jars) == 0 {
			return nil, fmt.Errorf("zktest: ZOOKEEPER_HOME=%s: no jars in %s or %s", home,
				filepath.Join(home, "lib"), home)
		}
		inst.classpath = jars
	} else {
		jar := filepath.Join(debianJavaDir, "zookeeper.jar")
		if _, err := os.Stat(jar); err != nil {
			return nil, errNoZooKeeper
		}
		// The jar's manifest Class-Path pulls in its dependencies but no
		// slf4j binding, so the server would log nothing: add one. It
		// also lacks a Netty jar that ZooKeeper's own distribution ships
		// and its Netty connection factory (Config.TLS) needs.
		inst.classpath = []string{jar}
		if fileExists(debianNettyCodec) {
			inst.classpath = append(inst.classpath, debianNettyCodec)
		}
		log4j := []string{filepath.Join(debianJavaDir, "slf4j-log4j12.jar"), filepath.Join(debianJavaDir, "log4j-1.2.jar")}
		simple := filepath.Join(debianJavaDir, "slf4j-simple.jar")
		switch {
		case fileExists(log4j[0]) && fileExists(log4j[1]):
			inst.classpath = append(inst.classpath, log4j...)
		case fileExists(simple):
			inst.classpath = append(inst.classpath, simple)
			inst.jvmFlags = append(inst.jvmFlags, "-Dorg.slf4j.simpleLogger.logFile=System.out")
		}
	}

	java, err := findJava()
	if err != nil {
		return nil, err
	}
	inst.java = java
	return inst, nil
}

// debianNettyCodec is the Netty jar that Debian's zookeeper.jar manifest
// omits although NettyServerCnxnFactory needs it: without it, every TLS
// connection fails with NoClassDefFoundError
// io/netty/handler/codec/ByteToMessageDecoder (its SslHandler's parent).
// It comes with Debian's libnetty-java, like the manifest's other Netty
// jars.
var debianNettyCodec = filepath.Join(debianJavaDir, "netty-codec.jar")

func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java := filepath.Join(home, "bin", "java")
		if fileExists(java) {
			return java, nil
		}
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("zktest: ZooKeeper found but no java in PATH or JAVA_HOME: install a JRE (apt-get install default-jre-headless) or set ZK_SERVERS: %w", err)
	}
	return java, nil
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// procCluster is a cluster of local ZooKeeper JVMs.
type procCluster struct {
	inst *install
	cfg  Config
	dir  string // temporary directory holding everything

	net   *isoNet      // nil unless cfg.Isolatable; set before the servers start
	links [][]*lagLink // links[i][j]: how server i reaches server j's quorum port; nil unless cfg.Laggable; set before the servers start

	mu     sync.Mutex // serialises Stop, Start, Kill and Close
	closed bool
	nodes  []*procNode
}

// isolatableCluster is a procCluster started with Config.Isolatable: it
// is also a Partitioner.
type isolatableCluster struct{ *procCluster }

// Isolate implements Partitioner.
func (c *isolatableCluster) Isolate(i int) error { return c.net.isolate(i) }

// Heal implements Partitioner.
func (c *isolatableCluster) Heal() error { return c.net.heal() }

// procNode is one server of a procCluster.
type procNode struct {
	id         int // ZooKeeper myid, 1-based
	addr       string
	secureAddr string // "" without Config.TLS
	cfgPath    string
	logPath    string
	extraArgs  []string
	proc       *jvm  // nil or exited when not running
	logStart   int64 // size of the log when proc was started
}

func (n *procNode) running() bool { return n.proc != nil && !n.proc.exited() }

// startProcess starts a cluster of local JVMs.
func startProcess(ctx context.Context, cfg Config) (Cluster, error) {
	inst, err := findInstall()
	if err != nil {
		return nil, err
	}
	return startInstall(ctx, inst, cfg)
}

// startInstall starts a cluster of inst's JVMs, retrying with new ports if
// one could not be bound.
func startInstall(ctx context.Context, inst *install, cfg Config) (Cluster, error) {
	sweepOnce.Do(func() { sweepStaleDirs(os.TempDir()) })
	if cfg.DataDir != "" {
		sweepStaleDirs(cfg.DataDir)
	}
	if cfg.Isolatable {
		ip, err := isolationSupported()
		if err != nil {
			return nil, err
		}
		sweepStaleNetns(ip)
	}
	for attempt := 1; ; attempt++ {
		c, err := tryStartProcess(ctx, inst, cfg)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errBind) || attempt == startAttempts || ctx.Err() != nil {
			return nil, err
		}
		logLine("zktest: port taken while starting ZooKeeper, retrying with new ports: %v", err)
	}
}

// errBind marks a start failure caused by a port that could not be bound.
var errBind = errors.New("port already in use")

func tryStartProcess(ctx context.Context, inst *install, cfg Config) (_ Cluster, err error) {
	cfg = cfg.WithDefaults()
	dir, err := os.MkdirTemp(cfg.DataDir, tempDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("zktest: create temp dir: %w", err)
	}
	c := &procCluster{inst: inst, cfg: cfg, dir: dir}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	lay, err := c.layout()
	if err != nil {
		return nil, err
	}
	if cfg.Laggable {
		if err := c.startLinks(lay); err != nil {
			return nil, err
		}
	}
	if err := c.writeNodes(lay); err != nil {
		return nil, err
	}
	for i, node := range c.nodes {
		if err := c.launch(node); err != nil {
			return nil, fmt.Errorf("zktest: start server %d: %w", i, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.waitAllServing(wctx, c.nodes); err != nil {
		return nil, err
	}
	switch {
	case c.net != nil:
		return &isolatableCluster{c}, nil
	case c.links != nil:
		return &laggableCluster{c}, nil
	}
	return c, nil
}

// layout is where the servers of a procCluster listen.
type layout struct {
	hosts                                   []string // server i's address
	clientPorts, quorumPorts, electionPorts []int
	securePorts                             []int // nil without Config.TLS
}

// layout chooses the servers' addresses and ports: free ports on 127.0.0.1,
// or, for an Isolatable cluster, fixed ports on each server's address in
// its own network namespace, which it builds (c.net).
func (c *procCluster) layout() (layout, error) {
	n := c.cfg.Size
	var lay layout
	if !c.cfg.Isolatable {
		perServer := 3
		if c.cfg.TLS != nil {
			perServer = 4
		}
		var given []int
		if c.cfg.Port != 0 {
			var err error
			if given, err = givenPorts(c.cfg.Port, n); err != nil {
				return lay, err
			}
			perServer--
		}
		ports, err := freePorts(perServer*n, given...)
		if err != nil {
			return lay, err
		}
		ports = append(given, ports...)
		lay.clientPorts, lay.quorumPorts, lay.electionPorts = ports[:n], ports[n:2*n], ports[2*n:3*n]
		if c.cfg.TLS != nil {
			lay.securePorts = ports[3*n:]
		}
		lay.hosts = slices.Repeat([]string{"127.0.0.1"}, n)
		return lay, nil
	}
	ip, err := isolationSupported()
	if err != nil {
		return lay, err
	}
	nw, err := newIsoNet(ip, n)
	if err != nil {
		return lay, err
	}
	c.net = nw
	for i := 0; i < n; i++ {
		lay.hosts = append(lay.hosts, nw.addr(i))
		lay.clientPorts = append(lay.clientPorts, isoPorts[0])
		lay.quorumPorts = append(lay.quorumPorts, isoPorts[1])
		lay.electionPorts = append(lay.electionPorts, isoPorts[2])
		if c.cfg.TLS != nil {
			lay.securePorts = append(lay.securePorts, isoSecurePort)
		}
	}
	return lay, nil
}

// writeNodes writes the logging configuration, the TLS stores, and each
// server's zoo.cfg and myid, and fills c.nodes.
func (c *procCluster) writeNodes(lay layout) error {
	log4jPath := filepath.Join(c.dir, "log4j.properties")
	logbackPath := filepath.Join(c.dir, "logback.xml")
	if err := os.WriteFile(log4jPath, []byte(log4jProperties), 0o644); err != nil {
		return fmt.Errorf("zktest: write log config: %w", err)
	}
	if err := os.WriteFile(logbackPath, []byte(logbackXML), 0o644); err != nil {
		return fmt.Errorf("zktest: write log config: %w", err)
	}
	var stores tlsStores
	if c.cfg.TLS != nil {
		var err error
		if stores, err = writeTLSStores(c.cfg.TLS, c.dir); err != nil {
			return err
		}
	}
	for i := range lay.hosts {
		node, err := c.writeNode(i, lay, stores)
		if err != nil {
			return fmt.Errorf("zktest: server %d: %w", i, err)
		}
		node.extraArgs = []string{
			"-Dlog4j.configuration=file:" + log4jPath,
			"-Dlogback.configurationFile=" + logbackPath,
			"-Dzookeeper.log.dir=" + filepath.Dir(node.cfgPath),
		}
		c.nodes = append(c.nodes, node)
	}
	return nil
}

// writeNode writes server i's zoo.cfg and myid; with Config.TLS, zoo.cfg
// points at stores.
func (c *procCluster) writeNode(i int, lay layout, stores tlsStores) (*procNode, error) {
	id := i + 1
	nodeDir := filepath.Join(c.dir, "server"+strconv.Itoa(id))
	dataDir := filepath.Join(nodeDir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	zc, err := ZooCfg(c.cfg, dataDir, id, lay.clientPorts, c.quorumPortsOf(i, lay), lay.electionPorts, lay.hosts)
	if err != nil {
		return nil, err
	}
	zc += "clientPortAddress=" + lay.hosts[i] + "\n"
	secureAddr := ""
	if c.cfg.TLS != nil {
		zc += tlsZooCfg(c.cfg.TLS, stores, lay.hosts[i], lay.securePorts[i])
		secureAddr = net.JoinHostPort(lay.hosts[i], strconv.Itoa(lay.securePorts[i]))
	}
	cfgPath := filepath.Join(nodeDir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(zc), 0o644); err != nil {
		return nil, fmt.Errorf("write zoo.cfg: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write myid: %w", err)
	}
	return &procNode{
		id:         id,
		addr:       net.JoinHostPort(lay.hosts[i], strconv.Itoa(lay.clientPorts[i])),
		secureAddr: secureAddr,
		cfgPath:    cfgPath,
		logPath:    filepath.Join(nodeDir, "server.log"),
	}, nil
}

// tempDirPrefix starts the names of the process backend's temporary
// directories, followed by the owning process's pid and a dash.
const tempDirPrefix = "zktest-"

var sweepOnce sync.Once

// sweepStaleDirs removes the temporary directories in parent left by test
// binaries that died without closing their clusters (their JVMs died with
// them).
func sweepStaleDirs(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, tempDirPrefix+"*-*"))
	for _, dir := range dirs {
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), tempDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// givenPorts returns the n client ports from first on, or an error naming
// the first that is in use on 127.0.0.1.
func givenPorts(first, n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		ports[i] = first + i
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])))
		if err != nil {
			return nil, fmt.Errorf("zktest: client port %d: %w", ports[i], err)
		}
		ln.Close()
	}
	return ports, nil
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1,
// none of them in taken.
//
// A port is free when chosen but the server binds it only later. Ports
// the kernel hands out with bind(":0") come from the ephemeral range, from
// which every outgoing connection also takes its local port (a busy test
// binary makes many), so one may be taken in between. Where the range is
// known (Linux), ports are therefore picked at random below or above it.
func freePorts(n int, taken ...int) ([]int, error) {
	lo, hi := portRange()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if lo > 0 && tries < 100*n {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo+1)))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				return nil, fmt.Errorf("zktest: pick a free port: %w", err)
			}
			continue
		}
		if slices.Contains(taken, ln.Addr().(*net.TCPAddr).Port) {
			ln.Close()
			continue
		}
		// Keep the listener open until all ports are chosen, so none is
		// picked twice.
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portRange returns a range of ports outside the kernel's ephemeral port
// range, or 0, 0 if that range is unknown or leaves no room.
func portRange() (lo, hi int) {
	const minPort, maxPort, minSpan = 10000, 65535, 1000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	elo, err1 := strconv.Atoi(f[0])
	ehi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	switch {
	case elo-1-minPort >= minSpan:
		return minPort, elo - 1
	case maxPort-(ehi+1) >= minSpan:
		return ehi + 1, maxPort
	}
	return 0, 0
}

// launch starts node's JVM.
func (c *procCluster) launch(node *procNode) error {
	args := DefaultServerJVMFlags()
	if c.cfg.ServerJVMFlags != "" {
		args = strings.Fields(c.cfg.ServerJVMFlags)
	}
	args = append(args,
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Djava.awt.headless=true",
	)
	args = append(args, c.inst.jvmFlags...)
	args = append(args, node.extraArgs...)
	args = append(args, JVMFlags(c.cfg)...)
	args = append(args,
		"-cp", strings.Join(c.inst.classpath, string(os.PathListSeparator)),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		node.cfgPath,
	)
	node.logStart = 0
	if fi, err := os.Stat(node.logPath); err == nil {
		node.logStart = fi.Size()
	}
	prog := c.inst.java
	if c.net != nil {
		prog, args = c.net.command(c.index(node), append([]string{prog}, args...))
	}
	p, err := startJVM(prog, args, node.logPath)
	if err != nil {
		return err
	}
	node.proc = p
	return nil
}

// waitAllServing waits until every node in nodes serves. A node whose
// process exits or logs that it cannot bind a port fails the wait at once.
// On failure the error names the failing server and holds the tail of its
// log, and wraps errBind if a port could not be bound.
func (c *procCluster) waitAllServing(ctx context.Context, nodes []*procNode) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = waitNode(ctx, node, true)
			if errs[i] != nil {
				cancel() // no point waiting for the others
			}
		}()
	}
	wg.Wait()
	// Report the first real failure, not the cancellations it caused.
	var first error
	var firstNode *procNode
	for i, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first, firstNode = err, nodes[i]
		}
	}
	if first == nil {
		return nil
	}
	tail := logTail(firstNode.logPath)
	err := fmt.Errorf("zktest: start server %d: %w\n--- tail of %s ---\n%s", c.index(firstNode), first, firstNode.logPath, tail)
	if errors.Is(err, errBind) {
		return err
	}
	for _, node := range nodes {
		if bindFailed(node) {
			return fmt.Errorf("%w: %w", errBind, err)
		}
	}
	return err
}

// exitBindQuorumPort is ZooKeeper's exit code when it cannot bind its
// election port (ExitCode.UNABLE_TO_BIND_QUORUM_PORT).
const exitBindQuorumPort = 14

// bindFailed reports whether node's current run logged that a port was in
// use, or exited because it could not bind its election port. Such a
// server may still come to serve (an ensemble of one elects itself without
// its election port) but exits seconds later.
func bindFailed(node *procNode) bool {
	if p := node.proc; p != nil && p.exited() {
		var ee *exec.ExitError
		if errors.As(p.err, &ee) && ee.ExitCode() == exitBindQuorumPort {
			return true
		}
	}
	f, err := os.Open(node.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(node.logStart, io.SeekStart); err != nil {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	return err == nil && bytes.Contains(b, []byte("Address already in use"))
}

func (c *procCluster) index(node *procNode) int { return node.id - 1 }

// waitNode waits until node serves or, if serving is false, answers ruok;
// it fails early if the process exits.
func waitNode(ctx context.Context, node *procNode, serving bool) error {
	p := node.proc
	check := servingCheck(ctx, node.addr)
	if !serving {
		check = func() error {
			reply, err := fourLetterWord(ctx, node.addr, "ruok", firstPollTimeout, ruokComplete)
			if err == nil && reply != "imok" {
				err = fmt.Errorf("zktest: ruok %s: got %q, want \"imok\"", node.addr, reply)
			}
			return err
		}
	}
	inner := check
	check = func() error {
		err := inner()
		if bindFailed(node) {
			return permanent(fmt.Errorf("%w: server logged a bind failure", errBind))
		}
		return err
	}
	err := poll(ctx, check, p.done)
	if errors.Is(err, errAborted) {
		return fmt.Errorf("server exited: %v", p.waitErr())
	}
	return err
}

// logTail returns the last lines of the log at path.
func logTail(path string) string {
	const maxBytes, maxLines = 8 << 10, 40
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Servers implements Cluster.
func (c *procCluster) Servers() []string {
	addrs := make([]string, len(c.nodes))
	for i, node := range c.nodes {
		addrs[i] = node.addr
	}
	return addrs
}

// SecureServers implements SecureCluster.
func (c *procCluster) SecureServers() []string {
	if c.cfg.TLS == nil {
		return nil
	}
	addrs := make([]string, len(c.nodes))
	for i, node := range c.nodes {
		addrs[i] = node.secureAddr
	}
	return addrs
}

// Backend implements Cluster.
func (c *procCluster) Backend() string { return "process" }

// PID implements Process: the process id of server i's JVM, or 0 when
// it is not running.
func (c *procCluster) PID(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) || !c.nodes[i].running() {
		return 0
	}
	return c.nodes[i].proc.cmd.Process.Pid
}

// node returns server i, checking the cluster is open. c.mu must be held.
func (c *procCluster) node(op string, i int) (*procNode, error) {
	if c.closed {
		return nil, fmt.Errorf("zktest: %s server %d: cluster closed", op, i)
	}
	if i < 0 || i >= len(c.nodes) {
		return nil, fmt.Errorf("zktest: %s server %d: no such server (cluster has %d)", op, i, len(c.nodes))
	}
	return c.nodes[i], nil
}

// Stop implements Cluster: SIGTERM, then SIGKILL if the server has not
// exited within stopTimeout.
func (c *procCluster) Stop(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	node, err := c.node("stop", i)
	if err != nil {
		return err
	}
	if !node.running() {
		return nil
	}
	if err := node.proc.stop(stopTimeout); err != nil {
		return fmt.Errorf("zktest: stop server %d: %w", i, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
	defer cancel()
	if err := WaitStopped(ctx, node.addr); err != nil {
		return fmt.Errorf("zktest: stop server %d: %w", i, err)
	}
	return nil
}

// Kill implements Cluster.
func (c *procCluster) Kill(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	node, err := c.node("kill", i)
	if err != nil {
		return err
	}
	if !node.running() {
		return nil
	}
	if err := node.proc.kill(reapTimeout); err != nil {
		return fmt.Errorf("zktest: kill server %d: %w", i, err)
	}
	return nil
}

// Start implements Cluster.
func (c *procCluster) Start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	node, err := c.node("start", i)
	if err != nil {
		return err
	}
	if node.running() {
		return fmt.Errorf("zktest: start server %d: already running", i)
	}
	if err := c.launch(node); err != nil {
		return fmt.Errorf("zktest: start server %d: %w", i, err)
	}
	var running []*procNode
	for _, n := range c.nodes {
		if n.running() {
			running = append(running, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if 2*len(running) <= len(c.nodes) {
		// No majority: the ensemble cannot serve yet; wait for the server
		// to answer at all.
		err = waitNode(ctx, node, false)
		if err != nil {
			err = fmt.Errorf("zktest: start server %d: %w\n--- tail of %s ---\n%s", i, err, node.logPath, logTail(node.logPath))
		}
	} else {
		err = c.waitAllServing(ctx, running)
	}
	if err != nil {
		node.proc.kill(reapTimeout)
		node.proc.signaled = true // its exit is reported by err
		return err
	}
	return nil
}

// Close implements Cluster: it kills every server and removes the
// temporary directory and, for an Isolatable cluster, its network; for a
// Laggable one, it closes the forwarders between the servers. It reports servers that had exited by themselves
// (crashed), with the tail of their logs.
func (c *procCluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for i, node := range c.nodes {
		if node.proc == nil {
			continue
		}
		if node.proc.exited() && !node.proc.signaled {
			errs = append(errs, fmt.Errorf("zktest: server %d had exited by itself: %v\n--- tail of %s ---\n%s",
				i, node.proc.err, node.logPath, logTail(node.logPath)))
		}
		if err := node.proc.kill(reapTimeout); err != nil {
			errs = append(errs, fmt.Errorf("zktest: close server %d: %w", i, err))
		}
	}
	if c.net != nil {
		if err := c.net.teardown(); err != nil {
			errs = append(errs, fmt.Errorf("zktest: remove network: %w", err))
		}
	}
	if err := c.closeLinks(); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("zktest: remove %s: %w", c.dir, err))
	}
	return errors.Join(errs...)
}

// jvm is a child process started by startJVM.
type jvm struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed once the process has been reaped
	err      error         // cmd.Wait's result; read after done is closed
	signaled bool          // the harness stopped or killed it; guarded by procCluster.mu
}

// startJVM starts java with args, its stdout and stderr appended to
// logPath, in its own process group.
//
// On Linux the child gets PR_SET_PDEATHSIG=SIGKILL so that it dies with
// the test binary, however that exits. The kernel sends that signal when
// the thread that forked the child exits, not the process, so the child is
// started from a goroutine locked to its OS thread that stays alive, and
// locked, until the child has been reaped: the Go runtime cannot retire
// that thread while the child lives.
func startJVM(java string, args []string, logPath string) (*jvm, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	cmd := exec.Command(java, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	j := &jvm{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Deliberately never unlocked: when this goroutine returns the
		// runtime discards the thread, which is harmless as the child is
		// gone by then.
		err := cmd.Start()
		started <- err
		if err != nil {
			logFile.Close()
			close(j.done)
			return
		}
		j.err = cmd.Wait()
		logFile.Close()
		close(j.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("run %s: %w", java, err)
	}
	return j, nil
}

func (j *jvm) exited() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// waitErr returns how the process ended; call it after done is closed.
func (j *jvm) waitErr() error {
	<-j.done
	return j.err
}

// wait waits up to d for the process to be reaped.
func (j *jvm) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-j.done:
		return true
	case <-t.C:
		return false
	}
}

// stop sends SIGTERM and waits up to d, then kills.
func (j *jvm) stop(d time.Duration) error {
	if j.exited() {
		return nil
	}
	j.signaled = true
	if err := terminate(j.cmd.Process); err != nil && !j.exited() {
		return fmt.Errorf("SIGTERM pid %d: %w", j.cmd.Process.Pid, err)
	}
	if j.wait(d) {
		return nil
	}
	return j.kill(reapTimeout)
}

// kill sends SIGKILL and waits up to d for the process to be reaped.
func (j *jvm) kill(d time.Duration) error {
	if j.exited() {
		return nil
	}
	j.signaled = true
	if err := kill(j.cmd.Process); err != nil && !j.exited() {
		return fmt.Errorf("SIGKILL pid %d: %w", j.cmd.Process.Pid, err)
	}
	if !j.wait(d) {
		return fmt.Errorf("pid %d not reaped %v after SIGKILL", j.cmd.Process.Pid, d)
	}
	return nil
}
