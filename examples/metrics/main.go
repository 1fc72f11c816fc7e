// Command metrics exports zklock's lock events as Prometheus metrics with
// the zklockprom adapter (a module of its own, so the library's users
// inherit nothing from client_golang): a Collector registered with a
// registry, and its Observe passed to every Client (zklock.WithObserver).
// It runs a small workload (contended locking, a busy TryLock, a Lock
// that times out, one revocation, one lost hold), prints the metrics in
// the Prometheus text exposition format, and checks that they count what
// was done. The series are labelled by recipe and outcome, not by lock
// path: a service with a lock per job keeps a handful of series.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one. It is a module of its own:
//
//	cd examples/metrics && go run . [-zk host:port,...]
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zklockprom"
)

const (
	root      = "/examples/metrics"
	orders    = root + "/orders"    // contended: every session takes it in turn
	report    = root + "/report"    // held by one session while another tries it
	revocable = root + "/revocable" // held, then revoked
	fragile   = root + "/fragile"   // held, then lost: its node is deleted
	sessions  = 3
	turns     = 4 // per session, on orders
	waitLimit = 10 * time.Second
)

// tally is what the workload did, to check the metrics against.
type tally struct {
	acquired, released, lost, revoked, busy, timedOut int
}

// events returns how many events the workload makes the Observers see:
// a start and an outcome per acquire, an end per hold, and the revocation
// requests.
func (t tally) events() int {
	return 2*(t.acquired+t.busy+t.timedOut) + t.released + t.lost + t.revoked
}

func main() {
	servers := flag.String("zk", cmp.Or(os.Getenv("ZK_SERVERS"), "127.0.0.1:2181"),
		"ZooKeeper servers, host:port,... (ZK_SERVERS if set)")
	flag.Parse()
	err := run(context.Background(), os.Stdout, []string{*servers})
	if errors.Is(err, zk.ErrNoServer) {
		err = fmt.Errorf("cannot reach ZooKeeper at %s (start one with `zklock dev`, or name yours with -zk or ZK_SERVERS): %w", *servers, err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

// run runs the workload on sessions that report to one set of metrics,
// waits until the Observers have seen every event, and prints the metrics.
func run(ctx context.Context, out io.Writer, servers []string) error {
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer cleanup(admin, root) // after the sessions close
	col := zklockprom.New(zklockprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(col); err != nil {
		return err
	}
	// Observers run on goroutines of their own: count what they saw, to
	// wait for them before reading the metrics.
	var seen atomic.Int64
	more := make(chan struct{}, 1)
	observe := func(ev zklock.Event) {
		col.Observe(ev)
		seen.Add(int64(1 + ev.Dropped))
		select {
		case more <- struct{}{}:
		default:
		}
	}
	clients := make([]*zklock.Client, sessions)
	for i := range clients {
		clients[i], err = zklock.Connect(servers, zklock.WithObserver(observe))
		if err != nil {
			return err
		}
		defer clients[i].Close()
	}
	did, err := workload(ctx, out, admin, clients)
	if err != nil {
		return err
	}
	for deadline := time.After(waitLimit); seen.Load() < int64(did.events()); {
		select {
		case <-more:
		case <-deadline:
			return fmt.Errorf("the Observers saw %d events in %v, expected %d", seen.Load(), waitLimit, did.events())
		}
	}
	fmt.Fprintf(out, "did: %d acquisitions, %d releases, %d loss, %d revocation request, %d busy, %d timed out\n\n",
		did.acquired, did.released, did.lost, did.revoked, did.busy, did.timedOut)
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range families {
		if _, err := expfmt.MetricFamilyToText(out, mf); err != nil {
			return err
		}
	}
	if err := check(families, did); err != nil {
		return fmt.Errorf("VIOLATED: the metrics differ from what was done: %w", err)
	}
	return nil
}

// workload runs the three scenarios and counts what they did.
func workload(ctx context.Context, out io.Writer, admin *zklock.Client, clients []*zklock.Client) (tally, error) {
	var did tally
	if err := contend(ctx, clients, &did); err != nil {
		return did, err
	}
	fmt.Fprintf(out, "contended: %d sessions took %s %d times each\n", len(clients), orders, turns)
	if err := busy(ctx, clients[0], clients[1], &did); err != nil {
		return did, err
	}
	fmt.Fprintf(out, "busy: a TryLock of %s found it held, and a Lock gave up at its deadline\n", report)
	if err := revoke(ctx, clients[0], clients[1], &did); err != nil {
		return did, err
	}
	fmt.Fprintf(out, "revoked: a hold of %s was asked to release, and did\n", revocable)
	if err := lose(ctx, admin, clients[2], &did); err != nil {
		return did, err
	}
	fmt.Fprintf(out, "lost: the node of a hold of %s was deleted by someone else\n", fragile)
	return did, nil
}

// contend has every session take orders turns times.
func contend(ctx context.Context, clients []*zklock.Client, did *tally) error {
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		mu, err := zklock.NewMutex(c, orders)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range turns {
				if errs[i] = mu.Do(ctx, func(context.Context) error {
					time.Sleep(2 * time.Millisecond) // the work
					return nil
				}); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	n := len(clients) * turns
	did.acquired += n
	did.released += n
	return errors.Join(errs...)
}

// busy has holder take report while other tries it, then waits for it
// with a deadline.
func busy(ctx context.Context, holder, other *zklock.Client, did *tally) error {
	mu, err := zklock.NewMutex(holder, report)
	if err != nil {
		return err
	}
	hold, err := mu.Lock(ctx)
	if err != nil {
		return err
	}
	defer hold.Release()
	did.acquired++
	theirs, err := zklock.NewMutex(other, report)
	if err != nil {
		return err
	}
	if _, err := theirs.TryLock(ctx); !errors.Is(err, zklock.ErrLocked) {
		return fmt.Errorf("TryLock of a held lock: want ErrLocked, got %v", err)
	}
	did.busy++
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := theirs.Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("a Lock of a held lock: want its deadline, got %v", err)
	}
	did.timedOut++
	did.released++
	return hold.Release()
}

// revoke has holder take a revocable lock and asker revoke it.
func revoke(ctx context.Context, holder, asker *zklock.Client, did *tally) error {
	mu, err := zklock.NewMutex(holder, revocable)
	if err != nil {
		return err
	}
	asked := make(chan struct{}, 1)
	mu.MakeRevocable(func(*zklock.Mutex) {
		select {
		case asked <- struct{}{}:
		default:
		}
	})
	hold, err := mu.Lock(ctx)
	if err != nil {
		return err
	}
	defer hold.Release() // on an early return; a no-op after the release below
	did.acquired++
	if err := zklock.Revoke(ctx, asker, hold.Path()); err != nil {
		return err
	}
	select {
	case <-asked:
		did.revoked++
	case <-time.After(waitLimit):
		return errors.New("the revocation request never arrived")
	}
	did.released++
	return hold.Release()
}

// lose has holder take a lock whose node admin then deletes.
func lose(ctx context.Context, admin, holder *zklock.Client, did *tally) error {
	mu, err := zklock.NewMutex(holder, fragile)
	if err != nil {
		return err
	}
	hold, err := mu.Lock(ctx)
	if err != nil {
		return err
	}
	defer hold.Release() // on an early return; a no-op after the release below
	did.acquired++
	if err := admin.Delete(ctx, hold.Path(), -1); err != nil {
		return err
	}
	select {
	case <-hold.Done():
		did.lost++
	case <-time.After(waitLimit):
		return errors.New("the deleted hold was not lost")
	}
	if err := hold.Release(); !errors.Is(err, zklock.ErrLockLost) {
		return fmt.Errorf("release of a lost hold: want ErrLockLost, got %v", err)
	}
	return nil
}

// check compares the gathered metrics with what was done.
func check(families []*dto.MetricFamily, did tally) error {
	count := func(name string, labels ...string) float64 {
		for _, mf := range families {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				if !hasLabels(m, labels) {
					continue
				}
				switch {
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	var errs []error
	for _, c := range []struct {
		got  float64
		want int
		what string
	}{
		{count("zklock_acquire_wait_seconds", "recipe", "mutex", "outcome", "acquired"), did.acquired, "acquisitions"},
		{count("zklock_acquire_wait_seconds", "recipe", "mutex", "outcome", "busy"), did.busy, "busy Trys"},
		{count("zklock_acquire_wait_seconds", "recipe", "mutex", "outcome", "timeout"), did.timedOut, "timeouts"},
		{count("zklock_hold_seconds", "recipe", "mutex", "outcome", "released"), did.released, "releases"},
		{count("zklock_hold_seconds", "recipe", "mutex", "outcome", "deleted"), did.lost, "losses"},
		{count("zklock_revocations_requested_total", "recipe", "mutex"), did.revoked, "revocation requests"},
		{count("zklock_holds", "recipe", "mutex"), 0, "holds standing"},
		{count("zklock_acquires_pending", "recipe", "mutex"), 0, "acquires pending"},
		{count("zklock_observer_dropped_events_total"), 0, "dropped events"},
	} {
		if c.got != float64(c.want) {
			errs = append(errs, fmt.Errorf("%s: the metrics say %v, the workload did %d", c.what, c.got, c.want))
		}
	}
	return errors.Join(errs...)
}

// hasLabels reports whether m has the label pairs kv (name, value, ...).
func hasLabels(m *dto.Metric, kv []string) bool {
	for i := 0; i < len(kv); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// cleanup deletes tree and everything under it, then each ancestor of
// tree that is left empty, so that the example leaves nothing behind. It
// runs after the example's context may have ended: it has a bound of its
// own.
func cleanup(c *zklock.Client, tree string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := deleteTree(ctx, c, tree); err != nil {
		return err
	}
	for p := path.Dir(tree); p != "/"; p = path.Dir(p) {
		err := c.Delete(ctx, p, -1)
		if errors.Is(err, zk.ErrNotEmpty) {
			return nil
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// deleteTree deletes p and everything under it.
func deleteTree(ctx context.Context, c *zklock.Client, p string) error {
	children, _, err := c.Children(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := deleteTree(ctx, c, path.Join(p, child)); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}
