package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

func TestRetryPolicies(t *testing.T) {
	t.Parallel()
	eb := zklock.ExponentialBackoff{Base: 10e6, MaxRetries: 2, MaxSleep: 25e6}
	for i := 0; i < 2; i++ {
		w, ok := eb.AllowRetry(i, 0)
		require.True(t, ok)
		assert.True(t, w >= 10e6 && w <= 25e6, "wait %v", w)
	}
	_, ok := eb.AllowRetry(2, 0)
	assert.False(t, ok)

	n := zklock.RetryNTimes{N: 1, Sleep: 5}
	w, ok := n.AllowRetry(0, 0)
	assert.True(t, ok)
	assert.EqualValues(t, 5, w)
	_, ok = n.AllowRetry(1, 0)
	assert.False(t, ok)

	u := zklock.RetryUntilElapsed{Max: 100, Sleep: 7}
	_, ok = u.AllowRetry(50, 99)
	assert.True(t, ok)
	_, ok = u.AllowRetry(0, 100)
	assert.False(t, ok)
}

// A negative retry count (a caller's bug) never gives a negative wait.
func TestExponentialBackoff_NegativeRetries(t *testing.T) {
	t.Parallel()
	p := zklock.ExponentialBackoff{Base: 1e6, MaxRetries: 3}
	for _, retries := range []int{-1, -5} {
		var (
			wait time.Duration
			ok   bool
		)
		if noPanic(t, "AllowRetry", func() { wait, ok = p.AllowRetry(retries, 0) }) {
			assert.True(t, !ok || wait >= 0, "AllowRetry(%d, 0) = %v, %v", retries, wait, ok)
		}
	}
}

// Only connection-level failures are retried. A failed write reaches the
// caller as the socket's error; the context's own errors must never be
// retried (context.DeadlineExceeded is a net.Error as well).
func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{zk.ErrConnectionClosed, true},
		{fmt.Errorf("list /a: %w", zk.ErrConnectionClosed), true},
		{zk.ErrNoServer, true},
		{zk.ErrSessionExpired, true},
		{zk.ErrSessionMoved, true},
		{brokenPipe, true},
		{fmt.Errorf("create /a: %w", brokenPipe), true},
		{io.EOF, true},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{fmt.Errorf("%w: %w", context.DeadlineExceeded, errors.New("cause")), false},
		{zk.ErrNoNode, false},
		{zk.ErrNodeExists, false},
		{zk.ErrNoAuth, false},
		{zklock.ErrLockLost, false},
		{nil, false},
	} {
		assert.Equal(t, tc.want, zklock.Retryable(tc.err), "%v", tc.err)
	}
}
