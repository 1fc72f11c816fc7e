package zklock_test

import (
	"testing"

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
