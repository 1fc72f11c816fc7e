package zklockotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/obstest"
	"github.com/zklock/zklock/zklockotel"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// setup returns an Observer on in-memory providers, a Client it observes,
// and a channel that receives each event once the Observer has seen it.
func setup(t *testing.T, cluster *zktest.Cluster, opts zklockotel.Options) (*sdkmetric.ManualReader, *tracetest.SpanRecorder, *zklock.Client, <-chan zklock.Event) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	opts.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs, err := zklockotel.New(opts)
	require.NoError(t, err)
	c, events := obstest.Observed(t, cluster, obs.Observe)
	return reader, spans, c, events
}

// collect returns, by instrument name, each data point's value (a sum's
// value, a histogram's count) by its attribute set.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]map[attribute.Set]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]map[attribute.Set]float64{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, zklockotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			points := map[attribute.Set]float64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					points[p.Attributes] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points[p.Attributes] = float64(p.Count)
				}
			}
			out[m.Name] = points
		}
	}
	return out
}

func attrs(kv ...attribute.KeyValue) attribute.Set { return attribute.NewSet(kv...) }

// Busy, timed-out and granted acquires, and released and lost holds, are
// counted by recipe and outcome; each acquire is one span with its
// outcome, an error status for the timeout, none for the busy Try.
func TestObserverMetricsAndSpans(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	reader, spans, c, events := setup(t, cluster, zklockotel.Options{})
	granted := obstest.Outcomes(t, cluster, c, events, root+"/job", func() {})

	mutex := zklockotel.RecipeKey.String("mutex")
	got := collect(t, reader)
	assert.Equal(t, map[attribute.Set]float64{
		attrs(mutex, zklockotel.OutcomeKey.String("busy")):     1,
		attrs(mutex, zklockotel.OutcomeKey.String("timeout")):  1,
		attrs(mutex, zklockotel.OutcomeKey.String("acquired")): 2,
	}, got["zklock.acquire.wait_time"])
	assert.Equal(t, map[attribute.Set]float64{
		attrs(mutex, zklockotel.OutcomeKey.String("released")): 1,
		attrs(mutex, zklockotel.OutcomeKey.String("deleted")):  1,
	}, got["zklock.hold.use_time"])
	assert.Equal(t, map[attribute.Set]float64{attrs(mutex): 1}, got["zklock.acquire.timeouts"])
	assert.Equal(t, map[attribute.Set]float64{attrs(mutex): 0}, got["zklock.hold.count"])
	assert.Equal(t, map[attribute.Set]float64{attrs(mutex): 0}, got["zklock.acquire.pending_requests"])

	ended := spans.Ended()
	require.Len(t, ended, 4, "one span per acquire")
	outcomes := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		assert.Equal(t, "zklock.acquire", s.Name())
		for _, kv := range s.Attributes() {
			if kv.Key == zklockotel.OutcomeKey {
				outcomes[kv.Value.AsString()] = s
			}
		}
	}
	assert.Equal(t, codes.Unset, outcomes["busy"].Status().Code, "a busy Try is an answer, not an error")
	assert.Equal(t, codes.Error, outcomes["timeout"].Status().Code)
	assert.GreaterOrEqual(t, outcomes["timeout"].EndTime().Sub(outcomes["timeout"].StartTime()), 100*time.Millisecond,
		"the span lasts the wait")
	assert.Contains(t, outcomes["acquired"].Attributes(), zklockotel.PathKey.String(root+"/job"))
	assert.Contains(t, ended[2].Attributes(), zklockotel.NodeKey.String(granted.Node))
}

// PathAttribute adds the lock's path to the metrics.
func TestObserverPathAttribute(t *testing.T) {
	t.Parallel()
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	reader, _, c, events := setup(t, cluster, zklockotel.Options{PathAttribute: true})
	s, err := zklock.NewSemaphore(c, root+"/sem", 2)
	require.NoError(t, err)
	leases, err := s.AcquireN(context.Background(), 2)
	require.NoError(t, err)
	obstest.Until(t, events, zklock.EventAcquired)
	obstest.Until(t, events, zklock.EventAcquired)
	sem, path := zklockotel.RecipeKey.String("semaphore"), zklockotel.PathKey.String(root+"/sem")
	got := collect(t, reader)
	assert.Equal(t, map[attribute.Set]float64{attrs(sem, path): 2}, got["zklock.hold.count"], "two leases")
	assert.Equal(t, map[attribute.Set]float64{attrs(sem, path): 0}, got["zklock.acquire.pending_requests"], "one acquire, settled once")
	require.NoError(t, s.ReturnAll(leases))
}

// An acquire whose deadline passed while its Client was not connected is
// filed under "connection" (zklock.CauseConnection), not "timeout", and
// still counts among the acquire timeouts: the counter is of deadlines
// reached, whatever kept the acquire from the lock. The events are fed
// directly: the Client's own side of it is tested in the root package
// (TestIntegration_AcquireTimesOutWhileDown).
func TestObserverOfflineTimeoutCountsAsTimeout(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	obs, err := zklockotel.New(zklockotel.Options{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		TracerProvider: sdktrace.NewTracerProvider(),
	})
	require.NoError(t, err)
	start := time.Now()
	ev := zklock.Event{ID: 1, Recipe: zklock.RecipeMutex, Path: "/locks/job", Time: start}
	ev.Kind = zklock.EventAcquireStarted
	obs.Observe(ev)
	ev.Kind, ev.Time, ev.Wait, ev.Cause = zklock.EventAcquireFailed, start.Add(time.Second), time.Second, zklock.CauseConnection
	ev.Err = fmt.Errorf("zklock: acquire /locks/job: %w; %w for 1s", context.DeadlineExceeded, zklock.ErrNotConnected)
	obs.Observe(ev)

	mutex := zklockotel.RecipeKey.String("mutex")
	got := collect(t, reader)
	assert.Equal(t, map[attribute.Set]float64{attrs(mutex, zklockotel.OutcomeKey.String("connection")): 1}, got["zklock.acquire.wait_time"])
	assert.Equal(t, map[attribute.Set]float64{attrs(mutex): 1}, got["zklock.acquire.timeouts"])
}
