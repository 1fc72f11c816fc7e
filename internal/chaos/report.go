package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is the outcome of a run.
type report struct {
	cfg          config
	elapsed      time.Duration
	noPartitions string // why servers could not be partitioned, if so
	faults       [numFaults]int64
	hits         [numFaults][numHits]int64    // what each fault struck
	byKind       [numKinds][numKindHits]int64 // what faults did to each kind of section
	long         [numKinds]int64
	acquired     [numKinds]int64
	lost         [numKinds]int64
	acquireErrs  [numKinds]int64
	staleBlocked int64
	writeErrs    int64
	lateWrites   int64
	slowWrites   int64
	maxHoldEnded int64    // holds their maximum hold time ended
	notes        []string // the workers' notes
	redone       int      // deletes the ensemble acknowledged, then undid, which the Client did again
	soloGrants   int64    // grants of the solo Mutex without a listing
	soloReaps    int64    // deletions of its parent while empty
	verdict      verdict
	linear       []judgement // Porcupine's verdicts, per model and partition
	orphansOpen  []string    // lock nodes left after every worker released, sessions open
	orphans      []string    // ephemeral nodes left after every session closed
	divergence   []string    // nodes left on a minority of the servers only (ZooKeeper's, not zklock's)
	leaks        string      // goroutines left after everything closed
	load         *loadReport
}

func (r *report) stats(c *counters) {
	for k := range r.acquired {
		r.acquired[k] = c.acquired[k].Load()
		r.long[k] = c.long[k].Load()
		r.lost[k] = c.lost[k].Load()
		r.acquireErrs[k] = c.acquireErrs[k].Load()
	}
	r.staleBlocked = c.staleBlocked.Load()
	r.writeErrs = c.writeErrs.Load()
	r.lateWrites = c.lateWrites.Load()
	r.slowWrites = c.slowWrites.Load()
	r.maxHoldEnded = c.maxHoldEnded.Load()
}

// clean reports whether the run found nothing wrong.
func (r *report) clean() bool {
	return len(r.verdict.violations) == 0 && r.linearizable() && len(r.orphansOpen) == 0 && len(r.orphans) == 0 &&
		r.leaks == "" && (r.load == nil || r.load.clean())
}

// linearizable reports whether Porcupine accepted every partition.
func (r *report) linearizable() bool {
	for _, j := range r.linear {
		if !j.ok() {
			return false
		}
	}
	return true
}

// missingFaults lists the fault kinds that were never injected.
func (r *report) missingFaults() []string {
	var out []string
	for k, n := range r.faults {
		if n == 0 {
			out = append(out, faultKind(k).String())
		}
	}
	return out
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nzklock chaos: seed %d, %v of contention, %v in all, %d sessions (timeout %v, half StandardPolicy, half SessionPolicy)\n",
		r.cfg.seed, r.cfg.duration, r.elapsed.Round(time.Second), r.cfg.sessions, r.cfg.timeout)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nsections\tacquired\tlong\tlost (all signalled)\tacquires failed or timed out")
	for k := kind(0); k < numKinds; k++ {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", k, r.acquired[k], r.long[k], r.lost[k], r.acquireErrs[k])
	}
	fmt.Fprintln(tw, "\nhits per kind\tholder's session hit\tby a fault aimed at holders\tnext in line paused")
	for k := kind(0); k < numKinds; k++ {
		h := r.byKind[k]
		next := "-" // no fault aims at this kind's queue
		if slices.Contains(queues, k) {
			next = strconv.FormatInt(h[pausedNext], 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", k, h[struckHolder], h[struckAimed], next)
	}
	fmt.Fprintln(tw, "\n#\tfault\tinjected\thit a holder\ta waiter\tidle")
	for k := faultKind(0); k < numFaults; k++ {
		h := r.hits[k]
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\n", k, k, r.faults[k], h[hitHolder], h[hitWaiter], h[hitIdle])
	}
	tw.Flush()
	if r.noPartitions != "" {
		fmt.Fprintf(w, "partitions were not possible: %s\n", r.noPartitions)
	}
	fmt.Fprintf(w, "\nguarded writes with a stale token refused by ZooKeeper: %d (failed on the connection: %d)\n", r.staleBlocked, r.writeErrs)
	fmt.Fprintf(w, "writes guarded by a released hold accepted while its delete went on in the background (checked for order): %d\n", r.lateWrites)
	fmt.Fprintf(w, "guarded writes that took longer than a session timeout: %d\n", r.slowWrites)
	fmt.Fprintf(w, "holds ended by their maximum hold time (a quarter of the sessions, one session timeout; counted as lost above): %d\n", r.maxHoldEnded)
	for i, n := range r.notes {
		if i == 10 {
			fmt.Fprintf(w, "  ... and %d more\n", len(r.notes)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", n)
	}
	fmt.Fprintf(w, "deletes acknowledged by ZooKeeper, undone by a leader change, and done again by the Client: %d\n", r.redone)
	fmt.Fprintf(w, "solo Mutex: %d sections, %d granted without a listing; its parent deleted while empty %d times\n",
		r.acquired[kindSolo], r.soloGrants, r.soloReaps)
	fmt.Fprintf(w, "most semaphore leases held at once: %d of %d\n", r.verdict.maxLeases, r.cfg.maxLeases)
	fmt.Fprintf(w, "overlaps after the earlier holder was told of its loss: %d\n", len(r.verdict.lostBeforeOverlap))
	for _, l := range r.verdict.lostBeforeOverlap {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if r.load != nil {
		r.load.print(w)
	}
	r.printProblems(w)
}

// smallestRefused returns the refused partition with the fewest
// operations, or nil.
func (r *report) smallestRefused() *judgement {
	var best *judgement
	for i, j := range r.linear {
		if !j.ok() && (best == nil || j.ops < best.ops) {
			best = &r.linear[i]
		}
	}
	return best
}

func (r *report) printProblems(w io.Writer) {
	fmt.Fprintf(w, "\nviolations: %d\n", len(r.verdict.violations))
	fmt.Fprintf(w, "violation kinds:%s\n", r.kinds())
	for _, v := range r.verdict.violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "porcupine (the second judge, linearizability per model and partition):\n")
	for _, j := range r.linear {
		fmt.Fprintf(w, "  %s\n", j)
	}
	if failed := r.smallestRefused(); failed != nil {
		fmt.Fprintf(w, "porcupine refused: smallest failing partition %s\n", failed)
	}
	fmt.Fprintf(w, "orphan nodes: %d with the sessions open, %d after they closed\n", len(r.orphansOpen), len(r.orphans))
	for _, o := range append(r.orphansOpen, r.orphans...) {
		fmt.Fprintf(w, "  %s\n", o)
	}
	r.printDivergence(w)
	if r.leaks != "" {
		fmt.Fprintf(w, "leaked goroutines:\n%s\n", indent(r.leaks))
	} else {
		fmt.Fprintln(w, "leaked goroutines: 0")
	}
	if m := r.missingFaults(); len(m) > 0 {
		fmt.Fprintf(w, "fault kinds never injected: %s\n", strings.Join(m, "; "))
	}
	verdict := "PASS"
	if !r.clean() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s (replay: make chaos SEED=%d DURATION=%v)\n", verdict, r.cfg.seed, r.cfg.duration)
}

// printDivergence lists the nodes left on a minority of the servers only:
// the ensemble's divergence, which no client can delete and which does not
// fail the run.
func (r *report) printDivergence(w io.Writer) {
	div := r.divergence
	if r.load != nil {
		div = merge(slices.Clone(div), r.load.divergence)
	}
	fmt.Fprintf(w, "nodes on a minority of the servers only (ZooKeeper's divergence, as in ZOOKEEPER-5010; not orphans, the run does not fail on them): %d\n", len(div))
	for _, d := range div {
		fmt.Fprintf(w, "  %s\n", d)
	}
}

// kinds lists what the run found, by kind, as " kind=n" items: the
// checker's violation kinds, then "orphans" and "leaked goroutines".
func (r *report) kinds() string {
	counts := violationKinds(r.verdict.violations)
	if r.load != nil {
		for k, n := range violationKinds(r.load.verdict.violations) {
			counts[k] += n
		}
	}
	counts["orphans"] = len(r.orphansOpen) + len(r.orphans)
	if r.load != nil {
		counts["orphans"] += len(r.load.orphansOpen) + len(r.load.orphansAfter)
	}
	counts["leaked goroutines"] = btoi(r.leaks != "")
	var out []string
	for _, k := range []string{violTwoHolders, violUnsignalled, violLeases, violTokens, violStale, "other", "orphans", "leaked goroutines"} {
		out = append(out, fmt.Sprintf(" %s=%d", k, counts[k]))
	}
	return strings.Join(out, ";")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
