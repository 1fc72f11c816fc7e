// Command multilock moves money between two accounts kept in ZooKeeper,
// in both directions at once (A→B and B→A, many times, from several
// sessions), each transfer holding a zklock MultiLock over both accounts'
// locks. The MultiLock takes the locks in sorted path order whichever way
// the money goes, so opposite transfers never deadlock, and since each
// transfer reads and writes both balances under both locks, the total is
// conserved. Each transfer writes both balances with Hold.Multi: one
// transaction that commits only while both lock nodes exist.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/multilock [-zk host:port,...]
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
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
)

const (
	root      = "/examples/multilock"
	sessions  = 4   // each runs one A→B and one B→A worker
	transfers = 10  // per worker
	amount    = 7   // per transfer
	opening   = 100 // each account's opening balance
	deadline  = 30 * time.Second
)

// account is a balance node and the path of its lock.
type account struct{ name, balance, lock string }

var accounts = map[string]account{
	"A": {"A", root + "/accounts/A", root + "/locks/A"},
	"B": {"B", root + "/accounts/B", root + "/locks/B"},
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
		fmt.Fprintln(os.Stderr, "multilock:", err)
		os.Exit(1)
	}
}

// run opens both accounts, runs the transfers, and fails if the total is
// not conserved or the transfers did not finish within the deadline (a
// deadlock).
func run(ctx context.Context, out io.Writer, servers []string) error {
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer cleanup(admin, root) // after the sessions close
	for _, a := range accounts {
		if err := put(ctx, admin, a.balance, strconv.Itoa(opening)); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "A and B open with %d each; %d sessions each run %d transfers A→B and %d B→A of %d\n",
		opening, sessions, transfers, transfers, amount)
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	done, err := transferAll(ctx, servers)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("VIOLATED: transfers still blocked after %v (deadlock?): %w", deadline, err)
		}
		return err
	}
	a, errA := balance(ctx, admin, accounts["A"])
	b, errB := balance(ctx, admin, accounts["B"])
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d transfers done, no deadlock; A=%d B=%d total=%d (opened with %d)\n", done, a, b, a+b, 2*opening)
	if a+b != 2*opening {
		return fmt.Errorf("VIOLATED: total %d, expected %d", a+b, 2*opening)
	}
	return nil
}

// transferAll runs every worker and returns how many transfers were done.
func transferAll(ctx context.Context, servers []string) (int, error) {
	var wg sync.WaitGroup
	results := make(chan error, 2*sessions*transfers)
	for range sessions {
		c, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
		if err != nil {
			return 0, err
		}
		defer c.Close()
		for _, dir := range [][2]string{{"A", "B"}, {"B", "A"}} {
			from, to := accounts[dir[0]], accounts[dir[1]]
			// Locks listed in transfer order; NewMultiLockPaths sorts them.
			ml, err := zklock.NewMultiLockPaths(c, from.lock, to.lock)
			if err != nil {
				return 0, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range transfers {
					results <- transfer(ctx, c, ml, from, to)
				}
			}()
		}
	}
	wg.Wait()
	close(results)
	var errs []error
	done := 0
	for err := range results {
		if err == nil {
			done++
		}
		errs = append(errs, err)
	}
	return done, errors.Join(errs...)
}

// transfer moves amount from one account to the other under both locks: a
// read-modify-write of each balance that, without the locks, would lose
// updates. The Hold releases both locks, and its Release's error (a lost
// lock) is returned with the rest.
func transfer(ctx context.Context, c *zklock.Client, ml *zklock.MultiLock, from, to account) (err error) {
	hold, err := ml.Lock(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, hold.Release()) }()
	f, err := balance(ctx, c, from)
	if err != nil {
		return err
	}
	t, err := balance(ctx, c, to)
	if err != nil {
		return err
	}
	// Both balances in one transaction behind a check of both lock nodes:
	// it commits only while the transfer holds both locks.
	_, err = hold.Multi(ctx,
		&zk.SetDataRequest{Path: from.balance, Data: []byte(strconv.Itoa(f - amount)), Version: -1},
		&zk.SetDataRequest{Path: to.balance, Data: []byte(strconv.Itoa(t + amount)), Version: -1})
	return err
}

// balance reads an account's balance.
func balance(ctx context.Context, c *zklock.Client, a account) (int, error) {
	data, _, err := c.Get(ctx, a.balance)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", a.name, err)
	}
	return strconv.Atoi(string(data))
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

// put sets the node at p to value, creating it, and its missing
// ancestors through Client.EnsurePath, if needed.
func put(ctx context.Context, c *zklock.Client, p, value string) error {
	_, err := c.Set(ctx, p, []byte(value), -1)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if err := c.EnsurePath(ctx, path.Dir(p)); err != nil {
		return err
	}
	_, err = c.Create(ctx, p, []byte(value), 0)
	return err
}
