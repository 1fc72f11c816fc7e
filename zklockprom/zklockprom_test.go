package zklockprom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/zklockprom"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// observed connects a Client whose events go to col, and returns a
// channel that receives each event once col has counted it.
func observed(t *testing.T, cluster *zktest.Cluster, col *zklockprom.Collector) (*zklock.Client, <-chan zklock.Event) {
	t.Helper()
	events := make(chan zklock.Event, 1000)
	c, err := zklock.Connect(cluster.Servers(), zklock.WithObserver(func(ev zklock.Event) {
		col.Observe(ev)
		events <- ev
	}))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, events
}

// until waits for an event of kind.
func until(t *testing.T, events <-chan zklock.Event, kind zklock.EventKind) zklock.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %v event", kind)
		}
	}
}

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
	root := cluster.Root(t)
	col := zklockprom.New(zklockprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	c, events := observed(t, cluster, col)
	other, err := zklock.Connect(cluster.Servers())
	require.NoError(t, err)
	defer other.Close()
	bg := context.Background()

	m, err := zklock.NewMutex(c, root+"/job")
	require.NoError(t, err)
	om, err := zklock.NewMutex(other, root+"/job")
	require.NoError(t, err)
	held, err := om.Lock(bg)
	require.NoError(t, err)
	_, err = m.TryLock(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	until(t, events, zklock.EventAcquireFailed)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	_, err = m.Lock(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	until(t, events, zklock.EventAcquireFailed)
	require.NoError(t, held.Release())

	h, err := m.Lock(bg)
	require.NoError(t, err)
	until(t, events, zklock.EventAcquired)
	assert.Equal(t, 1.0, value(t, reg, "zklock_holds", map[string]string{"recipe": "mutex"}))
	assert.Equal(t, 0.0, value(t, reg, "zklock_acquires_pending", map[string]string{"recipe": "mutex"}))
	require.NoError(t, h.Release())
	until(t, events, zklock.EventReleased)

	h, err = m.Lock(bg)
	require.NoError(t, err)
	require.NoError(t, c.Conn().Delete(h.Path(), -1)) // an operator's delete
	until(t, events, zklock.EventLost)
	assert.True(t, errors.Is(h.Release(), zklock.ErrLockLost))

	wait := func(outcome string) float64 {
		return value(t, reg, "zklock_acquire_wait_seconds", map[string]string{"recipe": "mutex", "outcome": outcome})
	}
	assert.Equal(t, 1.0, wait("busy"))
	assert.Equal(t, 1.0, wait("timeout"))
	assert.Equal(t, 2.0, wait("acquired"))
	held2 := func(outcome string) float64 {
		return value(t, reg, "zklock_hold_seconds", map[string]string{"recipe": "mutex", "outcome": outcome})
	}
	assert.Equal(t, 1.0, held2("released"))
	assert.Equal(t, 1.0, held2("deleted"))
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
	c, events := observed(t, cluster, col)
	bg := context.Background()

	s, err := zklock.NewSemaphore(c, root+"/sem", 3)
	require.NoError(t, err)
	leases, err := s.AcquireN(bg, 2)
	require.NoError(t, err)
	until(t, events, zklock.EventAcquired)
	until(t, events, zklock.EventAcquired)
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
	until(t, events, zklock.EventAcquireStarted)
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
	c, events := observed(t, cluster, col)
	m, err := zklock.NewMutex(c, root+"/a")
	require.NoError(t, err)
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.Release())
	until(t, events, zklock.EventReleased)
	labels := map[string]string{"recipe": "mutex", "path": root + "/a", "outcome": "acquired", "service": "scheduler"}
	assert.Equal(t, 1.0, value(t, reg, "jobs_acquire_wait_seconds", labels))
}
