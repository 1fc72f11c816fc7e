package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/zklock/zklock/internal/zktest"
)

// report is everything a run of the tool found; it is printed as tables
// and written as JSON.
type report struct {
	Started    time.Time    `json:"started"`
	Mode       string       `json:"mode"` // "reference" or "quick"
	Storage    string       `json:"storage"`
	ZooKeeper  string       `json:"zookeeper"`
	ServerJVM  string       `json:"server_jvm"` // the server's heap, GC and JIT flags
	CPUs       int          `json:"cpus"`
	Pinning    string       `json:"pinning,omitempty"` // -server-cpus's split; "" for none
	GoVersion  string       `json:"go"`
	Java       string       `json:"java"`
	Curator    string       `json:"curator"` // the harness's versions line, "" if Curator did not run
	LimitS     float64      `json:"limit_s"`
	NudgeMs    float64      `json:"nudge_ms"` // see nudge.go; 0: off
	Rounds     int          `json:"rounds"`
	Order      [][]string   `json:"order"`   // the libraries' order in each round
	Regimes    []regimeInfo `json:"regimes"` // as measured
	Notes      []string     `json:"notes"`
	Results    []result     `json:"results"` // every round's
	Targets    []targetRow  `json:"targets"`
	RoundTrips []rtRow      `json:"round_trips"`
	Memory     []memRow     `json:"memory"`
}

// run warms the server with every library, runs every selected workload
// in every regime for the rounds asked, and prints the report to stdout;
// progress goes to prog.
func run(ctx context.Context, cfg config, stdout io.Writer, prog *progress) (err error) {
	prog.note("starting ZooKeeper")
	e, err := startEnv(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("clean-up: %w", cerr))
		}
	}()
	rep := newReport(ctx, cfg, e)
	libs := makeLibs(cfg, e, rep, prog)
	warmServer(ctx, e, cfg, libs, rep, prog)
	for _, rg := range cfg.Regimes {
		if err := runRegime(ctx, e, cfg, rg, libs, rep, prog); err != nil {
			return err
		}
	}
	if cfg.wants(wMemory) && ctx.Err() == nil {
		rep.Memory = memoryPass(ctx, e, cfg, prog)
	}
	if c, ok := findLib(libs, libCurator).(*curatorLib); ok {
		rep.Curator = c.versions
	}
	rep.Targets = rep.evalTargets()
	prog.clear()
	rep.print(stdout)
	if err := rep.writeJSON(cfg.JSONPath); err != nil {
		return err
	}
	return rep.violations()
}

// runRegime measures the round trip of regime rg, runs its rounds, and
// its counting pass.
func runRegime(ctx context.Context, e *env, cfg config, rg regime, libs []library, rep *report, prog *progress) error {
	info := measureRTT(ctx, e, rg)
	rep.Regimes = append(rep.Regimes, info)
	prog.note("%s: %s", rg.Name, info.describe())
	specs := plan(cfg, rg)
	for round := range cfg.Rounds {
		order := rotate(libs, round)
		if len(rep.Order) <= round {
			rep.Order = append(rep.Order, libNames(order))
		}
		for _, sp := range specs {
			for _, lib := range order {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if lib.supports(sp.Workload) {
					rep.Results = append(rep.Results, runOne(ctx, e, lib, sp, rg, round, cfg.Limit, prog))
				}
			}
		}
	}
	if cfg.wants(wRoundTrips) {
		rep.RoundTrips = append(rep.RoundTrips, roundTrips(ctx, e, cfg, rg, libs, prog)...)
	}
	return ctx.Err()
}

// rotate returns libs starting at index round (mod their number): each
// library runs first in one round of every len(libs).
func rotate(libs []library, round int) []library {
	if len(libs) == 0 {
		return nil
	}
	k := round % len(libs)
	return append(slices.Clone(libs[k:]), libs[:k]...)
}

// libNames returns the libraries' names.
func libNames(libs []library) []string {
	out := make([]string, len(libs))
	for i, l := range libs {
		out[i] = l.name()
	}
	return out
}

// warmServer runs every library, unmeasured and on loopback, before
// anything is timed: the server's JIT keeps speeding up over its first
// tens of thousands of requests. Failures become notes.
func warmServer(ctx context.Context, e *env, cfg config, libs []library, rep *report, prog *progress) {
	s := cfg.Sizes
	specs := []spec{
		{Workload: wUncontended, N: s.ServerWarm, Warmup: s.Warmup},
		{Workload: wContended, C: s.Sessions, Dur: s.ServerWarmS, Warmup: s.PreWarm},
	}
	lo := regime{Name: regLoopback}
	for _, sp := range specs {
		for _, lib := range libs {
			if ctx.Err() != nil || !lib.supports(sp.Workload) {
				continue
			}
			prog.note("warming the server: %s with %s (not measured)", sp.label(), displayName(lib.name()))
			res := runOne(ctx, e, lib, sp, lo, -1, cfg.Limit, nil)
			if res.Error != "" {
				rep.Notes = append(rep.Notes, fmt.Sprintf("warm-up %s, %s: %s", sp.label(), displayName(lib.name()), firstLine(res.Error)))
			}
		}
	}
}

// newReport starts a report with the run's circumstances.
func newReport(ctx context.Context, cfg config, e *env) *report {
	mode := "reference"
	if cfg.Quick {
		mode = "quick"
	}
	flags := zktest.DefaultServerJVMFlags()
	jvm := strings.Join(flags, " ") + " (zktest's test settings)"
	if cfg.ServerJVM == jvmDefault {
		flags = strings.Fields(userServerJVM)
		jvm = userServerJVM + " (as zkServer.sh), Java's defaults otherwise"
	}
	jvm += "; GC: " + jvmGC(ctx, flags)
	return &report{
		Started: time.Now(), Mode: mode, Storage: e.storage, ZooKeeper: e.zkVersion, ServerJVM: jvm,
		CPUs: runtime.NumCPU(), Pinning: e.pinning, GoVersion: runtime.Version(), Java: javaVersion(ctx),
		LimitS: cfg.Limit.Seconds(), NudgeMs: float64(cfg.Nudge.Microseconds()) / 1000,
		Rounds: cfg.Rounds,
	}
}

// makeLibs returns the selected libraries. A Curator that cannot run is
// noted in the report and left out.
func makeLibs(cfg config, e *env, rep *report, prog *progress) []library {
	var libs []library
	st := cfg.Sizes.SessionLimit
	for _, name := range cfg.Libs {
		switch name {
		case libZklock:
			libs = append(libs, newZklockLib(st))
		case libZK:
			libs = append(libs, newZKLib(st))
		case libCurator:
			prog.note("compiling the Curator harness (cached after the first run)")
			c, err := newCuratorLib(st, e.logDir)
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("Curator left out: %v", err))
				prog.note("Curator left out: %v", err)
				continue
			}
			libs = append(libs, c)
		}
	}
	return libs
}

// findLib returns the library named name, or nil.
func findLib(libs []library, name string) library {
	for _, l := range libs {
		if l.name() == name {
			return l
		}
	}
	return nil
}

// plan lists the selected workloads' runs in regime rg, without their
// paths.
func plan(cfg config, rg regime) []spec {
	s := cfg.Sizes.forRegime(rg)
	var out []spec
	add := func(sp spec) {
		if cfg.wants(sp.Workload) {
			out = append(out, sp)
		}
	}
	add(spec{Workload: wFloor, N: s.Floor, Warmup: s.Warmup})
	add(spec{Workload: wUncontended, N: s.Uncontended, Warmup: s.Warmup})
	for _, c := range s.Contended {
		add(spec{Workload: wContended, C: c, Dur: s.Duration, Warmup: s.PreWarm})
	}
	add(spec{Workload: wSemaphore, C: s.Sessions, Leases: s.Leases, Dur: s.Duration, Warmup: s.PreWarm})
	add(spec{Workload: wRWRead, C: s.Sessions, Dur: s.Duration, Warmup: s.PreWarm})
	for _, w := range s.Handoff {
		add(spec{Workload: wHandoff, N: w, Warmup: s.PreWarm, Reps: (s.HandoffMin + w - 1) / w})
	}
	for _, p := range s.Failover {
		for _, m := range stepModes() {
			add(spec{Workload: wFailover, N: p, Mode: m, Warmup: s.PreWarm, WarmReps: s.WarmFailover, Reps: s.Failovers})
		}
	}
	for _, n := range s.ManyLocks {
		for _, g := range s.ManyG {
			if g == 1 && s.ManySeqMax > 0 && n > s.ManySeqMax {
				continue // one round trip or two per lock, one after another: past the time limit
			}
			add(spec{Workload: wManyLocks, N: n, G: g, Warmup: s.PreWarm})
		}
	}
	return out
}

// runOne runs sp with lib in regime rg on a fresh path within limit, and
// cleans up. round is -1 for the server's warm-up; prog may be nil.
func runOne(ctx context.Context, e *env, lib library, sp spec, rg regime, round int, limit time.Duration, prog *progress) result {
	sp.Path, sp.WarmPath = e.paths(sp.Workload, lib.name())
	if prog != nil {
		prog.begin(fmt.Sprintf("%s, round %d: %s: %s", rg.Name, round+1, sp.label(), displayName(lib.name())))
	}
	failed := func(err error) result {
		res := result{Workload: sp.Workload, Label: sp.label(), Library: lib.name(), Regime: rg.Name, Round: round,
			N: sp.N, Sessions: sp.C, G: sp.G, Error: joinMsg(err.Error(), errString(e.teardown(sp)))}
		if prog != nil {
			prog.end(summary(res))
		}
		return res
	}
	if err := e.prepare(sp); err != nil {
		return failed(err)
	}
	rt, err := e.openRoute(rg)
	if err != nil {
		return failed(err)
	}
	defer rt.close()
	rec := newRecorder(e, sp)
	rec.srvr, rec.proxies, rec.quiet, rec.client = true, rt.proxies, timedQuiet, lib.process
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, limit)
	r, err := lib.run(rctx, sp, rt.ep, rec.phase)
	cancel()
	res := newResult(sp, lib.name(), r, err, rec, time.Since(start))
	res.Regime, res.Round = rg.Name, round
	if cerr := e.teardown(sp); cerr != nil {
		res.Error = joinMsg(res.Error, cerr.Error())
	}
	if prog != nil {
		prog.end(summary(res))
	}
	return res
}

// summary is the progress line's verdict on a result.
func summary(res result) string {
	switch {
	case res.DNF:
		return "DNF"
	case res.Figures == nil:
		return "failed: " + firstLine(res.Error)
	}
	out := fmt.Sprintf("%.0f/s", res.Figures.PerSecond)
	switch f := res.Figures; {
	case f.MsPerHandoff != nil:
		out = fmt.Sprintf("%.2f ms/handoff", *f.MsPerHandoff)
	case res.Workload == wFailover && f.P50Ms != nil:
		out = fmt.Sprintf("%.2f ms/failover (p50)", *f.P50Ms)
	case res.Workload == wManyLocks && f.ReleasePerSecond != nil:
		out = fmt.Sprintf("acquire %.0f/s, release %.0f/s", f.PerSecond, *f.ReleasePerSecond)
		if f.HeapPerHold != nil && f.TasksPerHold != nil {
			tilde, tasks := "", "goroutines"
			if f.HeapApprox {
				tilde, tasks = "~", "threads"
			}
			out += fmt.Sprintf(", %s%.0f heap bytes and %.2f %s per hold", tilde, *f.HeapPerHold, *f.TasksPerHold, tasks)
		}
	}
	if res.Requests != nil {
		out += fmt.Sprintf(", %.2f requests/op", *res.Requests)
	}
	return out
}

// writeJSON writes the report to path ("" writes nothing).
func (rep *report) writeJSON(path string) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("results JSON: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("results JSON: %w", err)
	}
	return nil
}

// violations returns an error if any run broke exclusion.
func (rep *report) violations() error {
	var errs []error
	for _, r := range rep.Results {
		if r.Figures != nil && r.Figures.Violations != nil && *r.Figures.Violations > 0 {
			errs = append(errs, fmt.Errorf("%s: %s: %d exclusion violations", r.Label, r.Library, *r.Figures.Violations))
		}
	}
	return errors.Join(errs...)
}

// errString is err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// joinMsg joins two error messages, either of which may be empty.
func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
