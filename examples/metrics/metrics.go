package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/zklock/zklock"
)

// buckets are the upper bounds, in seconds, of the histograms' buckets.
var buckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5}

// Metric names, in the Prometheus conventions.
const (
	mStarted     = "zklock_acquire_started_total"
	mAcquired    = "zklock_acquisitions_total"
	mReleased    = "zklock_releases_total"
	mLost        = "zklock_losses_total"
	mRevocations = "zklock_revocation_requests_total"
	mDeletes     = "zklock_delete_retries_total"
	mDropped     = "zklock_observer_dropped_events_total"
	mWait        = "zklock_wait_seconds"
	mHold        = "zklock_hold_seconds"
)

// help is the HELP text of every metric; its keys are every metric.
var help = map[string]string{
	mStarted:     "Acquire calls that began to queue.",
	mAcquired:    "Holds granted.",
	mReleased:    "Holds ended by their last Release.",
	mLost:        "Holds lost (connection, session, node deleted, Client closed).",
	mRevocations: "Requests to release a held lock.",
	mDeletes:     "Node deletes that failed on the network and went on in the background.",
	mDropped:     "Events the Observer missed because it fell behind.",
	mWait:        "Time from the start of Acquire to the grant.",
	mHold:        "Time from the grant to the release or loss.",
}

// histogram is a Prometheus histogram: counts per bucket (not cumulative
// here; cumulated when written), a sum and a count.
type histogram struct {
	counts []uint64 // one per bucket, then +Inf
	sum    float64
	count  uint64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i, _ := slices.BinarySearch(buckets, s) // first bucket with le >= s
	h.counts[i]++
	h.sum += s
	h.count++
}

// metrics turns zklock Observer events into counters and histograms,
// labelled by lock path. Its methods are safe for concurrent use: every
// Client runs its Observer on a goroutine of its own.
type metrics struct {
	mu       sync.Mutex                       // protects the fields below
	counters map[string]map[string]float64    // name -> path -> value
	hists    map[string]map[string]*histogram // name -> path -> histogram
	events   int                              // events seen, dropped ones included
	changed  chan struct{}                    // closed and replaced at every event
}

func newMetrics() *metrics {
	m := &metrics{
		counters: map[string]map[string]float64{mDeletes: {"": 0}, mDropped: {"": 0}},
		hists:    map[string]map[string]*histogram{},
		changed:  make(chan struct{}),
	}
	return m
}

// observe is the Observer: pass it to zklock.WithObserver.
func (m *metrics) observe(ev zklock.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(mDropped, "", float64(ev.Dropped))
	switch ev.Kind {
	case zklock.EventAcquireStarted:
		m.add(mStarted, ev.Path, 1)
	case zklock.EventAcquired:
		m.add(mAcquired, ev.Path, 1)
		m.hist(mWait, ev.Path).observe(ev.Wait)
	case zklock.EventReleased:
		m.add(mReleased, ev.Path, 1)
		m.hist(mHold, ev.Path).observe(ev.Held)
	case zklock.EventLost:
		m.add(mLost, ev.Path, 1)
		m.hist(mHold, ev.Path).observe(ev.Held)
	case zklock.EventRevocationRequested:
		m.add(mRevocations, ev.Path, 1)
	case zklock.EventDeleteRetried:
		m.add(mDeletes, "", 1)
	}
	m.events += 1 + ev.Dropped
	close(m.changed)
	m.changed = make(chan struct{})
}

// add adds v to a counter; m.mu must be held.
func (m *metrics) add(name, path string, v float64) {
	if m.counters[name] == nil {
		m.counters[name] = map[string]float64{}
	}
	m.counters[name][path] += v
}

// hist returns a histogram, making it if needed; m.mu must be held.
func (m *metrics) hist(name, path string) *histogram {
	if m.hists[name] == nil {
		m.hists[name] = map[string]*histogram{}
	}
	h := m.hists[name][path]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(buckets)+1)}
		m.hists[name][path] = h
	}
	return h
}

// waitEvents waits until n events have been seen, or timeout has passed.
func (m *metrics) waitEvents(n int, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		m.mu.Lock()
		seen, ch := m.events, m.changed
		m.mu.Unlock()
		if seen >= n {
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
			return fmt.Errorf("the Observer saw %d events in %v, expected %d", seen, timeout, n)
		}
	}
}

// write writes every metric in the Prometheus text exposition format,
// families and series sorted by name.
func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range sortedKeys(help) {
		if series, ok := m.hists[name]; ok || name == mWait || name == mHold {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help[name], name)
			for _, path := range sortedKeys(series) {
				writeHist(w, name, path, series[path])
			}
			continue
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help[name], name)
		series := m.counters[name]
		for _, path := range sortedKeys(series) {
			fmt.Fprintf(w, "%s%s %s\n", name, labels(path, ""), num(series[path]))
		}
	}
}

// writeHist writes one histogram series: cumulative buckets, sum, count.
func writeHist(w io.Writer, name, path string, h *histogram) {
	var cum uint64
	for i, c := range h.counts {
		cum += c
		le := "+Inf"
		if i < len(buckets) {
			le = num(buckets[i])
		}
		fmt.Fprintf(w, "%s_bucket%s %d\n", name, labels(path, le), cum)
	}
	fmt.Fprintf(w, "%s_sum%s %s\n", name, labels(path, ""), num(h.sum))
	fmt.Fprintf(w, "%s_count%s %d\n", name, labels(path, ""), h.count)
}

// labels formats the label set of a series: path unless empty, le if set.
func labels(path, le string) string {
	var s string
	if path != "" {
		s = "path=" + strconv.Quote(path)
	}
	if le != "" {
		if s != "" {
			s += ","
		}
		s += `le="` + le + `"`
	}
	if s == "" {
		return ""
	}
	return "{" + s + "}"
}

// num formats a sample value as Prometheus does.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// total returns the sum of a counter over every path.
func (m *metrics) total(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum float64
	for _, v := range m.counters[name] {
		sum += v
	}
	return int(sum)
}

// check returns an error if the counters differ from what the workload
// did.
func (m *metrics) check(did tally) error {
	var errs []error
	for name, want := range map[string]int{
		mStarted: did.acquired, mAcquired: did.acquired, mReleased: did.released,
		mLost: did.lost, mRevocations: did.revoked, mDropped: 0,
	} {
		if got := m.total(name); got != want {
			errs = append(errs, fmt.Errorf("%s is %d, the workload made %d", name, got, want))
		}
	}
	return errors.Join(errs...)
}
