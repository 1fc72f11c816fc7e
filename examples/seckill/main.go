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
// It uses the ensemble in ZK_SERVERS (comma-separated host:port), or starts
// a throwaway ZooKeeper server when ZK_SERVERS is unset.
//
//	go run ./examples/seckill [-stock 100] [-buyers 1500] [-sessions 10]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/zklock/zklock/internal/exampleenv"
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
	flag.Parse()
	exampleenv.Main(func(ctx context.Context, out io.Writer, servers []string) error {
		return run(ctx, out, servers, cfg)
	})
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
