package main

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zktest"
)

// The smoke tests run the tool's workloads in-process with tiny sizes
// against the shared test server: zklock, zk.Lock and the floor always,
// the Curator harness when Java and Curator are installed (otherwise they
// skip, or fail when CI is set).

// TestMain runs the tests under leakcheck.Main, which closes the shared server
// and fails the run if goroutines leaked.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// smokeSession is the session timeout of the smoke tests' sessions.
const smokeSession = 10 * time.Second

// smokeLimit is the time limit of each smoke run.
const smokeLimit = 60 * time.Second

// smokeEnv attaches an env to the shared server; it is closed (the server
// is not) when t ends, and must then have left no node behind.
func smokeEnv(t *testing.T) *env {
	t.Helper()
	c := zktest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := attachEnv(ctx, c, false, "test")
	if err != nil {
		t.Fatal(err)
	}
	e.nudge = startNudger(e.ctl.c, defaultNudge)
	t.Cleanup(func() {
		if err := e.close(); err != nil {
			t.Errorf("env close: %v", err)
		}
	})
	return e
}

// tinySpecs are every workload with tiny sizes.
func tinySpecs() []spec {
	const d = 300 * time.Millisecond
	return []spec{
		{Workload: wFloor, N: 5, Warmup: 2},
		{Workload: wUncontended, N: 5, Warmup: 2},
		{Workload: wContended, C: 3, Dur: d, Warmup: 2},
		{Workload: wSemaphore, C: 3, Leases: 2, Dur: d, Warmup: 2},
		{Workload: wRWRead, C: 2, Dur: d, Warmup: 2},
		{Workload: wHandoff, N: 3, Warmup: 2, Reps: 2},
		{Workload: wFailover, N: 3, Mode: stepResign, Warmup: 2, WarmReps: 1, Reps: 3},
		{Workload: wFailover, N: 3, Mode: stepClose, Warmup: 2, WarmReps: 1, Reps: 3},
		{Workload: wManyLocks, N: 20, G: 1, Warmup: 2},
		{Workload: wManyLocks, N: 20, G: 4, Warmup: 2},
	}
}

// quiet is a progress that writes nowhere.
func quiet() *progress { return newProgressTo(io.Discard, false) }

// checkResult fails t unless res finished with sensible figures and no
// exclusion violation.
func checkResult(t *testing.T, res result) {
	t.Helper()
	name := res.Label + " " + res.Library
	if res.Error != "" || res.Figures == nil {
		t.Errorf("%s: dnf=%v error %s", name, res.DNF, res.Error)
		return
	}
	f := res.Figures
	if f.Ops <= 0 || f.PerSecond <= 0 {
		t.Errorf("%s: ops %d, %v/s", name, f.Ops, f.PerSecond)
	}
	if f.Violations != nil && *f.Violations != 0 {
		t.Errorf("%s: %d exclusion violations", name, *f.Violations)
	}
	if res.Workload == wHandoff && (f.MsPerHandoff == nil || *f.MsPerHandoff <= 0) {
		t.Errorf("%s: ms per handoff %v", name, f.MsPerHandoff)
	}
	if res.Workload == wFailover && (f.P50Ms == nil || *f.P50Ms <= 0 || *f.P99Ms < *f.P50Ms) {
		t.Errorf("%s: ms per failover p50 %v, p99 %v", name, f.P50Ms, f.P99Ms)
	}
	if res.Srvr == nil || res.Srvr.Received <= 0 {
		t.Errorf("%s: srvr deltas %+v", name, res.Srvr)
	}
	if res.Workload == wManyLocks {
		checkMany(t, name, res)
	}
}

// checkMany fails t unless a many-locks result has every figure: N
// acquisitions, a release-all, and the costs per hold.
func checkMany(t *testing.T, name string, res result) {
	t.Helper()
	f := res.Figures
	if f.Ops != int64(res.N) || f.ReleaseMs == nil || *f.ReleaseMs <= 0 || f.ReleasePerSecond == nil || *f.ReleasePerSecond <= 0 {
		t.Errorf("%s: %d acquisitions (want %d), release-all %v ms, %v/s", name, f.Ops, res.N, f.ReleaseMs, f.ReleasePerSecond)
	}
	if f.HeapPerHold == nil || f.TasksPerHold == nil || f.WatchesPerHold == nil {
		t.Errorf("%s: per hold: heap %v, goroutines %v, watches %v", name, f.HeapPerHold, f.TasksPerHold, f.WatchesPerHold)
	}
	if (f.StackPerHold == nil) != (res.Library == libCurator) || f.HeapApprox != (res.Library == libCurator) {
		t.Errorf("%s: stack per hold %v, heap approximate %v", name, f.StackPerHold, f.HeapApprox)
	}
}

// The regimes of the smoke tests.
var (
	loopback = regime{Name: regLoopback}
	latency  = regime{Name: regLatency, Delay: time.Millisecond}
)

// runAll runs every tiny spec lib supports in regime rg and checks the
// results.
func runAll(t *testing.T, e *env, lib library, rg regime) {
	t.Helper()
	for _, sp := range tinySpecs() {
		if lib.supports(sp.Workload) {
			res := runOne(context.Background(), e, lib, sp, rg, 0, smokeLimit, quiet())
			checkResult(t, res)
			if f := res.Figures; sp.Workload == wHandoff && f != nil && f.Ops != int64(sp.N*sp.reps()) {
				t.Errorf("%s %s: %d handoffs, want %d x %d", res.Label, res.Library, f.Ops, sp.N, sp.reps())
			}
			if f := res.Figures; sp.Workload == wFailover && f != nil && f.Ops != int64(sp.reps()) {
				t.Errorf("%s %s: %d failovers, want %d", res.Label, res.Library, f.Ops, sp.reps())
			}
			if rg.Delay > 0 && (res.Requests == nil || *res.Requests <= 0) {
				t.Errorf("%s %s, latency: requests per op %v", res.Label, res.Library, res.Requests)
			}
			if rg.Delay > 0 && sp.Workload == wManyLocks && (res.RequestsAcquire == nil || *res.RequestsAcquire <= 0 ||
				res.RequestsRelease == nil || *res.RequestsRelease <= 0) {
				t.Errorf("%s %s, latency: requests per acquire %v, per release %v", res.Label, res.Library, res.RequestsAcquire, res.RequestsRelease)
			}
		}
	}
}

func TestSmokeGoLibraries(t *testing.T) {
	t.Parallel()
	e := smokeEnv(t)
	for _, lib := range []library{newZklockLib(smokeSession), newZKLib(smokeSession)} {
		runAll(t, e, lib, loopback)
		runAll(t, e, lib, latency)
	}
}

// curatorOrSkip returns the Curator library, or skips t (fails it when CI
// is set) if Java or Curator is missing.
func curatorOrSkip(t *testing.T, e *env) *curatorLib {
	t.Helper()
	c, err := newCuratorLib(smokeSession, e.logDir)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Curator harness (CI is set, so this fails instead of skipping): %v", err)
		}
		t.Skipf("Curator harness: %v", err)
	}
	return c
}

func TestSmokeCurator(t *testing.T) {
	t.Parallel()
	e := smokeEnv(t)
	c := curatorOrSkip(t, e)
	runAll(t, e, c, latency) // the harness's connect string is the proxy's
	if c.versions == "" {
		t.Error("the harness reported no versions")
	}
	testDNF(t, e, c, 4*time.Second) // time to start, connect and queue
	testCancel(t, e, c)
}

// testCancel interrupts a long contended run once it is under way and
// checks that it stops promptly.
func testCancel(t *testing.T, e *env, lib library) {
	t.Helper()
	sp := spec{Workload: wContended, C: 2, Dur: time.Minute, Warmup: 1}
	sp.Path, sp.WarmPath = e.paths("cancel", lib.name())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cancelledAt time.Time
	ph := func(_ context.Context, phase string) error {
		if phase == phaseReady {
			time.AfterFunc(500*time.Millisecond, func() { cancelledAt = time.Now(); cancel() })
		}
		return nil
	}
	_, err := lib.run(ctx, sp, endpoints{Servers: []string{e.server}, Gate: []string{e.server}}, ph)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%s: error %v, want one wrapping context.Canceled", lib.name(), err)
	} else if d := time.Since(cancelledAt); d > 10*time.Second {
		t.Errorf("%s: run returned %v after it was cancelled", lib.name(), d)
	}
	if err := e.cleanup(sp.Path); err != nil {
		t.Error(err)
	}
}

func TestDNFIsBounded(t *testing.T) {
	t.Parallel()
	e := smokeEnv(t)
	for _, lib := range []library{newZklockLib(smokeSession), newZKLib(smokeSession)} {
		testDNF(t, e, lib, 1500*time.Millisecond)
		testCancel(t, e, lib)
	}
}

// testDNF runs a handoff whose phaser never sees the queue (it waits for
// the end of the time limit), and checks that the run reports a DNF soon
// after the limit, having closed its sessions and left no node.
func testDNF(t *testing.T, e *env, lib library, limit time.Duration) {
	t.Helper()
	sp := spec{Workload: wHandoff, N: 2, Warmup: 1}
	sp.Path, sp.WarmPath = e.paths("dnf", lib.name())
	stall := func(ctx context.Context, phase string) error {
		if phase == phaseQueued {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	_, err := lib.run(ctx, sp, endpoints{Servers: []string{e.server}, Gate: []string{e.server}}, stall)
	if !errors.Is(err, errDNF) {
		t.Errorf("%s: error %v, want a DNF", lib.name(), err)
	}
	if d := time.Since(start); d > limit+20*time.Second {
		t.Errorf("%s: DNF reported after %v", lib.name(), d)
	}
	left, err := zktest.Ephemerals(e.ctl.c, sp.Path)
	if err != nil || len(left) > 0 {
		t.Errorf("%s: nodes left after a DNF: %v (%v)", lib.name(), left, err)
	}
	if err := e.cleanup(sp.Path); err != nil {
		t.Error(err)
	}
}

func TestSmokeRoundTrips(t *testing.T) {
	t.Parallel()
	e := smokeEnv(t)
	cfg := config{Limit: smokeLimit, Sizes: sizes{RTPairs: 5, RTHandoff: []int{3}, RTFailover: []int{3}, RTFailovers: 2, RTManyLocks: 5}}
	for _, rg := range []regime{loopback, latency} {
		rows := roundTrips(context.Background(), e, cfg, rg, []library{newZKLib(smokeSession), newZklockLib(smokeSession)}, quiet())
		checkRoundTrips(t, rg, rows)
	}
}

// checkRoundTrips checks the rows of a counting pass in regime rg.
func checkRoundTrips(t *testing.T, rg regime, rows []rtRow) {
	t.Helper()
	byWhat := make(map[string]rtRow)
	for _, r := range rows {
		if r.Error != "" {
			t.Fatalf("%s: %s %s: %s", rg.Name, r.What, r.Library, r.Error)
		}
		if r.Regime != rg.Name {
			t.Errorf("%s: row of regime %q", rg.Name, r.Regime)
		}
		byWhat[r.Library+" "+r.What] = r
	}
	// go-zookeeper's requests are known exactly.
	for what, want := range map[string]float64{
		"zk floor pair":                            2, // create, delete
		"zk uncontended pair":                      3, // create, getChildren, delete
		"zk handoff W=3: gate release":             1, // delete
		"zk handoff W=3: per woken waiter":         2, // getChildren, delete
		"zk handoff W=3: queueing, per waiter":     3, // create, getChildren, getData
		"zk manylocks N=5: acquire, per lock":      2, // create, getChildren: the parents exist
		"zk manylocks N=5: release, per lock":      1, // delete
		"zklock manylocks N=5: acquire, per lock":  -1,
		"zklock manylocks N=5: release, per lock":  -1,
		"zklock handoff W=3: gate release":         1,
		"zklock uncontended pair":                  -1, // any, but some
		"zklock handoff W=3: queueing, per waiter": -1,
		"zklock failover P=3 resign: per failover": -1,
		"zklock failover P=3 resign: rejoin":       -1,
		"zklock failover P=3 close: per failover":  -1,
		"zklock failover P=3 close: rejoin":        -1,
	} {
		r, ok := byWhat[what]
		if !ok {
			t.Errorf("%s: no row %q", rg.Name, what)
			continue
		}
		if (want >= 0 && r.Total != want) || (want < 0 && r.Total <= 0) {
			t.Errorf("%s: %s: %v requests (%v), want %v", rg.Name, what, r.Total, r.ByOp, want)
		}
	}
}

// TestSmokeMemory is not parallel: it counts the process's goroutines.
func TestSmokeMemory(t *testing.T) {
	e := smokeEnv(t)
	for _, g := range []*goLib{newZklockLib(smokeSession), newZKLib(smokeSession)} {
		row := poolMemory(context.Background(), e, g, memSpec{Waiters: 20, Sessions: 4, Settle: 100 * time.Millisecond, Limit: smokeLimit}, quiet())
		if row.Error != "" || row.GoroutinesPerWaiter < 0.5 || row.Waiters != 20 {
			t.Errorf("%s: %+v", g.lib, row)
		}
	}
	row := poolMemory(context.Background(), e, newZklockLib(smokeSession),
		memSpec{Waiters: 20, Sessions: 4, Never: true, Settle: 100 * time.Millisecond, Limit: smokeLimit}, quiet())
	if row.Error != "" {
		t.Errorf("zklock, a context that never ends: %+v", row)
	}
}

// TestSmokeManyLocksGoroutines is not parallel: it counts the process's
// goroutines. zk.Lock keeps nothing per hold, so its figure shows what the
// measurement itself adds (nothing); zklock's only has to be there.
func TestSmokeManyLocksGoroutines(t *testing.T) {
	e := smokeEnv(t)
	for _, lib := range []*goLib{newZKLib(smokeSession), newZklockLib(smokeSession)} {
		sp := spec{Workload: wManyLocks, N: 50, G: 4, Warmup: 2}
		res := runOne(context.Background(), e, lib, sp, loopback, 0, smokeLimit, quiet())
		checkResult(t, res)
		if f := res.Figures; lib.lib == libZK && f != nil && f.TasksPerHold != nil && *f.TasksPerHold >= 0.1 {
			t.Errorf("zk.Lock: %.2f goroutines per hold, want none", *f.TasksPerHold)
		}
	}
}

func TestSessionCount(t *testing.T) {
	t.Parallel()
	e := smokeEnv(t)
	n, err := e.sessions(context.Background())
	if err != nil || n < 1 {
		t.Errorf("sessions = %d, %v; want at least the controller's", n, err)
	}
}
