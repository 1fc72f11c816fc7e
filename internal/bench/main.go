// Command bench measures zklock against Apache Curator 5.4 and
// go-zookeeper's zk.Lock on the workloads of BENCHMARKS.md (the locks, and
// a leader's failover: Election against LeaderLatch) and on many locks
// held at once by one session (issue 27), side by side
// against one real ZooKeeper server that it starts itself (through
// internal/zktest) with Java's defaults and a 1 GB heap. It warms the
// server with every library, runs every workload for several rounds with
// the libraries' order rotated, on loopback and through a fixed delay
// each way, and prints the medians and spreads of the figures and of
// zklock's ratios, BENCHMARKS.md's targets met or missed, the requests
// per operation and the memory per queued waiter:
//
//	go run ./internal/bench [-quick] [-tmpfs] [-regime loopback|latency|both]
//		[-delay 1ms] [-rounds 3] [-server-jvm default|test] [-workloads ...] [-libs ...]
//		[-handoff W,...] [-failover P,...] [-manylocks N,...] [-manylocks-g G,...]
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
	"runtime/pprof"
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
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: cpuprofile:", err)
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, newProgress(os.Stderr)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}
