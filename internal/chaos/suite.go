package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/zktest"
	"go.uber.org/goleak"
)

// run starts a 3-node ensemble, runs the contention phase under faults and
// the load phase, and checks everything. The report is filled as far as
// the run got, also when it returns an error.
func run(ctx context.Context, cfg config, load loadConfig) (*report, error) {
	rep := &report{cfg: cfg}
	start := time.Now()
	defer func() { rep.elapsed = time.Since(start) }()
	ignore := goleak.IgnoreCurrent()
	if os.Getenv("ZK_SERVERS") != "" {
		logf(cfg, "ignoring ZK_SERVERS: the chaos suite starts, kills and partitions its own servers")
		os.Unsetenv("ZK_SERVERS")
	}
	cluster, err := startCluster(ctx, cfg, rep)
	if err != nil {
		return rep, err
	}
	err = phases(ctx, cfg, load, cluster, rep)
	err = errors.Join(err, cluster.Close())
	if lerr := goleak.Find(ignore); lerr != nil {
		rep.leaks = lerr.Error()
	}
	return rep, err
}

// startCluster starts the ensemble, partitionable if this machine allows.
func startCluster(ctx context.Context, cfg config, rep *report) (zktest.Cluster, error) {
	zc := zktest.Config{Size: 3, Isolatable: true, MaxSessionTimeout: time.Minute}
	logf(cfg, "starting a 3-node ZooKeeper ensemble")
	cluster, err := zktest.Start(ctx, zc)
	if errors.Is(err, zktest.ErrUnsupported) {
		rep.noPartitions = err.Error()
		logf(cfg, "no partitions on this machine: %v", err)
		zc.Isolatable = false
		cluster, err = zktest.Start(ctx, zc)
	}
	if err != nil {
		return nil, fmt.Errorf("start the ensemble: %w", err)
	}
	return cluster, nil
}

// phases runs the contention phase, then the load phase.
func phases(ctx context.Context, cfg config, load loadConfig, cluster zktest.Cluster, rep *report) error {
	admin, _, err := zk.Connect(cluster.Servers(), 30*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer admin.Close()
	c := &contention{cfg: cfg, cluster: cluster, admin: admin}
	err = c.run(ctx, rep)
	if err != nil || load.waiters <= 0 || ctx.Err() != nil {
		return err
	}
	lr, err := runLoad(ctx, cfg, load, cluster, admin)
	rep.load = lr
	return err
}

// run is the contention phase: open the sessions, contend under faults,
// check, close.
func (c *contention) run(ctx context.Context, rep *report) error {
	if err := c.makeResources(); err != nil {
		return err
	}
	err := c.openSessions()
	if err == nil {
		part, _ := c.cluster.(zktest.Partitioner)
		if rep.noPartitions != "" {
			part = nil
		}
		m := &monkey{cluster: c.cluster, part: part, sessions: c.sessions, admin: c.admin, only: c.cfg.only, timeout: c.cfg.timeout,
			calm: c.cfg.calm, rnd: rand.New(rand.NewPCG(c.cfg.seed, 0)), logf: func(f string, a ...any) { logf(c.cfg, f, a...) }}
		logf(c.cfg, "%d sessions contend for %v (seed %d)", len(c.sessions), c.cfg.duration, c.cfg.seed)
		err = c.contend(ctx, m)
		rep.faults, rep.hits, rep.byKind = m.counts()
		rep.orphansOpen, rep.divergence, _ = c.settled(3 * c.cfg.timeout)
	}
	for _, s := range c.sessions {
		rep.redone += len(s.log.grep("was undone"))
	}
	err = errors.Join(err, c.closeSessions())
	var div []string
	rep.orphans, div, _ = c.orphans()
	rep.divergence = merge(rep.divergence, div)
	rep.verdict = c.j.check(c.cfg.maxLeases)
	rep.linear = c.j.judge(c.cfg.maxLeases, c.cfg.htmlDir)
	rep.notes = c.j.notes
	rep.stats(&c.st)
	rep.soloGrants, rep.soloReaps = c.solo.grants.Load(), c.solo.reaps.Load()
	return err
}

// settled waits, at most d, until no lock node is left while the sessions
// are still open: the workers released everything, so a node that stays
// is an orphan that would block the queue. Nodes only a minority of the
// servers hold do not count (they are returned apart).
func (c *contention) settled(d time.Duration) (orphans, divergence []string, err error) {
	deadline := time.Now().Add(d)
	for {
		orphans, divergence, err = c.orphans()
		if (err == nil && len(orphans) == 0) || time.Now().After(deadline) {
			return orphans, divergence, err
		}
		time.Sleep(50 * time.Millisecond) // polling the tree; nothing to wait on
	}
}

// quiet silences the admin connection's go-zookeeper log: the faults make
// it reconnect often.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func logf(cfg config, format string, args ...any) {
	if cfg.out != nil {
		fmt.Fprintf(cfg.out, "%s chaos: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}
