package zklock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Shutdown closes the Client gracefully, as http.Server.Shutdown closes a
// server: at once, new acquires fail with ErrClosed and acquires waiting
// in a queue end with ErrClosed, leaving no node; the holds that stand
// are left to their owners, whose Release ends them as usual (their
// contexts are not cancelled, and nothing is lost meanwhile); and once
// none stands, or ctx is done, the Client closes as Close does, which
// ends the holds still standing (lost, with ErrClosed).
//
// A re-entry of a hold that stands still succeeds meanwhile: it takes
// nothing new.
//
// Shutdown returns nil if every hold was released before ctx ended, or
// else an error wrapping ctx.Err() that says how many holds it cut short
// and of which locks. A Shutdown after Close, or a second one, waits as the
// first does; Close during a Shutdown ends it at once (the error then
// wraps ErrClosed if holds still stood).
func (c *Client) Shutdown(ctx context.Context) error {
	if c.zero() {
		return nil
	}
	if ctx == nil {
		return wrapf(ErrInvalidArgument, "shutdown: nil context")
	}
	c.drainOnce.Do(func() { c.drainCancel(ErrClosed) })
wait:
	for c.holding.Load() > 0 {
		select {
		case <-c.holdEnded: // look again
		case <-c.closing:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	n, locks := c.holding.Load(), c.lives.paths(c)
	c.Close()
	if n == 0 {
		return nil
	}
	cause := context.Cause(ctx)
	if cause == nil { // a Close ended the Shutdown before ctx did
		cause = ErrClosed
	}
	return fmt.Errorf("zklock: shutdown: %d hold(s) cut short, of %s: %w", n, locks, cause)
}

// acquisition is an acquire under way, as acquiring set it up.
type acquisition struct {
	story                      // its events
	ctx     context.Context    // what it waits under: the caller's ctx, also ended with cause ErrClosed when a Shutdown begins
	stop    context.CancelFunc // releases ctx; the acquire calls it when it returns
	maxHold time.Duration      // of the holds it grants (see maxHoldOf)
}

// acquiring begins an acquire that is not a re-entry, with ctx (not nil):
// op, such as "acquire", of path, a lock of kind r on c whose maximum hold
// time is lockMax (0: none). It begins the acquire's story, so that every
// acquire that gets this far ends in one terminal event, also when it is
// refused here, before it queues: for refused (the recipe's own refusal,
// found without I/O, such as ErrLockUpgrade; nil for none), for a bound
// ContextWithMaxHold refuses (ErrInvalidArgument), for a ctx already
// done, and with ErrClosed once a Shutdown or Close has begun, in that
// order. A refusal is reported as the story's failure, and the error
// returned, naming op and path, is the one the caller returns.
func (c *Client) acquiring(ctx context.Context, r Recipe, op, path string, lockMax time.Duration, refused error) (acquisition, error) {
	a := acquisition{story: beginStory(c, r, path)}
	err := refused
	if err == nil {
		a.maxHold, err = maxHoldOf(ctx, lockMax)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && c.drain.Err() != nil {
		err = ErrClosed
	}
	if err != nil {
		return a, a.failed(opErr(ctx, op, path, err))
	}
	actx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.drain, func() { cancel(ErrClosed) })
	a.ctx, a.stop = actx, func() { stop(); cancel(nil) }
	return a, nil
}

// shutdownErr returns err, an acquire's under actx (see acquiring), as
// ErrClosed if a Shutdown ended actx while the caller's ctx stands.
func shutdownErr(ctx, actx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return wrapf(ErrClosed, "shutting down")
	}
	return err
}

// paths returns the paths of the locks held, relative to c's namespace,
// sorted and joined with commas: at most ten, and how many more.
func (t *liveTable) paths(c *Client) string {
	t.mu.Lock()
	ps := make([]string, 0, len(t.n))
	for id := range t.n {
		ps = append(ps, c.relPath(id.path))
	}
	t.mu.Unlock()
	if len(ps) == 0 {
		return "leases or multi-locks"
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	const shown = 10
	if len(ps) > shown {
		return strings.Join(ps[:shown], ", ") + fmt.Sprintf(" and %d more", len(ps)-shown)
	}
	return strings.Join(ps, ", ")
}
