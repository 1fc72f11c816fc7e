package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventAcquireStarted: an Acquire (or TryAcquire) began to queue.
	EventAcquireStarted EventKind = iota
	// EventAcquired: a hold was granted; Wait and Position are set.
	EventAcquired
	// EventReleased: a hold ended with its last Release; Held is set.
	EventReleased
	// EventLost: a hold was lost; Held and Err (wrapping ErrLockLost) are
	// set.
	EventLost
	// EventRevocationRequested: someone asked the holder of Node to
	// release it.
	EventRevocationRequested
	// EventDeleteRetried: deleting Node failed on the network, and the
	// delete goes on in the background; Err is the failure.
	EventDeleteRetried
)

// String returns the name of the kind, such as "Acquired".
func (k EventKind) String() string {
	switch k {
	case EventAcquireStarted:
		return "AcquireStarted"
	case EventAcquired:
		return "Acquired"
	case EventReleased:
		return "Released"
	case EventLost:
		return "Lost"
	case EventRevocationRequested:
		return "RevocationRequested"
	case EventDeleteRetried:
		return "DeleteRetried"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one thing that happened to a lock of a Client, as an Observer
// sees it. Paths are relative to the Client's namespace.
type Event struct {
	Kind     EventKind
	Path     string        // the lock's (or semaphore's) base path; "" for EventDeleteRetried
	Node     string        // the node concerned, when there is one
	Wait     time.Duration // EventAcquired: from the start of Acquire to the grant
	Position int           // EventAcquired: nodes queued ahead when the node joined the queue
	Held     time.Duration // EventReleased, EventLost: how long the hold lasted
	Err      error         // EventLost, EventDeleteRetried: why
	Dropped  int           // events dropped before this one, because the Observer fell behind
}

// observerQueue is the length of the queue of events not yet delivered.
const observerQueue = 1024

// WithObserver sets a function that receives the Client's lock events
// (see [EventKind]), for metrics and tracing. It runs on a goroutine of
// its own, one event at a time, in order, so it cannot stall the locks: if
// it falls more than 1024 events behind, later events are dropped, and the
// next event delivered counts them in Dropped. Events that come after
// Close began may be dropped. Close waits for fn to return, so fn must not
// call Close.
func WithObserver(fn func(Event)) Option {
	return func(o *options) {
		if fn == nil {
			o.invalid("observer must not be nil")
		}
		o.observer = fn
	}
}

// observer delivers events to the Observer of a Client.
type observer struct {
	fn      func(Event)
	events  chan Event
	dropped atomic.Int64 // events dropped since the last one queued
}

// startObserver starts the delivery goroutine, if there is an Observer.
func (c *Client) startObserver() {
	if c.opts.observer == nil {
		return
	}
	c.obs = &observer{fn: c.opts.observer, events: make(chan Event, observerQueue)}
	c.goFunc(func() {
		for {
			select {
			case ev := <-c.obs.events:
				c.obs.fn(ev)
			case <-c.closing:
				return
			}
		}
	})
}

// emit logs ev and queues it for the Observer, if there is one, without
// ever waiting. Every lock event passes here, so this is the one place that
// logs them.
func (c *Client) emit(ev Event) {
	c.logEvent(ev)
	if c.obs == nil {
		return
	}
	ev.Dropped = int(c.obs.dropped.Swap(0))
	select {
	case c.obs.events <- ev:
	default:
		c.obs.dropped.Add(int64(ev.Dropped) + 1)
	}
}

// logEvent logs ev through the Client's logger: a hold's life (acquire
// started, acquired, released, revocation requested) at Debug level, a
// loss at Warn, except a loss to the Client's Close, which Close sums up
// in one record. A delete retried is logged where it happens. Nothing is
// formatted unless the logger wants the level.
func (c *Client) logEvent(ev Event) {
	level := slog.LevelDebug
	if ev.Kind == EventLost && !errors.Is(ev.Err, ErrClosed) {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if c.log == nil || !c.log.Enabled(ctx, level) {
		return
	}
	path, node := slog.String("path", ev.Path), slog.String("node", ev.Node)
	switch ev.Kind {
	case EventAcquireStarted:
		c.log.LogAttrs(ctx, level, "zklock: acquire started", path)
	case EventAcquired:
		c.log.LogAttrs(ctx, level, "zklock: acquired", path, node,
			slog.Duration("wait", ev.Wait), slog.Int("position", ev.Position))
	case EventReleased:
		c.log.LogAttrs(ctx, level, "zklock: released", path, node, slog.Duration("held", ev.Held))
	case EventLost:
		c.log.LogAttrs(ctx, level, "zklock: hold lost", path, node,
			slog.Duration("held", ev.Held), slog.Any("err", ev.Err))
	case EventRevocationRequested:
		c.log.LogAttrs(ctx, level, "zklock: revocation requested", path, node)
	}
}
