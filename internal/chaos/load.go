package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// loadConfig sets up the load phase.
type loadConfig struct {
	waiters  int // goroutines that each acquire the lock once
	sessions int // sessions they are spread over
}

// loadReport is the outcome of the load phase.
type loadReport struct {
	cfg          loadConfig
	elapsed      time.Duration
	served       int64 // waiters that held the lock (each once)
	retried      int64 // acquires that failed and were made again
	lost         int64 // holds lost (signalled) during the leader kill
	killedAt     int64 // waiters served when the leader was killed
	heapPerW     float64
	goroutPerW   float64
	queued       int // nodes in the queue when it was full
	verdict      verdict
	orphansOpen  []string
	orphansAfter []string
	divergence   []string // nodes left on a minority of the servers only
}

const loadPath = root + "/load"

// loadRun is the state of the load phase.
type loadRun struct {
	cfg     config
	load    loadConfig
	cluster zktest.Cluster
	admin   *zk.Conn
	clients []*zklock.Client
	rep     *loadReport
	j       journal
}

// runLoad queues cfg.waiters waiters behind a gate holder, measures what
// they cost, lets them through one by one, and kills the leader when a
// third have been served. Every waiter must be served exactly once, with
// no overlap, and nothing may be left behind.
func runLoad(ctx context.Context, cfg config, load loadConfig, cluster zktest.Cluster, admin *zk.Conn) (*loadReport, error) {
	l := &loadRun{cfg: cfg, load: load, cluster: cluster, admin: admin, rep: &loadReport{cfg: load}}
	start := time.Now()
	defer func() { l.rep.elapsed = time.Since(start) }()
	logf(cfg, "load: %d waiters over %d sessions", load.waiters, load.sessions)
	err := l.run(ctx)
	for _, c := range l.clients {
		err = errors.Join(err, c.Close())
	}
	l.rep.orphansAfter = l.left()
	l.rep.verdict = l.j.check(0)
	return l.rep, err
}

func (l *loadRun) run(ctx context.Context) error {
	for i := 0; i < l.load.sessions; i++ {
		c, err := zklock.Connect(l.cluster.Servers(), zklock.WithSessionTimeout(15*time.Second),
			zklock.WithConnectTimeout(time.Minute))
		if err != nil {
			return err
		}
		l.clients = append(l.clients, c)
	}
	gate, err := zklock.NewMutex(l.clients[0], loadPath)
	if err != nil {
		return err
	}
	g, err := gate.Acquire(ctx)
	if err != nil {
		return err
	}
	h0, n0 := heapInUse(), runtime.NumGoroutine()
	var served atomic.Int64
	wg := l.spawn(ctx, &served)
	err = l.measure(ctx, h0, n0)
	err = errors.Join(err, gate.Release(g))
	if err == nil {
		err = l.killLeaderAt(ctx, &served, int64(l.load.waiters/3))
	}
	wg.Wait()
	l.rep.served = served.Load()
	if l.rep.served != int64(l.load.waiters) {
		err = errors.Join(err, fmt.Errorf("%d of %d waiters served", l.rep.served, l.load.waiters))
	}
	l.rep.orphansOpen = l.left()
	return err
}

// left lists the nodes left in the load's queue that the ensemble holds,
// and adds those only a minority of its servers hold to the report's
// divergence.
func (l *loadRun) left() []string {
	nodes, err := zktest.Ephemerals(l.admin, loadPath)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", loadPath, err)}
	}
	orphans, div := sortLeft(l.cluster.Servers(), nodes, func(n, answers string) string {
		return fmt.Sprintf("%s (on servers %s)", n, answers)
	})
	l.rep.divergence = merge(l.rep.divergence, div)
	return orphans
}

// spawn starts the waiters: each acquires once (again after a failure),
// records its section and releases.
func (l *loadRun) spawn(ctx context.Context, served *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < l.load.waiters; i++ {
		m, err := zklock.NewMutex(l.clients[i%len(l.clients)], loadPath)
		if err != nil {
			l.j.problem("waiter %d: %v", i, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.waiter(ctx, i, m, served)
		}()
	}
	return &wg
}

func (l *loadRun) waiter(ctx context.Context, i int, m *zklock.Mutex, served *atomic.Int64) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx) // a context of its own: a new participant
		h, err := m.Acquire(wctx)
		if err != nil {
			cancel()
			atomic.AddInt64(&l.rep.retried, 1)
			continue
		}
		token, _ := m.Token(h)
		s := section{kind: kindMutex, who: fmt.Sprintf("load/w%04d", i), token: token, start: time.Now()}
		s.end = time.Now()
		lostAt := make(chan time.Time, 1)
		context.AfterFunc(h, func() { lostAt <- time.Now() })
		err = m.Release(h)
		if errors.Is(err, zklock.ErrLockLost) {
			s.lost = <-lostAt
			atomic.AddInt64(&l.rep.lost, 1)
		}
		cancel()
		l.j.add(s)
		served.Add(1)
		return
	}
}

// measure waits until every waiter is queued, then records the memory and
// goroutines each costs.
func (l *loadRun) measure(ctx context.Context, h0 uint64, n0 int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		kids, _, err := l.admin.Children(loadPath)
		if err == nil && len(kids) >= l.load.waiters+1 {
			l.rep.queued = len(kids)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("only %d of %d waiters queued", len(kids), l.load.waiters)
		}
		time.Sleep(100 * time.Millisecond) // polling the queue's size
	}
	w := float64(l.load.waiters)
	l.rep.heapPerW = float64(heapInUse()-min(h0, heapInUse())) / w
	l.rep.goroutPerW = float64(runtime.NumGoroutine()-n0) / w
	logf(l.cfg, "load: %d waiters queued: %.0f bytes and %.2f goroutines each", l.load.waiters, l.rep.heapPerW, l.rep.goroutPerW)
	return nil
}

// killLeaderAt kills the leader once n waiters have been served, and
// restarts it.
func (l *loadRun) killLeaderAt(ctx context.Context, served *atomic.Int64, n int64) error {
	for served.Load() < n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(10 * time.Millisecond) // polling a counter
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	i, err := zktest.Leader(lctx, l.cluster)
	if err != nil {
		return err
	}
	l.rep.killedAt = served.Load()
	logf(l.cfg, "load: %d served; killing the leader (server %d)", l.rep.killedAt, i)
	if err := l.cluster.Kill(i); err != nil {
		return err
	}
	pause(ctx, 2*time.Second)
	return l.cluster.Start(i)
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func (r *loadReport) clean() bool {
	return len(r.verdict.violations) == 0 && len(r.orphansOpen) == 0 && len(r.orphansAfter) == 0 &&
		r.served == int64(r.cfg.waiters)
}

func (r *loadReport) print(w io.Writer) {
	fmt.Fprintf(w, "\nload: %d waiters over %d sessions, %d queued at once; served %d (each once) in %v; leader killed after %d\n",
		r.cfg.waiters, r.cfg.sessions, r.queued, r.served, r.elapsed.Round(time.Second), r.killedAt)
	fmt.Fprintf(w, "load: per queued waiter %.0f bytes of heap and %.2f goroutines; acquires made again %d; holds lost %d\n",
		r.heapPerW, r.goroutPerW, r.retried, r.lost)
	fmt.Fprintf(w, "load: violations %d, orphans %d with the sessions open, %d after\n",
		len(r.verdict.violations), len(r.orphansOpen), len(r.orphansAfter))
	for _, v := range r.verdict.violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	for _, o := range append(r.orphansOpen, r.orphansAfter...) {
		fmt.Fprintf(w, "  %s\n", o)
	}
}
