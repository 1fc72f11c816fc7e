package zklock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// A session that the test kit's Link.ExpireSession ends is reported to
// the user as a lost session, under either error policy, as Curator's
// KillSession reports it: the hold ends with an error that says the
// session was lost (the Observer's cause is CauseSession, not
// CauseConnection), the listeners see Lost with no Suspended before it,
// and the Client comes back with a new session, its node gone.
func TestIntegration_ExpireSessionReportsSessionLost(t *testing.T) {
	for _, policy := range []zklock.ErrorPolicy{zklock.StandardPolicy, zklock.SessionPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			link := e.link()
			events := make(chan zklock.Event, 100)
			c := e.client(zklock.WithErrorPolicy(policy),
				zklock.WithObserver(func(ev zklock.Event) { events <- ev }),
				zklock.WithDialer(link.Dial))
			states := make(chan zklock.ConnectionState, 100)
			defer c.Listen(func(s zklock.ConnectionState) { states <- s })()
			waitStates(t, states, 5*time.Second, zklock.StateConnected)
			m := e.mutex(c, "/expire")
			h, err := m.Lock(context.Background())
			require.NoError(t, err)
			node, old := h.Path(), zklock.ConnOf(c).SessionID()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, link.ExpireSession(ctx))
			waitDone(t, h.Context(), 10*time.Second)
			require.ErrorIs(t, h.Err(), zklock.ErrLockLost)
			assert.Contains(t, h.Err().Error(), "session lost", "the hold says its session was lost")
			assert.NotContains(t, h.Err().Error(), "suspended")
			lost := nextEvent(t, events, zklock.EventLost, 5*time.Second)
			assert.Equal(t, zklock.CauseSession, lost.Cause, "the Observer's cause: %v", lost.Err)
			assert.ErrorIs(t, h.Release(), zklock.ErrLockLost)

			seen := nextStates(t, states, 10*time.Second, zklock.StateReconnected)
			require.Equal(t, zklock.StateLost, seen[0], "the first change after the expiry: %v", seen)
			assert.NotContains(t, seen, zklock.StateSuspended, "no suspension is reported: %v", seen)
			assert.NotEqual(t, old, zklock.ConnOf(c).SessionID(), "a new session")
			ok, _, err := e.admin.Exists(node)
			require.NoError(t, err)
			assert.False(t, ok, "the expired session's node %s is gone", node)

			h, err = m.Lock(ctx)
			require.NoError(t, err, "the new session serves")
			require.NoError(t, h.Release())
		})
	}
}

// nextStates reads states from a Listen callback's channel until last
// comes, and returns them all, or fails the test after d.
func nextStates(t *testing.T, states <-chan zklock.ConnectionState, d time.Duration, last zklock.ConnectionState) []zklock.ConnectionState {
	t.Helper()
	deadline := time.After(d)
	var seen []zklock.ConnectionState
	for !slices.Contains(seen, last) {
		select {
		case s := <-states:
			seen = append(seen, s)
		case <-deadline:
			t.Fatalf("listener saw %v within %v; no %v", seen, d, last)
		}
	}
	return seen
}
