package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The network of an Isolatable process cluster, all of it made with the
// ip command (iproute2):
//
//   - one network namespace per server, "zktest-<pid>-<x>-s<i>", holding
//     the loopback interface (up) and eth0 with address 10.213.<x>.<10+i>/24,
//     on which the server binds its client, quorum and election ports;
//   - a hub namespace, "zktest-<pid>-<x>-hub", holding a bridge (br0) to
//     which each server's eth0 is linked by a veth pair (hub end s<i>);
//   - one veth pair from the root namespace to the bridge, whose root end
//     "zktest<x>" has 10.213.<x>.1/24, so the test process reaches every
//     server.
//
// The bridge is not in the root namespace because a host that loads
// br_netfilter (Docker does) passes bridged packets through the host's
// iptables FORWARD chain, whose policy Docker sets to DROP: the servers
// could not talk to each other. The hub namespace has no firewall rules.
//
// <x> is chosen so that 10.213.<x>.0/24 overlaps no route of the host. The
// root end's name depends on <x> alone, so creating it fails if another
// process already uses <x>: that is the lock between concurrent test
// binaries. Every other object lives in a namespace whose name carries the
// owner's pid, and deleting the namespaces deletes the veth pairs, so a
// later run sweeps what a dead test binary left by deleting its
// namespaces (sweepStaleNetns).
//
// Isolate adds blackhole routes inside the servers' namespaces: a server
// then cannot send to the isolated one, and connecting fails at once
// ("invalid argument") instead of timing out. Nothing changes in the root
// namespace, so the test process still reaches every server.

// isoSubnetPrefix is the /16 in which each Isolatable cluster takes a /24.
const isoSubnetPrefix = "10.213."

// isoFirstServer is the last octet of server 0's address; server i has
// isoFirstServer+i, so an Isolatable cluster has at most maxIsoServers.
const (
	isoFirstServer = 10
	maxIsoServers  = 254 - isoFirstServer
)

// isoPorts are the client, quorum and election ports of every server of an
// Isolatable cluster: each has its own namespace, so they are always free.
var isoPorts = [3]int{2181, 2888, 3888}

// isoSecurePort is the secure client port of every server of an
// Isolatable cluster started with Config.TLS.
const isoSecurePort = 2281

// ipTimeout bounds one run of the ip command.
const ipTimeout = 30 * time.Second

// isoSetupMu serialises the choice of subnets within this process, so that
// two clusters starting at once do not pick the same one.
var isoSetupMu sync.Mutex

// isoNet is the network of an Isolatable cluster. Its methods are safe for
// concurrent use.
type isoNet struct {
	ip       string   // path of the ip command
	x        int      // the cluster's subnet is 10.213.x.0/24
	hub      string   // namespace holding the bridge
	rootLink string   // root end of the veth pair to the bridge
	servers  []string // server i's namespace

	mu     sync.Mutex      // guards cut and closed
	cut    map[[2]int]bool // {a, b}: server a's namespace drops packets to server b
	closed bool            // teardown has run
}

// isolationSupported returns the path of the ip command if this process
// can build an isoNet, or an error wrapping ErrUnsupported saying why not.
func isolationSupported() (string, error) {
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("zktest: Isolatable needs Linux network namespaces, not %s: %w", runtime.GOOS, ErrUnsupported)
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("zktest: Isolatable needs root to create network namespaces: %w", ErrUnsupported)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return "", fmt.Errorf("zktest: Isolatable needs the ip command (iproute2): %w: %w", ErrUnsupported, err)
	}
	return ip, nil
}

// newIsoNet builds the network of an Isolatable cluster of n servers. On
// failure it removes what it made; a failure to create the first namespace
// wraps ErrUnsupported.
func newIsoNet(ip string, n int) (_ *isoNet, err error) {
	if n > maxIsoServers {
		return nil, fmt.Errorf("zktest: Isolatable cluster of %d servers: at most %d", n, maxIsoServers)
	}
	nw, err := allocIsoNet(ip)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			nw.teardown()
		}
	}()
	if err := nw.buildHub(); err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		if err := nw.addServer(i); err != nil {
			return nil, err
		}
	}
	return nw, nil
}

// allocIsoNet chooses a free subnet, creates the hub namespace and the
// veth pair from the root namespace into it.
func allocIsoNet(ip string) (*isoNet, error) {
	isoSetupMu.Lock()
	defer isoSetupMu.Unlock()
	used, err := usedPrefixes(ip)
	if err != nil {
		return nil, err
	}
	pid := os.Getpid()
	for k := 0; k < 254; k++ {
		x := 1 + (pid+k)%254
		if overlaps(used, x) {
			continue
		}
		nw := &isoNet{
			ip:       ip,
			x:        x,
			hub:      fmt.Sprintf("%s%d-%d-hub", tempDirPrefix, pid, x),
			rootLink: "zktest" + strconv.Itoa(x),
			cut:      make(map[[2]int]bool),
		}
		if err := nw.run("", "netns", "add", nw.hub); err != nil {
			return nil, fmt.Errorf("zktest: Isolatable: %w: %w", ErrUnsupported, err)
		}
		err := nw.run("", "link", "add", nw.rootLink, "type", "veth", "peer", "name", "up0", "netns", nw.hub)
		if err == nil {
			return nw, nil
		}
		nw.run("", "netns", "del", nw.hub)
		if !strings.Contains(err.Error(), "File exists") {
			return nil, fmt.Errorf("zktest: Isolatable: %w", err)
		}
		// Another process took x since usedPrefixes: try the next one.
	}
	return nil, fmt.Errorf("zktest: Isolatable: no free subnet in %s0.0/16", isoSubnetPrefix)
}

// buildHub makes the bridge and addresses the root end of its link.
func (nw *isoNet) buildHub() error {
	steps := [][]string{
		{nw.hub, "link", "add", "br0", "type", "bridge"},
		{nw.hub, "link", "set", "br0", "up"},
		{nw.hub, "link", "set", "up0", "master", "br0", "up"},
		{nw.hub, "link", "set", "lo", "up"},
		{"", "addr", "add", nw.addr(-1) + "/24", "dev", nw.rootLink},
		{"", "link", "set", nw.rootLink, "up"},
	}
	return nw.runSteps(steps)
}

// addServer makes server i's namespace and links it to the bridge.
func (nw *isoNet) addServer(i int) error {
	ns := fmt.Sprintf("%s%d-%d-s%d", tempDirPrefix, os.Getpid(), nw.x, i)
	if err := nw.run("", "netns", "add", ns); err != nil {
		return err
	}
	nw.servers = append(nw.servers, ns)
	hubEnd := "s" + strconv.Itoa(i)
	steps := [][]string{
		{nw.hub, "link", "add", hubEnd, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{nw.hub, "link", "set", hubEnd, "master", "br0", "up"},
		{ns, "link", "set", "lo", "up"},
		{ns, "addr", "add", nw.addr(i) + "/24", "dev", "eth0"},
		{ns, "link", "set", "eth0", "up"},
	}
	return nw.runSteps(steps)
}

// addr returns server i's address, or the root end's for i == -1.
func (nw *isoNet) addr(i int) string {
	last := 1
	if i >= 0 {
		last = isoFirstServer + i
	}
	return fmt.Sprintf("%s%d.%d", isoSubnetPrefix, nw.x, last)
}

// command returns the command that runs argv in server i's namespace.
func (nw *isoNet) command(i int, argv []string) (string, []string) {
	return nw.ip, append([]string{"netns", "exec", nw.servers[i]}, argv...)
}

// isolate adds blackhole routes between server i and every other server.
func (nw *isoNet) isolate(i int) error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return fmt.Errorf("zktest: isolate server %d: cluster closed", i)
	}
	if i < 0 || i >= len(nw.servers) {
		return fmt.Errorf("zktest: isolate server %d: no such server (cluster has %d)", i, len(nw.servers))
	}
	for j := range nw.servers {
		if j == i {
			continue
		}
		for _, link := range [][2]int{{i, j}, {j, i}} {
			if nw.cut[link] {
				continue
			}
			if err := nw.run(nw.servers[link[0]], "route", "replace", "blackhole", nw.addr(link[1])+"/32"); err != nil {
				return fmt.Errorf("zktest: isolate server %d: %w", i, err)
			}
			nw.cut[link] = true
		}
	}
	return nil
}

// heal removes every blackhole route isolate added.
func (nw *isoNet) heal() error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return errors.New("zktest: heal: cluster closed")
	}
	var errs []error
	for link := range nw.cut {
		err := nw.run(nw.servers[link[0]], "route", "del", "blackhole", nw.addr(link[1])+"/32")
		if err != nil {
			errs = append(errs, fmt.Errorf("zktest: heal: %w", err))
			continue
		}
		delete(nw.cut, link)
	}
	return errors.Join(errs...)
}

// teardown deletes the root link (and with it the veth pair into the hub),
// then every namespace. Call it once the servers are dead. It is
// idempotent.
func (nw *isoNet) teardown() error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return nil
	}
	nw.closed = true
	var errs []error
	if err := nw.run("", "link", "del", nw.rootLink); err != nil && !notFound(err) {
		errs = append(errs, err)
	}
	for _, ns := range append(nw.servers, nw.hub) {
		if err := nw.run("", "netns", "del", ns); err != nil && !notFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runSteps runs each step: a namespace ("" for the root one) and ip's
// arguments.
func (nw *isoNet) runSteps(steps [][]string) error {
	for _, s := range steps {
		if err := nw.run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// run runs ip with args in namespace ns ("" for the root namespace).
func (nw *isoNet) run(ns string, args ...string) error {
	return runIP(nw.ip, ns, args...)
}

// runIP runs ip with args in namespace ns ("" for the root namespace),
// returning an error holding its output if it fails.
func runIP(ip, ns string, args ...string) error {
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// notFound reports whether err is ip's complaint about a missing device or
// namespace.
func notFound(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find device") || strings.Contains(msg, "No such file")
}

// usedPrefixes returns the destinations of every IPv4 route of the host,
// in any table, except default routes.
func usedPrefixes(ip string) ([]netip.Prefix, error) {
	out, err := exec.Command(ip, "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("zktest: Isolatable: ip route: %w", err)
	}
	var used []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && routeTypes[f[0]] {
			f = f[1:]
		}
		if len(f) == 0 || f[0] == "default" {
			continue
		}
		dst := f[0]
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			used = append(used, p.Masked())
		}
	}
	return used, nil
}

// routeTypes are the words that can precede a route's destination in the
// output of ip route.
var routeTypes = map[string]bool{
	"unicast": true, "local": true, "broadcast": true, "multicast": true, "anycast": true,
	"blackhole": true, "unreachable": true, "prohibit": true, "throw": true, "nat": true,
}

// overlaps reports whether 10.213.x.0/24 overlaps any of used.
func overlaps(used []netip.Prefix, x int) bool {
	ours := netip.MustParsePrefix(isoSubnetPrefix + strconv.Itoa(x) + ".0/24")
	for _, p := range used {
		if p.Overlaps(ours) {
			return true
		}
	}
	return false
}

// sweepStaleNetns deletes the namespaces left by test binaries that died
// without closing their Isolatable clusters; deleting them deletes their
// veth pairs and bridges too.
func sweepStaleNetns(ip string) {
	out, err := exec.Command(ip, "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], tempDirPrefix) {
			continue
		}
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(f[0], tempDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
			continue
		}
		runIP(ip, "", "netns", "del", f[0])
	}
}
