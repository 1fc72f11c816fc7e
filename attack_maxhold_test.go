package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// A MultiLock taken under ContextWithMaxHold bounds its members' holds, but
// its hold's context, like every hold's, does not pass the bound on: an
// acquire made with it is unbounded. A control hold with twice the bound,
// taken after the nested one, ends only after the nested one would have.
func TestIntegration_MaxHoldPerCallNotInheritedThroughMultiLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	bg := context.Background()
	ml := zklock.NewMultiLock(e.mutex(c, "/a"), e.mutex(c, "/b"))
	hd, err := ml.Lock(zklock.ContextWithMaxHold(bg, maxHoldTest))
	require.NoError(t, err)
	nested, err := e.mutex(c, "/nested").Lock(hd.Context())
	require.NoError(t, err)
	control, err := e.mutex(c, "/control").Lock(zklock.ContextWithMaxHold(bg, 2*maxHoldTest))
	require.NoError(t, err)
	for _, h := range []*zklock.Hold{hd, control} {
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the call's bound did not end the hold")
		}
		require.ErrorIs(t, h.Err(), zklock.ErrMaxHold)
		require.ErrorIs(t, h.Release(), zklock.ErrLockLost)
	}
	assert.NoError(t, nested.Err(), "the nested acquire had no bound of its own")
	_ = nested.Release()
}
