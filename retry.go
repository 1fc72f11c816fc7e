package zklock

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"
)

// RetryPolicy decides whether a failed operation is tried again. The Client
// consults it for ZooKeeper operations that fail with a connection loss, and
// the lock engine consults it before it re-creates a lock node that vanished
// while it waited (for example after a session expiry). It does not bound
// a blocking acquire's wait for the connection, which only the acquire's
// context bounds (see [WithRetryPolicy]).
//
// AllowRetry is called with the number of retries made so far (0 before the
// first retry) and the time elapsed since the first attempt. It returns how
// long to wait before the next attempt, and false to give up. Implementations
// must be safe for concurrent use.
type RetryPolicy interface {
	AllowRetry(retries int, elapsed time.Duration) (wait time.Duration, ok bool)
}

// ExponentialBackoff retries up to MaxRetries times, waiting a random
// multiple of Base that grows exponentially with the number of retries, as
// Curator's ExponentialBackoffRetry does. MaxRetries is capped at 29.
type ExponentialBackoff struct {
	Base       time.Duration // unit of the wait; must be positive
	MaxRetries int           // retries allowed after the first attempt
	MaxSleep   time.Duration // upper bound of one wait; 0 means no bound
}

// AllowRetry implements [RetryPolicy].
func (p ExponentialBackoff) AllowRetry(retries int, _ time.Duration) (time.Duration, bool) {
	if retries >= min(p.MaxRetries, 29) {
		return 0, false
	}
	retries = max(retries, 0)
	n := time.Duration(max(1, rand.IntN(1<<(retries+1))))
	wait := p.Base * n
	if p.Base > 0 && wait/n != p.Base { // overflow
		wait = time.Duration(math.MaxInt64)
	}
	if p.MaxSleep > 0 && wait > p.MaxSleep {
		wait = p.MaxSleep
	}
	return wait, true
}

// RetryNTimes retries N times, waiting Sleep before each retry.
type RetryNTimes struct {
	N     int           // retries allowed after the first attempt
	Sleep time.Duration // wait before each retry
}

// AllowRetry implements [RetryPolicy].
func (p RetryNTimes) AllowRetry(retries int, _ time.Duration) (time.Duration, bool) {
	return p.Sleep, retries < p.N
}

// RetryUntilElapsed retries, waiting Sleep before each retry, for as long as
// less than Max has elapsed since the first attempt.
type RetryUntilElapsed struct {
	Max   time.Duration // total time after which no retry starts
	Sleep time.Duration // wait before each retry
}

// AllowRetry implements [RetryPolicy].
func (p RetryUntilElapsed) AllowRetry(_ int, elapsed time.Duration) (time.Duration, bool) {
	return p.Sleep, elapsed < p.Max
}

// retrier walks one operation through a RetryPolicy.
type retrier struct {
	policy  RetryPolicy
	start   time.Time
	retries int
}

func newRetrier(p RetryPolicy) *retrier {
	return &retrier{policy: p, start: time.Now()}
}

// next waits for the policy's back-off and reports whether another attempt
// may start. It returns false when the policy gives up, and ctx.Err() when
// ctx or done ends the wait first.
func (r *retrier) next(ctx context.Context, done <-chan struct{}) (bool, error) {
	wait, ok := r.policy.AllowRetry(r.retries, time.Since(r.start))
	if !ok {
		return false, nil
	}
	r.retries++
	if wait <= 0 {
		return true, ctx.Err()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-done:
		return false, ErrClosed
	}
}

// again waits for the policy's back-off before another attempt after what
// (such as "lease /a/leases/x") vanished. It returns nil to go on, ctx's
// error or ErrClosed if the wait ended early, and an error wrapping
// zk.ErrNoNode when the policy gives up.
func (r *retrier) again(ctx context.Context, done <-chan struct{}, what string) error {
	ok, err := r.next(ctx, done)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s vanished and the retry policy gave up: %w", what, zk.ErrNoNode)
	}
	return nil
}
