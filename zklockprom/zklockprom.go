// Package zklockprom exports the lock events of zklock Clients as
// Prometheus metrics, through client_golang collectors.
//
// It is a module of its own, so that zklock's users who do not use
// Prometheus inherit none of its dependencies. Register a Collector, and
// pass its Observe to every Client that it should count:
//
//	col := zklockprom.New(zklockprom.Options{})
//	prometheus.MustRegister(col)
//	c, err := zklock.Connect(servers, zklock.WithObserver(col.Observe))
//
// # Metrics
//
// Their names follow Prometheus's conventions (base units, _seconds,
// _total) and their meaning OpenTelemetry's database connection-pool
// metrics (wait time, use time, pending requests, timeouts), with an
// acquire in the place of a connection request and a hold in the place of
// a connection in use:
//
//	zklock_acquire_wait_seconds{recipe,outcome}   histogram  from an acquire's start to its outcome
//	zklock_acquires_pending{recipe}               gauge      acquires queued, without an outcome yet
//	zklock_holds{recipe}                          gauge      holds that stand
//	zklock_hold_seconds{recipe,outcome}           histogram  how long each hold lasted, by how it ended
//	zklock_revocations_requested_total{recipe}    counter    revocation requests to holders
//	zklock_delete_retries_total                   counter    deletes of lock nodes retried in the background
//	zklock_observer_dropped_events_total          counter    events a Client dropped because its Observer fell behind
//
// recipe is the [zklock.Recipe] ("mutex", "read", "write", "semaphore",
// "semaphore-mutex", "multi", "election", "selector"). An acquire's
// outcome is "acquired" or why it failed ([zklock.Cause]: "busy",
// "timeout", "canceled", "closed", "connection", "other"): the count of
// zklock_acquire_wait_seconds{outcome="timeout"} is the pool metrics'
// timeouts on busy locks; a deadline that passed while the Client was not
// connected counts under "connection". A hold's outcome is "released" or why it was lost ("deleted",
// "session", "connection", "closed", "max-hold", "other"). These labels have a few
// values each; the lock's path, whose values are as many as the locks,
// is a label only when Options.PathLabel asks for it.
//
// The gauges follow the events: if a Client drops events (its Observer
// fell more than 1024 behind, counted by the dropped-events counter), they
// may drift until the process restarts.
package zklockprom

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zklock/zklock"
)

// Options configure a Collector. The zero value is the defaults.
type Options struct {
	// Namespace prefixes every metric's name; "" means "zklock".
	Namespace string
	// PathLabel adds the lock's path (Event.Path) as the label "path" to
	// every metric that has a recipe label. Each lock then has series of
	// its own: use it for a handful of locks, never one per job or tenant.
	PathLabel bool
	// WaitBuckets and HoldBuckets are the histograms' buckets, in seconds;
	// nil means DefaultWaitBuckets and DefaultHoldBuckets.
	WaitBuckets, HoldBuckets []float64
	// ConstLabels are added to every metric, such as the service's name.
	ConstLabels prometheus.Labels
}

// DefaultWaitBuckets are the buckets of zklock_acquire_wait_seconds: from
// an uncontended acquire on a fast network (about a millisecond) to a
// minute's wait in a queue.
var DefaultWaitBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// DefaultHoldBuckets are the buckets of zklock_hold_seconds: from a
// millisecond's critical section to an hour's leadership.
var DefaultHoldBuckets = []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}

// Collector counts the events of the Clients it observes, and is a
// prometheus.Collector of the metrics above. Its methods are safe for
// concurrent use; one Collector may observe many Clients.
type Collector struct {
	pathLabel bool
	wait      *prometheus.HistogramVec
	pending   *prometheus.GaugeVec
	holds     *prometheus.GaugeVec
	held      *prometheus.HistogramVec
	revokes   *prometheus.CounterVec
	deletes   prometheus.Counter
	dropped   prometheus.Counter

	mu   sync.Mutex
	open map[uint64][]string // acquires pending, by story ID: their recipe's labels
}

// New returns a Collector configured by opts. Register it with a
// prometheus.Registerer, and pass its Observe to zklock.WithObserver.
func New(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "zklock"
	}
	if opts.WaitBuckets == nil {
		opts.WaitBuckets = DefaultWaitBuckets
	}
	if opts.HoldBuckets == nil {
		opts.HoldBuckets = DefaultHoldBuckets
	}
	recipe := []string{"recipe"}
	if opts.PathLabel {
		recipe = append(recipe, "path")
	}
	outcome := append(append([]string(nil), recipe...), "outcome")
	cl := opts.ConstLabels
	return &Collector{
		pathLabel: opts.PathLabel,
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "acquire_wait_seconds", ConstLabels: cl,
			Help: "Time from the start of an acquire to its outcome (acquired, or why it failed), in seconds.", Buckets: opts.WaitBuckets}, outcome),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "acquires_pending", ConstLabels: cl,
			Help: "Acquires started and without an outcome yet."}, recipe),
		holds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "holds", ConstLabels: cl,
			Help: "Holds granted and not yet released or lost."}, recipe),
		held: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "hold_seconds", ConstLabels: cl,
			Help: "How long each hold lasted, by how it ended (released, or why it was lost), in seconds.", Buckets: opts.HoldBuckets}, outcome),
		revokes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "revocations_requested_total", ConstLabels: cl,
			Help: "Requests to holders to release their holds."}, recipe),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "delete_retries_total", ConstLabels: cl,
			Help: "Deletes of lock nodes that failed on the network and went on in the background."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "observer_dropped_events_total", ConstLabels: cl,
			Help: "Events a Client dropped because its Observer fell behind."}),
		open: map[uint64][]string{},
	}
}

// Observe counts ev. Pass it to zklock.WithObserver.
func (c *Collector) Observe(ev zklock.Event) {
	if ev.Dropped > 0 {
		c.dropped.Add(float64(ev.Dropped))
	}
	labels := []string{ev.Recipe.String()}
	if c.pathLabel {
		labels = append(labels, ev.Path)
	}
	switch ev.Kind {
	case zklock.EventAcquireStarted:
		c.mu.Lock()
		c.open[ev.ID] = labels
		c.mu.Unlock()
		c.pending.WithLabelValues(labels...).Inc()
	case zklock.EventAcquired:
		c.settle(ev.ID)
		c.wait.WithLabelValues(append(labels, "acquired")...).Observe(ev.Wait.Seconds())
		c.holds.WithLabelValues(labels...).Inc()
	case zklock.EventAcquireFailed:
		c.settle(ev.ID)
		c.wait.WithLabelValues(append(labels, ev.Cause.String())...).Observe(ev.Wait.Seconds())
	case zklock.EventReleased:
		c.holds.WithLabelValues(labels...).Dec()
		c.held.WithLabelValues(append(labels, "released")...).Observe(ev.Held.Seconds())
	case zklock.EventLost:
		c.holds.WithLabelValues(labels...).Dec()
		c.held.WithLabelValues(append(labels, ev.Cause.String())...).Observe(ev.Held.Seconds())
	case zklock.EventRevocationRequested:
		c.revokes.WithLabelValues(labels...).Inc()
	case zklock.EventDeleteRetried:
		c.deletes.Inc()
	}
}

// settle ends the pending acquire of story id, once: a Semaphore's acquire
// of n leases reports n grants.
func (c *Collector) settle(id uint64) {
	c.mu.Lock()
	labels, ok := c.open[id]
	delete(c.open, id)
	c.mu.Unlock()
	if ok {
		c.pending.WithLabelValues(labels...).Dec()
	}
}

// Describe sends the descriptions of the Collector's metrics to ch.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
}

// Collect sends the Collector's metrics to ch.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
}

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.wait, c.pending, c.holds, c.held, c.revokes, c.deletes, c.dropped}
}
