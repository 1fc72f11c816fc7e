package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// report is everything a run of the tool found; it is printed as tables
// and written as JSON.
type report struct {
	Started    time.Time `json:"started"`
	Mode       string    `json:"mode"` // "reference" or "quick"
	Storage    string    `json:"storage"`
	ZooKeeper  string    `json:"zookeeper"`
	CPUs       int       `json:"cpus"`
	GoVersion  string    `json:"go"`
	Java       string    `json:"java"`
	Curator    string    `json:"curator"` // the harness's versions line, "" if Curator did not run
	LimitS     float64   `json:"limit_s"`
	NudgeMs    float64   `json:"nudge_ms"` // see nudge.go; 0: off
	Notes      []string  `json:"notes"`
	Results    []result  `json:"results"`
	RoundTrips []rtRow   `json:"round_trips"`
	Memory     []memRow  `json:"memory"`
}

// run runs every selected workload and prints the report to stdout;
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
	for _, sp := range plan(cfg) {
		for _, lib := range libs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if lib.supports(sp.Workload) {
				rep.Results = append(rep.Results, runOne(ctx, e, lib, sp, cfg.Limit, prog))
			}
		}
	}
	if cfg.wants(wRoundTrips) {
		rep.RoundTrips = roundTrips(ctx, e, cfg, libs, prog)
	}
	if cfg.wants(wMemory) {
		rep.Memory = memoryPass(ctx, e, cfg, prog)
	}
	if c, ok := findLib(libs, libCurator).(*curatorLib); ok {
		rep.Curator = c.versions
	}
	prog.clear()
	rep.print(stdout)
	if err := rep.writeJSON(cfg.JSONPath); err != nil {
		return err
	}
	return rep.violations()
}

// newReport starts a report with the run's circumstances.
func newReport(ctx context.Context, cfg config, e *env) *report {
	mode := "reference"
	if cfg.Quick {
		mode = "quick"
	}
	return &report{
		Started: time.Now(), Mode: mode, Storage: e.storage, ZooKeeper: e.zkVersion,
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Java: javaVersion(ctx),
		LimitS: cfg.Limit.Seconds(), NudgeMs: float64(cfg.Nudge.Microseconds()) / 1000,
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

// plan lists the selected workloads' runs, without their paths.
func plan(cfg config) []spec {
	s := cfg.Sizes
	var out []spec
	add := func(sp spec) {
		if cfg.wants(sp.Workload) {
			out = append(out, sp)
		}
	}
	add(spec{Workload: wFloor, N: s.Floor, Warmup: s.Warmup})
	add(spec{Workload: wUncontended, N: s.Uncontended, Warmup: s.Warmup})
	add(spec{Workload: wContended, C: s.Sessions, Dur: s.Duration, Warmup: s.PreWarm})
	add(spec{Workload: wSemaphore, C: s.Sessions, Leases: s.Leases, Dur: s.Duration, Warmup: s.PreWarm})
	add(spec{Workload: wRWRead, C: s.Sessions, Dur: s.Duration, Warmup: s.PreWarm})
	for _, w := range s.Handoff {
		add(spec{Workload: wHandoff, N: w, Warmup: s.PreWarm})
	}
	return out
}

// runOne runs sp with lib on a fresh path within limit, and cleans up.
func runOne(ctx context.Context, e *env, lib library, sp spec, limit time.Duration, prog *progress) result {
	sp.Path, sp.WarmPath = e.paths(sp.Workload, lib.name())
	rec := newRecorder(e, sp)
	rec.srvr = true
	prog.begin(fmt.Sprintf("%s: %s", sp.label(), displayName(lib.name())))
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, limit)
	r, err := lib.run(rctx, sp, endpoints{Servers: []string{e.server}, Gate: []string{e.server}}, rec.phase)
	cancel()
	res := newResult(sp, lib.name(), r, err, rec, time.Since(start))
	if cerr := e.cleanup(sp.Path); cerr != nil {
		res.Error = joinMsg(res.Error, cerr.Error())
	}
	prog.end(summary(res))
	return res
}

// summary is the progress line's verdict on a result.
func summary(res result) string {
	switch {
	case res.DNF:
		return "DNF"
	case res.Figures == nil:
		return "failed: " + firstLine(res.Error)
	case res.Figures.MsPerHandoff != nil:
		return fmt.Sprintf("%.2f ms/handoff", *res.Figures.MsPerHandoff)
	}
	return fmt.Sprintf("%.0f/s", res.Figures.PerSecond)
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
