//go:build unix

package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// startIsolatable starts an Isolatable ensemble of size servers, skipping t
// where that is unsupported, and logs how long the start took.
func startIsolatable(t *testing.T, size int) (Cluster, Partitioner) {
	t.Helper()
	start := time.Now()
	c := StartT(t, Config{Size: size, Isolatable: true})
	t.Logf("%d-server Isolatable ensemble serving after %v: %v", size, time.Since(start).Round(time.Millisecond), c.Servers())
	p, ok := c.(Partitioner)
	if !ok {
		t.Fatalf("Isolatable %s cluster %T is not a Partitioner", c.Backend(), c)
	}
	return c, p
}

// waitFor polls cond until it returns nil, failing t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := poll(ctx, func() error { return cond(ctx) }, nil); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitNewLeader waits for a leader other than old and returns it.
func waitNewLeader(t *testing.T, c Cluster, old int, timeout time.Duration) int {
	t.Helper()
	leader := -1
	waitFor(t, timeout, "new leader", func(ctx context.Context) error {
		l, err := Leader(ctx, c)
		if err != nil {
			return err
		}
		if l == old {
			return fmt.Errorf("server %d still the only leader", old)
		}
		leader = l
		return nil
	})
	return leader
}

func TestIntegration_IsolateLeader(t *testing.T) {
	c, p := startIsolatable(t, 3)
	servers := c.Servers()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := Leader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	conn := ConnectT(t, servers)
	mustCreate(t, conn, "/before", []byte("b"), 0)

	isolated := time.Now()
	if err := p.Isolate(old); err != nil {
		t.Fatal(err)
	}
	if err := p.Isolate(old); err != nil {
		t.Fatalf("second Isolate: %v", err)
	}
	leader := waitNewLeader(t, c, old, 30*time.Second)
	t.Logf("server %d leads %v after isolating leader %d", leader, time.Since(isolated).Round(time.Millisecond), old)
	var majority []string
	for i, s := range servers {
		if i != old {
			majority = append(majority, s)
		}
	}
	// The majority's servers may still be settling into the new epoch
	// (a follower syncing with the new leader drops its clients): a
	// create that fails on the connection is tried again, as a client
	// would.
	during := ConnectT(t, majority)
	waitFor(t, 30*time.Second, "create /during on the majority", func(context.Context) error {
		_, err := during.Create("/during", []byte("d"), 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // an attempt whose reply was lost did it
		}
		return err
	})
	waitFor(t, 30*time.Second, "isolated server stops serving", func(ctx context.Context) error {
		if m, err := Mode(ctx, servers[old]); err == nil {
			return fmt.Errorf("isolated server %d still serving as %s", old, m)
		}
		return nil
	})

	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "old leader rejoins", func(ctx context.Context) error {
		m, err := Mode(ctx, servers[old])
		if err == nil && m != "follower" {
			err = fmt.Errorf("server %d is %s", old, m)
		}
		return err
	})
	back := ConnectT(t, servers[old:old+1])
	if _, err := back.Sync("/during"); err != nil {
		t.Fatal(err)
	}
	mustGet(t, back, "/during", "d")
	mustGet(t, back, "/before", "b")
	if l, err := Leader(ctx, c); err != nil || l != leader {
		t.Fatalf("Leader after Heal = %d, %v; want %d", l, err, leader)
	}
}

// ownNetwork lists this process's namespaces and root-namespace links of
// Isolatable clusters.
func ownNetwork(t *testing.T) (namespaces, links []string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	own := tempDirPrefix + strconv.Itoa(os.Getpid()) + "-"
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], own) {
			namespaces = append(namespaces, f[0])
		}
	}
	out, err = exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "zktest") {
			links = append(links, strings.TrimSuffix(f[1], ":"))
		}
	}
	return namespaces, links
}

func TestIntegration_IsolatableKillStartClose(t *testing.T) {
	c, p := startIsolatable(t, 3)
	nw := c.(*isolatableCluster).net
	servers := c.Servers()
	for i, s := range servers {
		if want := nw.addr(i) + ":2181"; s != want {
			t.Fatalf("server %d at %s, want %s", i, s, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := Leader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// Kill a follower, and write through the other one, which keeps its
	// leader and so its connections.
	victim, other := (leader+1)%3, (leader+2)%3
	conn := ConnectT(t, servers[other:other+1])
	mustCreate(t, conn, "/k", []byte("1"), 0)
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	if err := WaitStopped(ctx, servers[victim]); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/k", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(victim); err != nil {
		t.Fatal(err)
	}
	back := ConnectT(t, servers[victim:victim+1])
	if _, err := back.Sync("/k"); err != nil {
		t.Fatal(err)
	}
	mustGet(t, back, "/k", "2")

	if err := p.Isolate(2); err != nil {
		t.Fatal(err)
	}
	namespaces, links := ownNetwork(t)
	if len(namespaces) != 4 || len(links) != 1 {
		t.Fatalf("running cluster: namespaces %v, links %v; want 4 and 1", namespaces, links)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if namespaces, links := ownNetwork(t); len(namespaces)+len(links) > 0 {
		t.Fatalf("Close left namespaces %v and links %v", namespaces, links)
	}
	if err := p.Isolate(0); err == nil {
		t.Fatal("Isolate after Close: no error")
	}
	if err := p.Heal(); err == nil {
		t.Fatal("Heal after Close: no error")
	}
}

func TestIntegration_IsolatableSkipsRegisteredBackends(t *testing.T) {
	if len(externalServers()) > 0 {
		t.Skip("ZK_SERVERS is set")
	}
	clearRegistry(t)
	fake := &fakeBackend{name: "fake"}
	RegisterBackend(fake)
	c, _ := startIsolatable(t, 1)
	if c.Backend() != "process" || fake.started != 0 {
		t.Fatalf("backend %s, fake starts %d; want the process backend", c.Backend(), fake.started)
	}
	conn := ConnectT(t, c.Servers())
	mustCreate(t, conn, "/one", nil, 0)
}

func TestSweepStaleNetns(t *testing.T) {
	ip, err := isolationSupported()
	if err != nil {
		t.Skip(err)
	}
	dead := deadPid(t)
	stale := tempDirPrefix + strconv.Itoa(dead) + "-1-hub"
	live := tempDirPrefix + strconv.Itoa(os.Getppid()) + "-1-hub"
	for _, ns := range []string{stale, live} {
		if err := runIP(ip, "", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { runIP(ip, "", "netns", "del", ns) })
	}
	sweepStaleNetns(ip)
	out, err := exec.Command(ip, "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), stale) {
		t.Errorf("stale namespace %s survived the sweep", stale)
	}
	if !strings.Contains(string(out), live) {
		t.Errorf("live process's namespace %s was swept", live)
	}
}

// deadPid returns a pid that is certainly not running: a reaped child's.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !processGone(pid) {
		t.Skipf("pid %d was reused", pid)
	}
	return pid
}

func TestIsolatableUnsupportedExternal(t *testing.T) {
	t.Setenv(serversEnv, "127.0.0.1:1")
	_, err := Start(context.Background(), Config{Isolatable: true})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Start(Isolatable) with %s set = %v, want ErrUnsupported", serversEnv, err)
	}
}

func TestIsolatableStartFailureCleansUp(t *testing.T) {
	if _, err := isolationSupported(); err != nil {
		t.Skip(err)
	}
	before := ownTempDirs(t)
	inst := fakeJava(t, "echo 'fatal: no server here' >&2\nexit 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := startInstall(ctx, inst, Config{Size: 3, Isolatable: true})
	if err == nil || !strings.Contains(err.Error(), "fatal: no server here") {
		t.Fatalf("start with a failing java = %v, want its log tail", err)
	}
	if namespaces, links := ownNetwork(t); len(namespaces)+len(links) > 0 {
		t.Fatalf("failed start left namespaces %v and links %v", namespaces, links)
	}
	checkNoNewDirs(t, before)
}
