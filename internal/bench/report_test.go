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
		c.Limit != 180*time.Second || c.Sizes.Floor != 2000 || !slices.Equal(c.Sizes.Handoff, []int{10, 100, 1000, 2000}) {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseFlags([]string{"-quick", "-libs", "zk.Lock, zklock", "-workloads", "handoff,floor",
		"-handoff", "5,7", "-duration", "1s", "-limit", "9s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Libs, []string{libZklock, libZK}) || !slices.Equal(c.Workloads, []string{wFloor, wHandoff}) ||
		!slices.Equal(c.Sizes.Handoff, []int{5, 7}) || c.Sizes.Duration != time.Second || c.Limit != 9*time.Second ||
		c.Sizes.Floor != 200 {
		t.Errorf("flags: %+v", c)
	}
	for _, bad := range [][]string{{"-workloads", "nope"}, {"-libs", ""}, {"-handoff", "0"}, {"-limit", "0s"}, {"extra"}} {
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

// sampleReport is a report with a finished, a DNF and a failed run.
func sampleReport() *report {
	up := spec{Workload: wUncontended, N: 10}
	ok := newResult(up, libZklock, raw{Ops: 10, Seconds: 0.5, LatUS: []int64{900, 1100}}, nil, nil, time.Second)
	dnfRes := newResult(up, libCurator, raw{}, errors.Join(errDNF, errors.New("late")), nil, time.Second)
	failed := newResult(up, libZK, raw{}, errors.New("boom\nmore"), nil, time.Second)
	ct := spec{Workload: wContended, C: 2, Dur: time.Second}
	loop := newResult(ct, libZklock, raw{Ops: 30, Seconds: 1, PerSession: []int64{10, 20}}, nil, nil, time.Second)
	return &report{Mode: "quick", Storage: "tmpfs (/dev/shm)", Results: []result{ok, dnfRes, failed, loop}}
}

func TestReportPrintAndJSON(t *testing.T) {
	rep := sampleReport()
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{"uncontended 10", "DNF", "ERR", "20.0", "0.90", "10..20", "boom", "contended 2 1s"} {
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
