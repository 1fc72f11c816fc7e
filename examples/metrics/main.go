// Command metrics turns zklock's lock events into Prometheus-style
// metrics with an Observer (zklock.WithObserver), using the standard
// library only: counters of acquisitions, releases, losses, revocation
// requests and background-delete retries, and histograms of wait and hold
// times. It runs a small workload (contended locking, one revocation, one
// lost hold) and prints the metrics in the Prometheus text exposition
// format.
//
// It uses the ensemble in ZK_SERVERS (comma-separated host:port), or starts
// a throwaway ZooKeeper server when ZK_SERVERS is unset.
//
//	go run ./examples/metrics
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/exampleenv"
)

const (
	root      = "/examples/metrics"
	orders    = root + "/orders"    // contended: every session takes it in turn
	revocable = root + "/revocable" // held, then revoked
	fragile   = root + "/fragile"   // held, then lost: its node is deleted
	sessions  = 3
	turns     = 4 // per session, on orders
	waitLimit = 10 * time.Second
)

// tally is what the workload did, to check the metrics against.
type tally struct {
	acquired, released, lost, revoked int
}

// events returns how many events the workload makes the Observers see:
// one started and one acquired per acquisition, one per release, loss and
// revocation request.
func (t tally) events() int { return 2*t.acquired + t.released + t.lost + t.revoked }

func main() { exampleenv.Main(run) }

// run runs the workload on sessions that report to one set of metrics,
// waits until the Observers have seen every event, and prints the metrics.
func run(ctx context.Context, out io.Writer, servers []string) error {
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer exampleenv.Cleanup(admin.Conn(), root) // after the sessions close
	m := newMetrics()
	clients := make([]*zklock.Client, sessions)
	for i := range clients {
		clients[i], err = zklock.Connect(servers, zklock.WithObserver(m.observe))
		if err != nil {
			return err
		}
		defer clients[i].Close()
	}
	did, err := workload(ctx, out, admin, clients)
	if err != nil {
		return err
	}
	// Observers run on goroutines of their own: wait for them to catch
	// up before reading the metrics (and before closing the Clients).
	if err := m.waitEvents(did.events(), waitLimit); err != nil {
		return err
	}
	fmt.Fprintf(out, "did: %d acquisitions, %d releases, %d loss, %d revocation request\n\n",
		did.acquired, did.released, did.lost, did.revoked)
	m.write(out)
	if err := m.check(did); err != nil {
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
	if err := admin.Conn().Delete(hold.Path(), -1); err != nil {
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
