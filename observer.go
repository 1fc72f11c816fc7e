package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// EventKind says what an [Event] reports.
//
// Every acquire tells one story, whose events share an ID:
// EventAcquireStarted, then exactly one outcome, EventAcquireFailed or
// EventAcquired (one per hold granted: a Semaphore's Acquire of n leases
// grants n), and for each hold granted, exactly one end, EventReleased or
// EventLost, with at most some EventRevocationRequested between.
//
// An acquire refused before it queues tells its story too, started and
// failed at once: with a context already done (CauseCanceled,
// CauseTimeout), on a Client closed or shutting down (CauseClosed), and
// when the lock refuses the call (ErrLockUpgrade, ErrNotReentrant, a
// bound of [ContextWithMaxHold] or a number of leases out of range:
// CauseOther). So a count of outcomes counts every acquire. Two kinds of
// call tell none: an acquire that re-enters a hold its context carries,
// which takes nothing; and a call that is wrong in itself, before any
// lock is involved, where there may be no Client to tell: a nil context
// or function, or a lock value not made by its constructor (also a
// MultiLock with no member, a nil member, or two members that lock the
// same thing); these return ErrInvalidArgument. The story of an acquire
// refused after the Client's Close has returned reaches the Client's
// logger only: its Observer has stopped (see [WithObserver]).
type EventKind int

const (
	// EventAcquireStarted: an acquire (or a Try) began to queue.
	EventAcquireStarted EventKind = iota
	// EventAcquired: a hold was granted; Wait and Position are set.
	EventAcquired
	// EventReleased: a hold ended with its last Release; Held is set.
	EventReleased
	// EventLost: a hold was lost; Held, Cause and Err (wrapping
	// ErrLockLost) are set.
	EventLost
	// EventRevocationRequested: someone asked the holder of Node to
	// release it.
	EventRevocationRequested
	// EventDeleteRetried: deleting Node failed on the network, and the
	// delete goes on in the background; Err is the failure. A hold's
	// delete belongs to the hold's story (it comes after its end); the
	// delete of a node that never made a hold (an acquire's, cleaned up)
	// belongs to none: its ID and Recipe are 0.
	EventDeleteRetried
	// EventAcquireFailed: an acquire ended without a hold, and left no
	// node behind; Wait, Cause and Err (the error the caller got) are set.
	EventAcquireFailed
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
	case EventAcquireFailed:
		return "AcquireFailed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Recipe names the kind of lock an [Event] is about. Its String is a short
// lower-case name, fit for a metric's label.
type Recipe int

const (
	RecipeMutex          Recipe = iota + 1 // a Mutex: "mutex"
	RecipeRead                             // a ReadWriteLock's read side: "read"
	RecipeWrite                            // a ReadWriteLock's write side: "write"
	RecipeSemaphore                        // a Semaphore's lease: "semaphore"
	RecipeSemaphoreMutex                   // a SemaphoreMutex: "semaphore-mutex"
	RecipeMulti                            // a MultiLock as a whole (reported to its first member's Client; each member tells its own story too): "multi"
	RecipeElection                         // an Election's leadership: "election"
	RecipeSelector                         // a Selector's term: "selector"
)

// String returns the recipe's label, such as "mutex", or "" for the zero
// Recipe (that of an EventDeleteRetried of no story).
func (r Recipe) String() string {
	switch r {
	case 0:
		return ""
	case RecipeMutex:
		return "mutex"
	case RecipeRead:
		return "read"
	case RecipeWrite:
		return "write"
	case RecipeSemaphore:
		return "semaphore"
	case RecipeSemaphoreMutex:
		return "semaphore-mutex"
	case RecipeMulti:
		return "multi"
	case RecipeElection:
		return "election"
	case RecipeSelector:
		return "selector"
	}
	return fmt.Sprintf("Recipe(%d)", int(r))
}

// Cause says why an acquire failed or a hold was lost. Its String is a
// short lower-case name, fit for a metric's label.
type Cause int

const (
	CauseNone       Cause = iota // no failure: ""
	CauseBusy                    // a Try found the lock held (ErrLocked): "busy"
	CauseTimeout                 // the acquire's context passed its deadline while connected (a busy lock): "timeout"
	CauseCanceled                // the acquire's context was cancelled: "canceled"
	CauseClosed                  // the Client closed (ErrClosed): "closed"
	CauseConnection              // no connection, or (StandardPolicy) the connection suspended; also an acquire whose deadline passed while not connected (ErrNotConnected): "connection"
	CauseSession                 // the session was lost: "session"
	CauseDeleted                 // the held node was deleted, by someone else or a reaper: "deleted"
	CauseMaxHold                 // the hold's maximum hold time passed (ErrMaxHold): "max-hold"
	CauseOther                   // anything else, such as zk.ErrNoAuth: "other"
)

// String returns the cause's label, such as "busy", or "" for CauseNone.
func (c Cause) String() string {
	if c >= 0 && int(c) < len(causeNames) {
		return causeNames[c]
	}
	return fmt.Sprintf("Cause(%d)", int(c))
}

var causeNames = [...]string{"", "busy", "timeout", "canceled", "closed", "connection", "session", "deleted", "max-hold", "other"}

// causeOf classifies err, the error of a failed acquire or of a loss.
func causeOf(err error) Cause {
	switch {
	case err == nil:
		return CauseNone
	case errors.Is(err, ErrClosed):
		return CauseClosed
	case errors.Is(err, ErrLocked):
		return CauseBusy
	case errors.Is(err, ErrMaxHold):
		return CauseMaxHold
	case errors.Is(err, errLossDeleted):
		return CauseDeleted
	case errors.Is(err, errLossSession), errors.Is(err, zk.ErrSessionExpired):
		return CauseSession
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(err, ErrNotConnected):
		return CauseConnection // an outage, not a busy lock; a cancel stays CauseCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return CauseTimeout
	case errors.Is(err, context.Canceled):
		return CauseCanceled
	case errors.Is(err, errLossSuspended), errors.Is(err, ErrNotConnected), retryable(err):
		return CauseConnection
	}
	return CauseOther
}

// summedUp reports whether the losses of cause are logged in one record
// for many holds, rather than one each: Close's, and a connection change's.
func summedUp(cause Cause) bool {
	return cause == CauseClosed || cause == CauseSession || cause == CauseConnection
}

// The causes of a loss that carry no error of their own; each is joined
// with ErrLockLost.
var (
	errLossSession   = errors.New("zklock: session lost")
	errLossSuspended = errors.New("zklock: connection suspended")
	errLossDeleted   = errors.New("zklock: node deleted")
)

// Event is one thing that happened to a lock of a Client, as an Observer
// sees it. Paths are relative to the Client's namespace.
type Event struct {
	Kind     EventKind
	Time     time.Time     // when it happened (an Observer runs later)
	ID       uint64        // the story's, unique in the process: the same for an acquire's events and its holds' (see EventKind); 0 for an EventDeleteRetried of no story
	Recipe   Recipe        // the kind of lock; 0 for an EventDeleteRetried of no story
	Path     string        // the lock's (or semaphore's) base path; a MultiLock's members', joined with commas; "" for an EventDeleteRetried of no story
	Node     string        // the node concerned, when there is one
	Wait     time.Duration // EventAcquired, EventAcquireFailed: from the start of the acquire to its outcome
	Position int           // EventAcquired: nodes queued ahead when the node joined the queue
	Held     time.Duration // EventReleased, EventLost: how long the hold lasted
	Cause    Cause         // EventAcquireFailed, EventLost: why
	Err      error         // EventAcquireFailed, EventLost, EventDeleteRetried: the error
	Dropped  int           // events dropped before this one, because the Observer fell behind
}

// story is one acquire's part in the Observer's events: every event of the
// acquire, and of each hold it grants, carries its ID and recipe.
type story struct {
	c      *Client // where the events go; nil: nowhere
	id     uint64
	recipe Recipe
	path   string
	start  time.Time
}

// stories is the last story's ID: IDs are unique in the process, so that
// one Observer can serve several Clients.
var stories atomic.Uint64

// beginStory starts the story of an acquire on c (nil: one that no Client
// hears) and reports EventAcquireStarted.
func beginStory(c *Client, r Recipe, path string) story {
	st := story{c: c, recipe: r, path: path, start: time.Now()}
	if c != nil {
		st.id = stories.Add(1)
		if c.obs != nil {
			c.obs.open.Add(1)
		}
	}
	st.emit(Event{Kind: EventAcquireStarted})
	return st
}

// opened counts n more events the story owes (the ends of holds granted),
// which Close waits for (see observer.drain).
func (st story) opened(n int64) {
	if st.c != nil && st.c.obs != nil {
		st.c.obs.open.Add(n)
	}
}

// settle marks one event the story owed reported: its outcome, or a
// hold's end.
func (st story) settle() {
	if st.c == nil || st.c.obs == nil {
		return
	}
	if st.c.obs.open.Add(-1) == 0 {
		select {
		case st.c.obs.settled <- struct{}{}:
		default:
		}
	}
}

// emit reports ev as an event of the story.
func (st story) emit(ev Event) {
	if st.c == nil {
		return
	}
	ev.ID, ev.Recipe = st.id, st.recipe
	if ev.Path == "" {
		ev.Path = st.path
	}
	st.c.emit(ev)
}

// failed reports the acquire's failure with err, the caller's error, and
// returns err.
func (st story) failed(err error) error {
	st.emit(Event{Kind: EventAcquireFailed, Wait: time.Since(st.start), Cause: causeOf(err), Err: err})
	st.settle()
	return err
}

// granted reports each of holds granted (and, if it has already ended,
// its end), which is the story's outcome.
func (st story) granted(holds ...*hold) {
	for _, h := range holds {
		h.reportGranted()
	}
	st.settle()
}

// observerQueue is the length of the queue of events not yet delivered.
const observerQueue = 1024

// WithObserver sets a function that receives the Client's lock events
// (see [EventKind]), for metrics and tracing. It runs on a goroutine of
// its own, one event at a time, in order, so it cannot stall the locks: if
// it falls more than 1024 events behind, later events are dropped, and the
// next event delivered counts them in Dropped. Close delivers what is
// queued, and the outcomes of the acquires it ends or refuses
// (EventAcquireFailed with CauseClosed) and the holds it ends (EventLost),
// waiting up to a second for acquires still returning; events after that
// (such as those of an acquire refused once Close has returned) are
// dropped. Close waits for fn to return, so fn must not call Close.
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
	dropped atomic.Int64  // events dropped since the last one queued
	open    atomic.Int64  // events that stories owe: outcomes, and ends of holds granted
	settled chan struct{} // signalled when open falls to 0
}

// closeDrain bounds how long Close waits for the outcomes of the acquires
// and the ends of the holds it ends (see WithObserver).
const closeDrain = time.Second

// startObserver starts the delivery goroutine, if there is an Observer.
func (c *Client) startObserver() {
	if c.opts.observer == nil {
		return
	}
	obs := &observer{fn: c.opts.observer, events: make(chan Event, observerQueue), settled: make(chan struct{}, 1)}
	c.obs = obs
	c.goFunc(func() {
		for {
			select {
			case ev := <-obs.events:
				obs.fn(ev)
			case <-c.closing:
				obs.drain()
				return
			}
		}
	})
}

// drain delivers, once the Client is closing, what is queued, what the
// acquires still open report as they return and the ends of the holds
// that Close ends, until no story owes an event and the queue is empty,
// or for closeDrain at most.
func (obs *observer) drain() {
	limit := time.NewTimer(closeDrain)
	defer limit.Stop()
	for {
		select {
		case ev := <-obs.events:
			obs.fn(ev)
			continue
		default:
		}
		if obs.open.Load() == 0 && len(obs.events) == 0 {
			return
		}
		select {
		case ev := <-obs.events:
			obs.fn(ev)
		case <-obs.settled:
		case <-limit.C:
			return
		}
	}
}

// emit logs ev and queues it for the Observer, if there is one, without
// ever waiting. Every lock event passes here, so this is the one place that
// logs them.
func (c *Client) emit(ev Event) {
	c.logEvent(ev)
	if c.obs == nil {
		return
	}
	ev.Time = time.Now()
	ev.Dropped = int(c.obs.dropped.Swap(0))
	select {
	case c.obs.events <- ev:
	default:
		c.obs.dropped.Add(int64(ev.Dropped) + 1)
	}
}

// logEvent logs ev through the Client's logger: a story's events at
// Debug level, a loss at Warn, except a loss to the Client's Close, which
// Close sums up in one record, a loss to a change of the connection,
// which the Client sums up in one record per change (see holdWatch.lose),
// and a MultiLock's, whose member's loss was logged. A delete retried is
// logged where it happens. Nothing is formatted unless the logger wants
// the level.
func (c *Client) logEvent(ev Event) {
	level := slog.LevelDebug
	if ev.Kind == EventLost && ev.Recipe != RecipeMulti && !summedUp(ev.Cause) {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if c.log == nil || !c.log.Enabled(ctx, level) {
		return
	}
	path, node := slog.String("path", ev.Path), slog.String("node", ev.Node)
	recipe, id := slog.String("recipe", ev.Recipe.String()), slog.Uint64("id", ev.ID)
	switch ev.Kind {
	case EventAcquireStarted:
		c.log.LogAttrs(ctx, level, "zklock: acquire started", path, recipe, id)
	case EventAcquired:
		c.log.LogAttrs(ctx, level, "zklock: acquired", path, node, recipe, id,
			slog.Duration("wait", ev.Wait), slog.Int("position", ev.Position))
	case EventAcquireFailed:
		c.log.LogAttrs(ctx, level, "zklock: acquire failed", path, recipe, id,
			slog.Duration("wait", ev.Wait), slog.String("cause", ev.Cause.String()), slog.Any("err", ev.Err))
	case EventReleased:
		c.log.LogAttrs(ctx, level, "zklock: released", path, node, recipe, id, slog.Duration("held", ev.Held))
	case EventLost:
		c.log.LogAttrs(ctx, level, "zklock: hold lost", path, node, recipe, id,
			slog.Duration("held", ev.Held), slog.String("cause", ev.Cause.String()), slog.Any("err", ev.Err))
	case EventRevocationRequested:
		c.log.LogAttrs(ctx, level, "zklock: revocation requested", path, node, recipe, id)
	}
}
