// Package zklockotel exports the lock events of zklock Clients through
// OpenTelemetry: metrics, and a span per acquire with its outcome.
//
// It is a module of its own, so that zklock's users who do not use
// OpenTelemetry inherit none of its dependencies. Make an Observer, and
// pass its Observe to every Client it should report on:
//
//	obs, err := zklockotel.New(zklockotel.Options{}) // the global providers
//	…
//	c, err := zklock.Connect(servers, zklock.WithObserver(obs.Observe))
//
// # Metrics
//
// OpenTelemetry has no conventions for locks. These follow its database
// client connection-pool metrics, with an acquire in the place of a
// connection request and a hold in the place of a connection in use:
//
//	zklock.acquire.wait_time         histogram (s)        from an acquire's start to its outcome
//	zklock.acquire.pending_requests  updowncounter        acquires started, without an outcome yet
//	zklock.acquire.timeouts          counter              acquires that ended at their context's deadline
//	zklock.hold.use_time             histogram (s)        how long each hold lasted, by how it ended
//	zklock.hold.count                updowncounter        holds that stand
//	zklock.revocation.requests       counter              revocation requests to holders
//	zklock.delete.retries            counter              deletes of lock nodes retried in the background
//	zklock.observer.dropped_events   counter              events a Client dropped because its Observer fell behind
//
// Their attributes have a few values each: zklock.recipe (the
// [zklock.Recipe]: "mutex", "read", "write", "semaphore",
// "semaphore-mutex", "multi", "election", "selector") and, on the
// histograms, zklock.outcome ("acquired" or why the acquire failed:
// "busy", "timeout", "canceled", "closed", "connection", "other"; for a
// hold, "released" or why it was lost: "deleted", "session",
// "connection", "closed", "max-hold", "other"). The lock's path, whose values are as
// many as the locks, is the attribute zklock.lock.path only when
// Options.PathAttribute asks for it.
//
// # Spans
//
// Each acquire that queues is one span, "zklock.acquire", from its start
// to its outcome, with the recipe, the lock's path, zklock.outcome, and,
// once granted, the node and its position in the queue. A failure other
// than a busy lock (a Try's expected answer) sets the span's status to
// Error, with error.type the cause. The span has no parent: an Observer
// sees events, not the caller's context.
package zklockotel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zklock/zklock"
)

// ScopeName is the instrumentation scope of the Observer's meter and
// tracer.
const ScopeName = "github.com/zklock/zklock/zklockotel"

// Options configure an Observer. The zero value is the defaults.
type Options struct {
	// MeterProvider and TracerProvider receive the metrics and spans; nil
	// means OpenTelemetry's global providers (otel.GetMeterProvider and
	// otel.GetTracerProvider).
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// PathAttribute adds the lock's path (Event.Path) to the metrics as
	// zklock.lock.path. Each lock then has series of its own: use it for a
	// handful of locks, never one per job or tenant. Spans always carry
	// the path.
	PathAttribute bool
}

// Observer turns the events of the Clients it observes into metrics and
// spans. Its methods are safe for concurrent use; one Observer may
// observe many Clients.
type Observer struct {
	pathAttr bool
	tracer   trace.Tracer
	wait     metric.Float64Histogram
	pending  metric.Int64UpDownCounter
	timeouts metric.Int64Counter
	use      metric.Float64Histogram
	holds    metric.Int64UpDownCounter
	revokes  metric.Int64Counter
	deletes  metric.Int64Counter
	dropped  metric.Int64Counter

	mu   sync.Mutex
	open map[uint64]attribute.Set // acquires pending, by story ID
}

// Attribute keys of the metrics and spans.
const (
	RecipeKey   = attribute.Key("zklock.recipe")
	OutcomeKey  = attribute.Key("zklock.outcome")
	PathKey     = attribute.Key("zklock.lock.path")
	NodeKey     = attribute.Key("zklock.lock.node")
	PositionKey = attribute.Key("zklock.lock.position")
)

// New returns an Observer that reports to opts' providers. Its error is
// the meter's, if an instrument cannot be made.
func New(opts Options) (*Observer, error) {
	mp, tp := opts.MeterProvider, opts.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	meter := mp.Meter(ScopeName)
	o := &Observer{pathAttr: opts.PathAttribute, tracer: tp.Tracer(ScopeName), open: map[uint64]attribute.Set{}}
	var err error
	if o.wait, err = meter.Float64Histogram("zklock.acquire.wait_time", metric.WithUnit("s"),
		metric.WithDescription("Time from the start of an acquire to its outcome."),
		metric.WithExplicitBucketBoundaries(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60)); err != nil {
		return nil, err
	}
	if o.pending, err = meter.Int64UpDownCounter("zklock.acquire.pending_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Acquires started and without an outcome yet.")); err != nil {
		return nil, err
	}
	if o.timeouts, err = meter.Int64Counter("zklock.acquire.timeouts", metric.WithUnit("{timeout}"),
		metric.WithDescription("Acquires that ended at their context's deadline.")); err != nil {
		return nil, err
	}
	if o.use, err = meter.Float64Histogram("zklock.hold.use_time", metric.WithUnit("s"),
		metric.WithDescription("How long each hold lasted, by how it ended."),
		metric.WithExplicitBucketBoundaries(.001, .01, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600)); err != nil {
		return nil, err
	}
	if o.holds, err = meter.Int64UpDownCounter("zklock.hold.count", metric.WithUnit("{hold}"),
		metric.WithDescription("Holds granted and not yet released or lost.")); err != nil {
		return nil, err
	}
	if o.revokes, err = meter.Int64Counter("zklock.revocation.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests to holders to release their holds.")); err != nil {
		return nil, err
	}
	if o.deletes, err = meter.Int64Counter("zklock.delete.retries", metric.WithUnit("{delete}"),
		metric.WithDescription("Deletes of lock nodes that failed on the network and went on in the background.")); err != nil {
		return nil, err
	}
	if o.dropped, err = meter.Int64Counter("zklock.observer.dropped_events", metric.WithUnit("{event}"),
		metric.WithDescription("Events a Client dropped because its Observer fell behind.")); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe reports ev. Pass it to zklock.WithObserver.
func (o *Observer) Observe(ev zklock.Event) {
	ctx := context.Background()
	if ev.Dropped > 0 {
		o.dropped.Add(ctx, int64(ev.Dropped))
	}
	kv := []attribute.KeyValue{RecipeKey.String(ev.Recipe.String())}
	if o.pathAttr {
		kv = append(kv, PathKey.String(ev.Path))
	}
	base := metric.WithAttributes(kv...)
	outcome := func(v string) metric.MeasurementOption {
		return metric.WithAttributes(append(kv, OutcomeKey.String(v))...)
	}
	switch ev.Kind {
	case zklock.EventAcquireStarted:
		o.mu.Lock()
		o.open[ev.ID] = attribute.NewSet(kv...)
		o.mu.Unlock()
		o.pending.Add(ctx, 1, base)
	case zklock.EventAcquired:
		o.settle(ctx, ev)
		o.wait.Record(ctx, ev.Wait.Seconds(), outcome("acquired"))
		o.holds.Add(ctx, 1, base)
	case zklock.EventAcquireFailed:
		o.settle(ctx, ev)
		o.wait.Record(ctx, ev.Wait.Seconds(), outcome(ev.Cause.String()))
		if errors.Is(ev.Err, context.DeadlineExceeded) { // busy (CauseTimeout) or not connected (CauseConnection)
			o.timeouts.Add(ctx, 1, base)
		}
	case zklock.EventReleased:
		o.holds.Add(ctx, -1, base)
		o.use.Record(ctx, ev.Held.Seconds(), outcome("released"))
	case zklock.EventLost:
		o.holds.Add(ctx, -1, base)
		o.use.Record(ctx, ev.Held.Seconds(), outcome(ev.Cause.String()))
	case zklock.EventRevocationRequested:
		o.revokes.Add(ctx, 1, base)
	case zklock.EventDeleteRetried:
		o.deletes.Add(ctx, 1)
	}
}

// settle ends the pending acquire of ev's story and records its span,
// once: a Semaphore's acquire of n leases reports n grants.
func (o *Observer) settle(ctx context.Context, ev zklock.Event) {
	o.mu.Lock()
	set, ok := o.open[ev.ID]
	delete(o.open, ev.ID)
	o.mu.Unlock()
	if !ok {
		return // the start was dropped, or an earlier lease settled it
	}
	o.pending.Add(ctx, -1, metric.WithAttributeSet(set))
	attrs := []attribute.KeyValue{RecipeKey.String(ev.Recipe.String()), PathKey.String(ev.Path)}
	if ev.Kind == zklock.EventAcquired {
		attrs = append(attrs, OutcomeKey.String("acquired"), NodeKey.String(ev.Node), PositionKey.Int(ev.Position))
	} else {
		attrs = append(attrs, OutcomeKey.String(ev.Cause.String()))
	}
	_, span := o.tracer.Start(ctx, "zklock.acquire", trace.WithTimestamp(ev.Time.Add(-ev.Wait)),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if ev.Kind == zklock.EventAcquireFailed && ev.Cause != zklock.CauseBusy {
		span.SetAttributes(attribute.String("error.type", ev.Cause.String()))
		span.SetStatus(codes.Error, ev.Err.Error())
	}
	span.End(trace.WithTimestamp(ev.Time))
}
