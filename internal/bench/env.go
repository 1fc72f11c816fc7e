package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/zktest"
)

// startServerTimeout bounds starting ZooKeeper.
const startServerTimeout = 3 * time.Minute

// tmpfsDir is where -tmpfs puts the server's data.
const tmpfsDir = "/dev/shm"

// env is what every run shares: the server, a controller session that
// lists and cleans up (never through a counting proxy), and the run's
// root node.
type env struct {
	cluster   zktest.Cluster // closed by close if owned
	owned     bool
	server    string // the server's client address
	ctl       *zkSession
	root      string // every node of this run lives under it
	storage   string // e.g. "disk (ext4, /tmp)"
	zkVersion string
	logDir    string // the Java children's logs
	runs      int    // runs so far, to name their paths
	baseline  int    // sessions the server tracks between runs (owned server)
	nudge     *nudger
	pinning   string // how -server-cpus split the CPUs; "" for no pinning
}

// sessionsWait bounds the wait for a run's sessions to end at the server:
// a killed Java child's sessions end only when they expire.
const sessionsWait = 45 * time.Second

// startEnv starts ZooKeeper with its data where cfg asks and connects the
// controller session.
func startEnv(ctx context.Context, cfg config) (*env, error) {
	dataDir, storage, err := pickDataDir(cfg)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, startServerTimeout)
	defer cancel()
	zc := zktest.Config{DataDir: dataDir}
	if cfg.ServerJVM == jvmDefault {
		zc.ServerJVMFlags = userServerJVM
	}
	cluster, err := zktest.Start(sctx, zc)
	if err != nil {
		return nil, fmt.Errorf("start ZooKeeper: %w", err)
	}
	e, err := attachEnv(sctx, cluster, true, storage)
	if err != nil {
		return nil, err
	}
	if len(cfg.ServerCPUs) > 0 {
		p, ok := cluster.(zktest.Process)
		if !ok {
			return nil, errors.Join(errors.New("-server-cpus: the server's process is not this tool's"), e.close())
		}
		if e.pinning, err = pin(p.PID(0), cfg.ServerCPUs); err != nil {
			return nil, errors.Join(err, e.close())
		}
	}
	if cfg.Nudge > 0 {
		e.nudge = startNudger(e.ctl.c, cfg.Nudge)
	}
	return e, nil
}

// attachEnv sets up an env on a running cluster, which close closes if
// owned (even when attachEnv fails).
func attachEnv(ctx context.Context, cluster zktest.Cluster, owned bool, storage string) (*env, error) {
	e := &env{cluster: cluster, owned: owned, server: cluster.Servers()[0], storage: storage}
	var err error
	if e.logDir, err = os.MkdirTemp("", "zklock-bench-logs-"); err != nil {
		return nil, errors.Join(fmt.Errorf("log dir: %w", err), e.close())
	}
	if e.zkVersion, err = e.serverVersion(ctx); err != nil {
		return nil, errors.Join(err, e.close())
	}
	if e.ctl, err = dialZK(ctx, cluster.Servers(), 30*time.Second); err != nil {
		return nil, errors.Join(fmt.Errorf("controller session: %w", err), e.close())
	}
	e.root = fmt.Sprintf("/zklock-bench-%s-%04x", strconv.FormatInt(time.Now().UnixNano(), 36), rand.IntN(1<<16))
	if err := createParents(e.ctl.c, e.root); err != nil {
		return nil, errors.Join(err, e.close())
	}
	if e.baseline, err = e.sessions(ctx); err != nil {
		return nil, errors.Join(err, e.close())
	}
	return e, nil
}

// serverCPU returns the CPU time the server's process has used, or -1
// when it cannot be read (an external server, or not Linux).
func (e *env) serverCPU() time.Duration {
	p, ok := e.cluster.(zktest.Process)
	if !ok {
		return -1
	}
	return cpuOf(p.PID(0))
}

// sessions returns how many sessions the server tracks, from the dump
// four-letter word ("Session Sets (<sets>)/(<sessions>):").
func (e *env) sessions(ctx context.Context) (int, error) {
	reply, err := zktest.FourLetterWord(ctx, e.server, "dump")
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`Session Sets \((\d+)\)/\((\d+)\)`).FindStringSubmatch(reply)
	if m == nil {
		return 0, fmt.Errorf("dump: no session count in %q", firstLine(reply))
	}
	return strconv.Atoi(m[2])
}

// watches returns how many watches the server holds, from the wchs
// four-letter word ("... Total watches:<n>").
func (e *env) watches(ctx context.Context) (int, error) {
	reply, err := zktest.FourLetterWord(ctx, e.server, "wchs")
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`Total watches:(\d+)`).FindStringSubmatch(reply)
	if m == nil {
		return 0, fmt.Errorf("wchs: no watch count in %q", firstLine(reply))
	}
	return strconv.Atoi(m[1])
}

// waitWatchesSettle waits until the server holds at least min watches and
// their number has not changed for settle: queued waiters set a watch as
// the last step of queueing, so then every waiter is done queueing.
// A busy server may not answer wchs in time: that is retried.
func (e *env) waitWatchesSettle(ctx context.Context, min int, settle time.Duration) error {
	last, since := -1, time.Now()
	var lastErr error
	for {
		n, err := e.watches(ctx)
		switch {
		case err != nil:
			lastErr, since = err, time.Now()
		case n != last:
			last, since = n, time.Now()
		case n >= min && time.Since(since) >= settle:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d watches, want %d, settled (last error: %v): %w", last, min, lastErr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitSessions waits until the server tracks no more sessions than
// between runs, and reports the sessions a run left open.
func (e *env) waitSessions(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, sessionsWait)
	defer cancel()
	for {
		n, err := e.sessions(ctx)
		if err == nil && n <= e.baseline {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("counting sessions: %w", err)
			}
			return fmt.Errorf("%d sessions still open %v after the run", n-e.baseline, sessionsWait)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pickDataDir chooses the directory the server keeps its data in, and
// describes its storage.
func pickDataDir(cfg config) (dir, storage string, err error) {
	switch {
	case cfg.DataDir != "":
		dir = cfg.DataDir
	case cfg.Tmpfs:
		dir = tmpfsDir
		if fs := fsType(dir); fs != "tmpfs" {
			return "", "", fmt.Errorf("-tmpfs: %s is %s, not tmpfs", dir, fs)
		}
	default:
		for _, d := range []string{os.TempDir(), "/var/tmp"} {
			if fs := fsType(d); fs != "tmpfs" && fs != "missing" {
				dir = d
				break
			}
		}
		if dir == "" {
			return "", "", errors.New("no directory on disk found for the data (the temp dirs are tmpfs): use -datadir")
		}
	}
	fs := fsType(dir)
	if fs == "tmpfs" {
		return dir, fmt.Sprintf("tmpfs (%s)", dir), nil
	}
	return dir, fmt.Sprintf("disk (%s, %s)", fs, dir), nil
}

// serverVersion reads the server's version through srvr ("3.8.0").
func (e *env) serverVersion(ctx context.Context) (string, error) {
	f, err := zktest.Srvr(ctx, e.server)
	if err != nil {
		return "", err
	}
	// "3.8.0-${mvngit.commit.id}, built on ...": keep the release.
	v, _, _ := strings.Cut(f["Zookeeper version"], ",")
	v, _, _ = strings.Cut(v, "-")
	return v, nil
}

// srvr reads the server's Received and Sent packet counters.
func (e *env) srvr(ctx context.Context) (received, sent int64, err error) {
	f, err := zktest.Srvr(ctx, e.server)
	if err != nil {
		return 0, 0, err
	}
	received, err1 := strconv.ParseInt(f["Received"], 10, 64)
	sent, err2 := strconv.ParseInt(f["Sent"], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("srvr counters: %w", err)
	}
	return received, sent, nil
}

// paths returns a fresh lock path for a run of workload by lib, and a
// sibling path for its warm-up; both live under one node of their own,
// which cleanup deletes.
func (e *env) paths(workload, lib string) (lockPath, warmPath string) {
	e.runs++
	dir := path.Join(e.root, fmt.Sprintf("%02d-%s-%s", e.runs, workload, lib))
	return path.Join(dir, "lock"), path.Join(dir, "warmup")
}

// cleanup deletes the node holding lockPath and everything under it,
// including nodes a killed child's sessions left, and on a server of its
// own checks that the run's sessions have ended.
func (e *env) cleanup(lockPath string) error {
	if err := zktest.DeleteTree(e.ctl.c, path.Dir(lockPath)); err != nil {
		return fmt.Errorf("clean up %s: %w", path.Dir(lockPath), err)
	}
	if e.owned {
		return e.waitSessions(context.Background())
	}
	return nil
}

// waitChildren polls the children of p until there are at least want, or
// ctx ends.
func (e *env) waitChildren(ctx context.Context, p string, want int) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		children, _, err := e.ctl.c.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("list %s: %w", p, err)
		}
		if len(children) >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d nodes under %s: %w", len(children), want, p, ctx.Err())
		case <-t.C:
		}
	}
}

// close deletes the run's root (checking that nothing is left), closes
// the controller session and the server, and removes the logs.
func (e *env) close() error {
	var errs []error
	e.nudge.close()
	if e.ctl != nil {
		if err := zktest.DeleteTree(e.ctl.c, e.root); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", e.root, err))
		} else if ok, _, err := e.ctl.c.Exists(e.root); err != nil {
			errs = append(errs, fmt.Errorf("check %s is gone: %w", e.root, err))
		} else if ok {
			errs = append(errs, fmt.Errorf("%s still exists after clean-up", e.root))
		}
		errs = append(errs, e.ctl.close())
	}
	if e.cluster != nil && e.owned {
		errs = append(errs, e.cluster.Close())
	}
	if e.logDir != "" {
		errs = append(errs, os.RemoveAll(e.logDir))
	}
	return errors.Join(errs...)
}

// route is how a run's sessions reach the server: directly on loopback,
// or in the latency regime through two proxies that delay every byte
// (one for a handoff's gate session, one for every other session) and
// count the requests.
type route struct {
	ep      endpoints
	proxies []*countingProxy // waiters', gate's; nil when direct
}

// openRoute returns a route to the server for regime rg; close it.
func (e *env) openRoute(rg regime) (*route, error) {
	if rg.Delay <= 0 {
		return &route{ep: endpoints{Servers: []string{e.server}, Gate: []string{e.server}}}, nil
	}
	return e.openCounted(rg.Delay)
}

// openCounted returns a route through two counting proxies, each adding
// delay each way (none if zero).
func (e *env) openCounted(delay time.Duration) (*route, error) {
	waiters, err := newCountingProxy(e.server, delay)
	if err != nil {
		return nil, err
	}
	gate, err := newCountingProxy(e.server, delay)
	if err != nil {
		waiters.Close()
		return nil, err
	}
	return &route{
		ep:      endpoints{Servers: []string{waiters.Addr()}, Gate: []string{gate.Addr()}},
		proxies: []*countingProxy{waiters, gate},
	}, nil
}

// close closes the route's proxies, and with them any connection left.
func (r *route) close() {
	for _, p := range r.proxies {
		p.Close()
	}
}
