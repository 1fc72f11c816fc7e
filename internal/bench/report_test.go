package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Workloads, allWorkloads()) || !slices.Equal(c.Libs, allLibs()) ||
		c.Limit != 180*time.Second || c.Sizes.Floor != 2000 || !slices.Equal(c.Sizes.Handoff, []int{1, 2, 10, 1000, 2000}) ||
		c.Rounds != 3 || c.ServerJVM != jvmDefault || len(c.Regimes) != 2 || c.Regimes[1].Delay != time.Millisecond ||
		!slices.Equal(c.Sizes.Failover, []int{3, 100}) || c.Sizes.Failovers != 20 ||
		!slices.Equal(c.Sizes.ManyLocks, []int{1000, 10000, 100000}) || !slices.Equal(c.Sizes.ManyG, []int{1, 64}) {
		t.Errorf("defaults: %+v", c)
	}
	// Latency: no sequential run of 100,000 locks by default; all asked for.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"manylocks 1000 G=1", "manylocks 1000 G=64", "manylocks 10000 G=1", "manylocks 10000 G=64", "manylocks 100000 G=64"}},
		{[]string{"-manylocks", "300,100000", "-manylocks-g", "1,8"}, []string{"manylocks 300 G=1", "manylocks 300 G=8", "manylocks 100000 G=1", "manylocks 100000 G=8"}},
	} {
		c, err := parseFlags(append(tc.args, "-workloads", "manylocks", "-regime", "latency"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sp := range plan(c, c.Regimes[0]) {
			got = append(got, sp.label())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q, latency: %q, want %q", tc.args, got, tc.want)
		}
	}
	c, err = parseFlags([]string{"-quick", "-libs", "zk.Lock, zklock", "-workloads", "handoff,floor",
		"-handoff", "5,7", "-duration", "1s", "-limit", "9s", "-regime", "latency", "-delay", "2ms",
		"-rounds", "5", "-server-jvm", "test", "-failover", "2,4", "-server-cpus", "1, 0,1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Libs, []string{libZklock, libZK}) || !slices.Equal(c.Workloads, []string{wFloor, wHandoff}) ||
		!slices.Equal(c.Sizes.Handoff, []int{5, 7}) || c.Sizes.Duration != time.Second || c.Limit != 9*time.Second ||
		c.Sizes.Floor != 200 || c.Rounds != 5 || c.ServerJVM != jvmTest || !slices.Equal(c.ServerCPUs, []int{1, 0}) ||
		!slices.Equal(c.Regimes, []regime{{Name: regLatency, Delay: 2 * time.Millisecond}}) ||
		!slices.Equal(c.Sizes.forRegime(c.Regimes[0]).Handoff, []int{5, 7}) ||
		!slices.Equal(c.Sizes.forRegime(c.Regimes[0]).Failover, []int{2, 4}) {
		t.Errorf("flags: %+v", c)
	}
	for _, bad := range [][]string{{"-workloads", "nope"}, {"-libs", ""}, {"-handoff", "0"}, {"-limit", "0s"}, {"extra"},
		{"-rounds", "-1"}, {"-regime", "lan"}, {"-delay", "0s"}, {"-server-jvm", "big"}, {"-failover", "1"},
		{"-manylocks", "0"}, {"-manylocks-g", "x"}, {"-server-cpus", "x"}, {"-server-cpus", "-1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPercentile(t *testing.T) {
	us := []int64{5000, 1000, 3000, 2000, 4000}
	if p := percentileMs(us, 0.5); p == nil || *p != 3 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentileMs(us, 0.99); p == nil || *p != 5 {
		t.Errorf("p99 = %v", p)
	}
	if p := percentileMs(nil, 0.5); p != nil {
		t.Errorf("p50 of nothing = %v", *p)
	}
}

// sampleReport is a report with a finished, a DNF and a failed run, and
// a loop workload and a target's pair over three rounds.
func sampleReport() *report {
	up := spec{Workload: wUncontended, N: 10}
	ok := newResult(up, libZklock, raw{Ops: 10, Seconds: 0.5, LatUS: []int64{900, 1100}}, nil, nil, time.Second)
	dnfRes := newResult(up, libCurator, raw{}, errors.Join(errDNF, errors.New("late")), nil, time.Second)
	failed := newResult(up, libZK, raw{}, errors.New("boom\nmore"), nil, time.Second)
	ct := spec{Workload: wContended, C: 2, Dur: time.Second}
	loop := newResult(ct, libZklock, raw{Ops: 30, Seconds: 1, PerSession: []int64{10, 20}}, nil, nil, time.Second)
	rs := []result{ok, dnfRes, failed, loop}
	for round, ms := range []float64{1, 3, 2} { // zklock 1, 3, 2 ms; zk.Lock 2 ms
		for lib, secs := range map[string]float64{libZklock: ms / 1000, libZK: 0.002} {
			r := newResult(spec{Workload: wHandoff, N: 1}, lib, raw{Ops: 1, Seconds: secs}, nil, nil, time.Second)
			r.Round = round
			rs = append(rs, r)
		}
	}
	for i := range rs {
		rs[i].Regime = regLoopback
	}
	rep := &report{Mode: "quick", Storage: "tmpfs (/dev/shm)", Rounds: 3, Results: rs}
	rep.Targets = rep.evalTargets()
	return rep
}

func TestReportPrintAndJSON(t *testing.T) {
	rep := sampleReport()
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{"uncontended 10", "DNF", "ERR", "20.0", "0.90", "10..20", "boom", "contended 2 1s",
		"== loopback ==", "2.00 [1.00..3.00]", "handoff W=1 time <= zk.Lock's", "1.00x [0.50..1.50]", "met"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := rep.writeJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Results []struct {
			DNF     bool            `json:"dnf"`
			Figures json.RawMessage `json:"figures"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Results[1].DNF || string(back.Results[1].Figures) != "null" || string(back.Results[0].Figures) == "null" {
		t.Errorf("JSON results: %s", b)
	}
}

func TestViolationsFail(t *testing.T) {
	rep := sampleReport()
	if err := rep.violations(); err != nil {
		t.Fatalf("no violations: %v", err)
	}
	*rep.Results[3].Figures.Violations = 2
	if err := rep.violations(); err == nil {
		t.Error("violations not reported")
	}
}

func TestStatAndRotate(t *testing.T) {
	if s := statOf([]float64{3, 1, 2}); s.Med != 2 || s.Min != 1 || s.Max != 3 || s.String() != "2.00 [1.00..3.00]" {
		t.Errorf("odd: %+v %s", s, s)
	}
	if s := statOf([]float64{4, 1}); s.Med != 2.5 {
		t.Errorf("even: %+v", s)
	}
	if statOf(nil) != nil {
		t.Error("stat of nothing")
	}
	libs := []library{newZklockLib(0), newZKLib(0), &curatorLib{}}
	var firsts []string
	for round := range 3 {
		firsts = append(firsts, rotate(libs, round)[0].name())
	}
	if !slices.Equal(firsts, []string{libZklock, libZK, libCurator}) {
		t.Errorf("first in each round: %v", firsts)
	}
	if got := ratios(map[int]float64{0: 2, 1: 4, 2: 9}, map[int]float64{0: 1, 1: 2}); !slices.Equal(got, []float64{2, 2}) {
		t.Errorf("ratios = %v", got)
	}
}

// TestFailoverTargets checks that a failover's rows and target compare
// the p50s of the same P and way of stepping down, round by round.
func TestFailoverTargets(t *testing.T) {
	var rs []result
	for round, zk := range []int64{1000, 3000, 2000} { // zklock's p50 1, 3, 2 ms; Curator's 4 ms
		for lib, us := range map[string]int64{libZklock: zk, libCurator: 4000} {
			sp := spec{Workload: wFailover, N: 3, Mode: stepResign, Reps: 3}
			r := newResult(sp, lib, raw{Ops: 3, Seconds: 0.01, LatUS: []int64{us, us, 2 * us}}, nil, nil, time.Second)
			r.Regime, r.Round = regLoopback, round
			rs = append(rs, r)
		}
	}
	rep := &report{Mode: "quick", Storage: "tmpfs (/dev/shm)", Rounds: 3, Results: rs}
	rep.Targets = rep.evalTargets()
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{"failover 3 resign", "p50 ms/failover", "p99 ms/failover", "2.00 [1.00..3.00]",
		"4.00", "8.00", "0.50x [0.25..0.75]", "failover 3 close time <= 0.5 x LeaderLatch's"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	for _, row := range rep.Targets {
		switch {
		case row.Target == "failover 3 resign time <= 0.5 x LeaderLatch's":
			if row.Median == nil || *row.Median != 0.5 || !*row.Met {
				t.Errorf("%s: %+v", row.Target, row)
			}
		case strings.HasPrefix(row.Target, "failover") && row.Median != nil:
			t.Errorf("%s measured from other runs: %v", row.Target, *row.Median)
		}
	}
}

// TestManyLocksReport checks a many-locks run's rows and issue 27's
// targets: ratios of the acquire and release rates round by round, at the
// largest N of each G only, and zklock's own heap and goroutines per hold.
func TestManyLocksReport(t *testing.T) {
	var rs []result
	add := func(n, g int, lib string, round int, acqS, relS float64, heap, tasks int64) {
		sp := spec{Workload: wManyLocks, N: n, G: g}
		stack := int64(0)
		r := raw{Ops: int64(n), Seconds: acqS, ReleaseSeconds: relS, HeldHeap: heap * int64(n), HeldTasks: tasks * int64(n)}
		if lib == libCurator {
			r.HeapApprox = true
		} else {
			r.HeldStack = &stack
		}
		res := newResult(sp, lib, r, nil, nil, time.Second)
		res.Regime, res.Round = regLoopback, round
		rs = append(rs, res)
	}
	for round, zs := range []float64{1, 2, 3} { // zklock's acquire-all: 1, 2, 3 s; Curator's 4 s, go-zk's 2 s
		add(1000, 64, libZklock, round, zs, 1, 5000, 1)
		add(1000, 64, libCurator, round, 4, 3, 900, 0)
		add(1000, 64, libZK, round, 2, 2, 300, 0)
		add(100, 64, libZklock, round, 9, 9, 1, 0) // a smaller N: in the table, not in the targets
	}
	rep := &report{Mode: "quick", Storage: "tmpfs (/dev/shm)", Rounds: 3, Results: rs}
	rep.Targets = rep.evalTargets()
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{"manylocks 1000 G=64", "manylocks 100 G=64", "acquisitions/s", "release-all ms", "releases/s",
		"heap bytes/hold", "~900", "goroutines/hold (Java: threads)", "2.00x [1.33..4.00]",
		"manylocks 1000 G=64: acquire-all >= 1.5 x Curator", "manylocks 1000 G=64: heap/hold <= 2 KiB", "5000 [5000..5000] B", "1.00 [1.00..1.00] goroutines", "MISSED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	want := map[string]struct {
		med float64
		met bool
	}{
		"manylocks 1000 G=64: acquire-all >= 1.5 x Curator": {2, true}, // 4/2
		"manylocks 1000 G=64: acquire-all >= zk.Lock":       {1, true}, // 2/2
		"manylocks 1000 G=64: release-all >= 1.5 x Curator": {3, true}, // 3/1
		"manylocks 1000 G=64: release-all >= zk.Lock":       {2, true}, // 2/1
		"manylocks 1000 G=64: heap/hold <= 2 KiB":           {5000, false},
		"manylocks 1000 G=64: goroutines/hold = 0 (< 0.01)": {1, false},
	}
	n := 0
	for _, row := range rep.Targets {
		if !strings.HasPrefix(row.Target, "manylocks") {
			continue
		}
		n++
		w, ok := want[row.Target]
		if !ok || row.Median == nil || *row.Median != w.med || *row.Met != w.met {
			t.Errorf("%s: %+v (median %v), want %+v", row.Target, row, row.Median, w)
		}
	}
	if n != len(want) {
		t.Errorf("%d many-locks targets, want %d", n, len(want))
	}
}
