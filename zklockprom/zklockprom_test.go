package zklockprom_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/obstest"
	"github.com/zklock/zklock/zklockprom"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// value returns the value of the series of name with labels in reg: a
// counter's or gauge's value, or a histogram's count; -1 if there is none.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !match(m.GetLabel(), labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

func match(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}

// A Mutex's acquires, busy, timed out and granted, and its holds, released
// and lost, land in series labelled by recipe and outcome, with no path.
func TestCollectorCountsOutcomes(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	col := zklockprom.New(zklockprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	c, events := obstest.Observed(t, cluster, col.Observe)
	obstest.Outcomes(t, cluster, c, events, cluster.Root(t)+"/job", func() {
		assert.Equal(t, 1.0, value(t, reg, "zklock_holds", map[string]string{"recipe": "mutex"}))
		assert.Equal(t, 0.0, value(t, reg, "zklock_acquires_pending", map[string]string{"recipe": "mutex"}))
	})

	wait := func(outcome string) float64 {
		return value(t, reg, "zklock_acquire_wait_seconds", map[string]string{"recipe": "mutex", "outcome": outcome})
	}
	assert.Equal(t, 1.0, wait("busy"))
	assert.Equal(t, 1.0, wait("timeout"))
	assert.Equal(t, 2.0, wait("acquired"))
	held := func(outcome string) float64 {
		return value(t, reg, "zklock_hold_seconds", map[string]string{"recipe": "mutex", "outcome": outcome})
	}
	assert.Equal(t, 1.0, held("released"))
	assert.Equal(t, 1.0, held("deleted"))
	assert.Equal(t, 0.0, value(t, reg, "zklock_holds", map[string]string{"recipe": "mutex"}))
	assert.Equal(t, 0.0, value(t, reg, "zklock_acquires_pending", map[string]string{"recipe": "mutex"}))
	assert.Equal(t, 0.0, value(t, reg, "zklock_observer_dropped_events_total", map[string]string{}))
}

// A waiter is pending until its outcome; a Semaphore's acquire of two
// leases is one pending acquire and two holds.
func TestCollectorPendingAndLeases(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	col := zklockprom.New(zklockprom.Options{})
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(col))
	c, events := obstest.Observed(t, cluster, col.Observe)
	bg := context.Background()

	s, err := zklock.NewSemaphore(c, root+"/sem", 3)
	require.NoError(t, err)
	leases, err := s.AcquireN(bg, 2)
	require.NoError(t, err)
	obstest.Until(t, events, zklock.EventAcquired)
	obstest.Until(t, events, zklock.EventAcquired)
	sem := map[string]string{"recipe": "semaphore"}
	assert.Equal(t, 2.0, value(t, reg, "zklock_holds", sem))
	assert.Equal(t, 0.0, value(t, reg, "zklock_acquires_pending", sem))

	waiting := make(chan error, 1)
	go func() {
		l, err := s.AcquireN(bg, 2)
		if err == nil {
			err = s.ReturnAll(l)
		}
		waiting <- err
	}()
	obstest.Until(t, events, zklock.EventAcquireStarted)
	assert.Equal(t, 1.0, value(t, reg, "zklock_acquires_pending", sem), "the second acquire waits")
	require.NoError(t, s.ReturnAll(leases))
	require.NoError(t, <-waiting)
	assert.Equal(t, 0.0, value(t, reg, "zklock_acquires_pending", sem))
}

// PathLabel adds the lock's path; Namespace and ConstLabels apply to every
// metric.
func TestCollectorOptions(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	col := zklockprom.New(zklockprom.Options{Namespace: "jobs", PathLabel: true, ConstLabels: prometheus.Labels{"service": "scheduler"}})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	c, events := obstest.Observed(t, cluster, col.Observe)
	m, err := zklock.NewMutex(c, root+"/a")
	require.NoError(t, err)
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.Release())
	obstest.Until(t, events, zklock.EventReleased)
	labels := map[string]string{"recipe": "mutex", "path": root + "/a", "outcome": "acquired", "service": "scheduler"}
	assert.Equal(t, 1.0, value(t, reg, "jobs_acquire_wait_seconds", labels))
}
