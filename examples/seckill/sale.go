package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
)

// root is where the sale keeps its stock and locks.
const root = "/examples/seckill"

// payment is how long a buyer takes to pay: the window in which, without a
// lock, other buyers see the stock before it goes down.
const payment = time.Millisecond

// sale is the shop: the sessions the buyers use and the size of the sale.
type sale struct {
	cfg     config
	clients []*zklock.Client
}

// phase is one way of selling: buy runs for every buyer, with the buyer's
// session, and reports whether it bought an item and how long it waited
// for a lock.
type phase struct {
	name string
	buy  func(ctx context.Context, c *zklock.Client, stock string) (bought bool, wait time.Duration, err error)
}

// result is what happened in one phase.
type result struct {
	name  string
	sold  int
	stock int             // left at the end; negative means oversold
	wall  time.Duration   // from the first buyer's start to the last one's end
	waits []time.Duration // lock waits, one per acquisition; empty without a lock
}

func newSale(servers []string, cfg config) (*sale, error) {
	s := &sale{cfg: cfg}
	for range cfg.sessions {
		c, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
		if err != nil {
			s.close()
			return nil, err
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

func (s *sale) close() {
	for _, c := range s.clients {
		c.Close()
	}
}

// phases returns the three ways of selling, in order.
func (s *sale) phases() []phase {
	return []phase{
		{"no lock", buyUnlocked},
		{"mutex", buyWithMutex},
		{"semaphore", s.buyWithSemaphore},
	}
}

// runPhase puts the stock in ZooKeeper, lets every buyer try at once with
// a progress bar, and reads what is left.
func (s *sale) runPhase(ctx context.Context, out io.Writer, p phase) (result, error) {
	admin := s.clients[0]
	stock := root + "/" + strings.ReplaceAll(p.name, " ", "-") + "/stock"
	if err := putStock(ctx, admin, stock, s.cfg.stock); err != nil {
		return result{}, err
	}
	defer deleteTree(admin, root)
	var (
		done, sold atomic.Int64
		mu         sync.Mutex
		waits      []time.Duration
		errs       []error
		wg         sync.WaitGroup
	)
	bar := startProgress(out, p.name, s.cfg.buyers, &done, &sold)
	start := time.Now()
	for i := range s.cfg.buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done.Add(1)
			bought, wait, err := p.buy(ctx, s.clients[i%len(s.clients)], stock)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if wait > 0 {
				waits = append(waits, wait)
			}
			if bought {
				sold.Add(1)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	bar()
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	left, _, err := readStock(ctx, admin, stock)
	return result{name: p.name, sold: int(sold.Load()), stock: left, wall: wall, waits: waits}, err
}

// buyUnlocked checks the stock, pays, and takes an item. The check and
// the take are not one step, so every buyer who passed the check while
// others were paying takes an item too.
func buyUnlocked(ctx context.Context, c *zklock.Client, stock string) (bool, time.Duration, error) {
	n, _, err := readStock(ctx, c, stock)
	if err != nil || n <= 0 {
		return false, 0, err
	}
	time.Sleep(payment)
	return true, 0, takeOne(ctx, c, stock)
}

// takeOne records one sale, whatever the stock: a sequential node under
// the stock node. A sale is one request that never conflicts, so buyers
// who passed the check all sell, at full speed.
func takeOne(ctx context.Context, c *zklock.Client, stock string) error {
	_, err := c.Create(ctx, stock+"/sale-", nil, zk.FlagSequence)
	return err
}

// buyWithMutex does what buyUnlocked does, holding a zklock Mutex.
func buyWithMutex(ctx context.Context, c *zklock.Client, stock string) (bool, time.Duration, error) {
	m, err := zklock.NewMutex(c, stock+"-lock")
	if err != nil {
		return false, 0, err
	}
	start := time.Now()
	var (
		bought bool
		wait   time.Duration
	)
	err = m.Do(ctx, func(ctx context.Context) error { // ctx ends with the hold
		wait = max(time.Since(start), time.Nanosecond)
		var err error
		bought, _, err = buyUnlocked(ctx, c, stock)
		return err
	})
	return bought, wait, err
}

// buyWithSemaphore lets a few buyers check out at once (a Semaphore of
// cfg.leases leases) and sells in one transaction, guarded by the buyer's
// lease (Hold.Multi), with a versioned write of the stock node, which
// fails if another buyer sold meanwhile; the buyer then looks again.
func (s *sale) buyWithSemaphore(ctx context.Context, c *zklock.Client, stock string) (bool, time.Duration, error) {
	sem, err := zklock.NewSemaphore(c, stock+"-checkout", s.cfg.leases)
	if err != nil {
		return false, 0, err
	}
	start := time.Now()
	lease, err := sem.Acquire(ctx)
	if err != nil {
		return false, 0, err
	}
	wait := max(time.Since(start), time.Nanosecond)
	defer lease.Release()
	for {
		n, version, err := readStock(ctx, c, stock)
		if err != nil || n <= 0 {
			return false, wait, err
		}
		time.Sleep(payment)
		_, err = lease.Hold().Multi(ctx,
			&zk.SetDataRequest{Path: stock, Data: []byte(strconv.Itoa(s.cfg.stock)), Version: version},
			&zk.CreateRequest{Path: stock + "/sale-", Flags: zk.FlagSequence},
		)
		if !errors.Is(err, zk.ErrBadVersion) {
			return err == nil, wait, err
		}
	}
}

// putStock creates the stock node (and its parents) with n items.
func putStock(ctx context.Context, c *zklock.Client, p string, n int) error {
	if err := c.EnsurePath(ctx, path.Dir(p)); err != nil {
		return err
	}
	_, err := c.Create(ctx, p, []byte(strconv.Itoa(n)), 0)
	return err
}

// readStock returns the stock left (the items put in stock less the sales
// recorded under the node) and the version of the node. A versioned write
// of the node, in one transaction with the sale, fails if another buyer
// sold meanwhile.
func readStock(ctx context.Context, c *zklock.Client, p string) (int, int32, error) {
	data, st, err := c.Get(ctx, p)
	if err != nil {
		return 0, 0, err
	}
	n, err := strconv.Atoi(string(data))
	return n - int(st.NumChildren), st.Version, err
}

// deleteTree deletes p and everything under it. It runs after the
// sale's context may have ended: it has a bound of its own.
func deleteTree(c *zklock.Client, p string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deleteUnder(ctx, c, p)
}

// deleteUnder deletes p and everything under it, as far as it can.
func deleteUnder(ctx context.Context, c *zklock.Client, p string) {
	children, _, err := c.Children(ctx, p)
	if err != nil {
		return
	}
	for _, ch := range children {
		deleteUnder(ctx, c, p+"/"+ch)
	}
	_ = c.Delete(ctx, p, -1)
}

// startProgress draws a progress bar on out until the returned function
// is called, which draws it one last time. If out is not a terminal (a CI
// log, a file), a bar redrawn with carriage returns would make one long
// line: there, startProgress draws nothing, and the returned function
// prints the final count alone, on a line of its own.
func startProgress(out io.Writer, name string, total int, done, sold *atomic.Int64) func() {
	if !isTerminal(out) {
		return func() {
			fmt.Fprintf(out, "  %-10s %4d/%d buyers, %4d sold\n", name, done.Load(), total, sold.Load())
		}
	}
	draw := func(end string) {
		d := int(done.Load())
		const width = 30
		filled := width * d / total
		fmt.Fprintf(out, "\r  %-10s [%s%s] %4d/%d buyers, %4d sold%s", name,
			strings.Repeat("#", filled), strings.Repeat(".", width-filled), d, total, sold.Load(), end)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				draw("")
			case <-stop:
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
		draw("\n")
	}
}

// isTerminal reports whether out is a terminal, as far as the standard
// library can tell: a character device. /dev/null is one too, where
// drawing costs nothing.
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printSummary prints one line per phase.
func printSummary(out io.Writer, cfg config, results []result) {
	fmt.Fprintf(out, "\n%-10s %6s %9s %12s %9s %9s %10s %10s\n",
		"phase", "sold", "oversold", "final stock", "wall", "acq/s", "p50 wait", "p99 wait")
	for _, r := range results {
		acq, p50, p99 := "-", "-", "-"
		if len(r.waits) > 0 {
			slices.Sort(r.waits)
			acq = fmt.Sprintf("%.0f", float64(len(r.waits))/r.wall.Seconds())
			p50 = r.waits[len(r.waits)/2].Round(time.Millisecond).String()
			p99 = r.waits[len(r.waits)*99/100].Round(time.Millisecond).String()
		}
		fmt.Fprintf(out, "%-10s %6d %9d %12d %9s %9s %10s %10s\n",
			r.name, r.sold, max(0, r.sold-cfg.stock), r.stock, r.wall.Round(time.Millisecond), acq, p50, p99)
	}
	fmt.Fprintln(out)
	for _, r := range results {
		if r.sold > cfg.stock || r.stock < 0 {
			fmt.Fprintf(out, "%s: OVERSOLD: %d items sold of %d, stock %d\n", r.name, r.sold, cfg.stock, r.stock)
		} else {
			fmt.Fprintf(out, "%s: correct: %d items sold of %d, stock %d\n", r.name, r.sold, cfg.stock, r.stock)
		}
	}
}
