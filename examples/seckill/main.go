// Command seckill is the flash-sale ("seckill") oversell scenario: a stock
// of 100 items kept in ZooKeeper and 1500 buyers spread over several
// sessions, all trying to buy at once.
//
//   - Without a lock, buyers check the stock, pay, and take an item; many
//     pass the check before anyone takes an item, so more than 100 are sold
//     and the stock goes negative.
//   - With a zklock Mutex around check-and-take, exactly 100 are sold.
//   - With a zklock Semaphore limiting concurrent checkouts to a few, and a
//     versioned write of the stock, exactly 100 are sold too.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/seckill [-zk host:port,...] [-stock 100] [-buyers 1500] [-sessions 10] [-leases 5]
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-zookeeper/zk"
)

// config is the size of the sale.
type config struct {
	stock    int // items for sale
	buyers   int // buyers, each trying to buy one item
	sessions int // ZooKeeper sessions the buyers are spread over
	leases   int // concurrent checkouts in the semaphore phase
}

func main() {
	var cfg config
	flag.IntVar(&cfg.stock, "stock", 100, "items for sale")
	flag.IntVar(&cfg.buyers, "buyers", 1500, "buyers, each trying to buy one item")
	flag.IntVar(&cfg.sessions, "sessions", 10, "ZooKeeper sessions the buyers are spread over")
	flag.IntVar(&cfg.leases, "leases", 5, "concurrent checkouts allowed by the semaphore")
	servers := flag.String("zk", cmp.Or(os.Getenv("ZK_SERVERS"), "127.0.0.1:2181"),
		"ZooKeeper servers, host:port,... (ZK_SERVERS if set)")
	flag.Parse()
	err := run(context.Background(), os.Stdout, []string{*servers}, cfg)
	if errors.Is(err, zk.ErrNoServer) {
		err = fmt.Errorf("cannot reach ZooKeeper at %s (start one with `zklock dev`, or name yours with -zk or ZK_SERVERS): %w", *servers, err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}

// run sells cfg.stock items to cfg.buyers buyers three times: without a
// lock, with a Mutex, and with a Semaphore, and prints what happened.
func run(ctx context.Context, out io.Writer, servers []string, cfg config) error {
	if cfg.stock < 1 || cfg.buyers < 1 || cfg.sessions < 1 || cfg.leases < 1 {
		return fmt.Errorf("seckill: stock, buyers, sessions and leases must be positive")
	}
	s, err := newSale(servers, cfg)
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintf(out, "%d items, %d buyers over %d sessions\n\n", cfg.stock, cfg.buyers, cfg.sessions)
	var results []result
	for _, p := range s.phases() {
		r, err := s.runPhase(ctx, out, p)
		if err != nil {
			return fmt.Errorf("seckill: %s: %w", p.name, err)
		}
		results = append(results, r)
	}
	printSummary(out, cfg, results)
	return nil
}
