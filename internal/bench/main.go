// Command bench measures zklock against Apache Curator 5.4 and
// go-zookeeper's zk.Lock on the workloads of BENCHMARKS.md, side by side
// against one real ZooKeeper server that it starts itself (through
// internal/zktest), and prints the figures, zklock's ratios, the round
// trips per operation and the memory per queued waiter:
//
//	go run ./internal/bench [-quick] [-tmpfs] [-workloads ...] [-libs ...]
//
// See README.md in this directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// main runs the tool and exits with its status.
func main() {
	os.Exit(mainCode())
}

// mainCode runs the tool and returns the process's exit code.
func mainCode() int {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if v := os.Getenv("ZK_SERVERS"); v != "" {
		// The tool measures a server of its own, whose storage it knows.
		fmt.Fprintf(os.Stderr, "bench: ignoring ZK_SERVERS=%s: starting a server of its own\n", v)
		os.Unsetenv("ZK_SERVERS")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, newProgress(os.Stderr)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}
