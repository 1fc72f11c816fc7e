// Command chaos runs zklock's chaos suite: client sessions, each behind its
// own fault proxy, contend on a Mutex, a ReadWriteLock and a Semaphore on a
// real 3-node ZooKeeper ensemble, and a quarter of them campaign in an
// Election instead of taking the Mutex (and two take a second, solo
// Mutex in bursts, mostly alone, whose parent a reaper deletes whenever
// it is empty), while servers are killed and
// partitioned and sessions are paused and cut on a seeded random schedule,
// some faults aimed at the session of a current holder or leader (some
// keep their hold for one to two session timeouts, and in a quarter of the
// sessions a maximum hold time of one session timeout cuts those short)
// or of the next in the Mutex's or the Election's queue. A checker then asserts from the
// recorded critical sections, each lasting as long as its worker believed
// it held the lock or led (until it released or its hold's context ended),
// that no two holders overlapped and no two leaders (unless the earlier
// one had been told its hold was lost), that fencing tokens grow and stale
// guarded writes are refused, that the semaphore never had more than its
// leases out, that no reader held with a writer, and that nothing was left
// behind: no orphan node (lock, lease or latch), no goroutine. A node
// that only a minority of the servers hold is ZooKeeper's divergence, not
// an orphan: it is listed apart and does not fail the run. A load
// phase then queues thousands of waiters and kills the leader. The report
// says, per kind of fault, how many hit a holder, a waiter or an idle
// session, and per kind of section (leader included), how often faults
// struck its holders and paused the next in its queue.
//
// TestChaosTeeth runs it, built with the broken variants of the library
// in internal/mutants (one chosen at run time), and requires each
// to be caught.
//
//	go run ./internal/chaos -seed 42 -duration 10m
//
// It exits 1 if the checker found a violation, an orphan or a leak, and
// prints the seed, so that a failing schedule can be replayed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg, load := config{out: os.Stderr}, loadConfig{}
	flag.Uint64Var(&cfg.seed, "seed", 0, "seed of the fault schedule and of the workers (0: from the clock)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Minute, "how long the sessions contend under faults")
	flag.IntVar(&cfg.sessions, "sessions", 16, "client sessions, each behind its own fault proxy")
	flag.DurationVar(&cfg.timeout, "session-timeout", 4*time.Second, "the sessions' timeout")
	flag.IntVar(&cfg.maxLeases, "leases", 3, "the semaphore's leases")
	flag.DurationVar(&cfg.maxHold, "hold", 50*time.Millisecond, "longest short critical section")
	flag.IntVar(&cfg.longEvery, "long-every", 6, "in half the sessions, one section in this many lasts one to two session timeouts (0: none)")
	flag.DurationVar(&cfg.calm, "calm", 3*time.Second, "longest quiet time between faults")
	flag.BoolVar(&cfg.noBounds, "no-max-hold", false, "no session acquires with a maximum hold time (which would end a hold the library failed to tell of its loss)")
	flag.StringVar(&cfg.htmlDir, "html-dir", ".", "where Porcupine's visualisation of a history it refuses is written")
	flag.BoolVar(&cfg.noFaults, "no-faults", false, "contend without faults (to tell the library's faults from the schedule's)")
	flag.IntVar(&load.waiters, "load-waiters", 2000, "waiters queued in the load phase (0: skip it)")
	flag.IntVar(&load.sessions, "load-sessions", 50, "sessions the load phase's waiters are spread over")
	flag.Func("only", "inject only these fault kinds (comma-separated numbers, 0-11: see the report's fault table, in that order)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 || n >= int(numFaults) {
				return fmt.Errorf("fault kind %q: want 0 to %d", f, numFaults-1)
			}
			cfg.only = append(cfg.only, faultKind(n))
		}
		return nil
	})
	flag.Parse()
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg, load)
	rep.print(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if !rep.clean() {
		os.Exit(1)
	}
}
