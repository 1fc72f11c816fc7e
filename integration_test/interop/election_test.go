package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// A Go Election and two Java LeaderLatches on one path: exactly one
// leader at a time, leadership handed over Java → Go → Java, and both
// sides see the same participants, ids and leader.
func TestIntegration_ElectionWithLeaderLatch(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.peer.NewLeaderLatch("j1", e.path, "java-1")
	require.True(t, e.peer.StartLatchAwait("j1", holdTimeout).Wait(), "the first Java latch leads")

	el, err := zklock.NewElection(e.client, e.path, "go-1")
	require.NoError(t, err)
	goLead := make(chan error, 1)
	var hd *zklock.Hold
	go func() {
		var err error
		hd, err = el.Campaign(ctx)
		goLead <- err
	}()
	waitLatchParticipants(t, e, 2)
	e.peer.NewLeaderLatch("j2", e.path, "java-2")
	want := []string{"java-1*", "go-1", "java-2"}
	waitLatchParticipants(t, e, 3)
	assert.Equal(t, want, e.peer.LatchParticipants("j1"), "Curator's view")
	ps, err := el.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 3)
	for i, p := range ps {
		assert.Equal(t, want[i], p.ID+map[bool]string{true: "*"}[p.Leader], "zklock's view")
		assert.Regexp(t, `^_c_[0-9a-f-]{36}-latch-[0-9]{10}$`, p.Node[len(e.path)+1:])
	}
	id, err := el.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "java-1", id)
	select {
	case <-goLead:
		t.Fatal("Go leads beside a Java leader")
	default:
	}

	e.peer.CloseLatch("j1") // Java → Go
	select {
	case err := <-goLead:
		require.NoError(t, err)
	case <-time.After(holdTimeout):
		t.Fatal("Go did not lead after the Java leader closed")
	}
	assert.Equal(t, "go-1", e.peer.LatchLeader("j2"))
	assert.False(t, e.peer.LatchHasLeadership("j2"))

	next := e.peer.StartLatchAwait("j2", holdTimeout)
	require.NoError(t, hd.Release()) // Go → Java
	require.True(t, next.Wait(), "Java leads after Go resigned")
	id, err = el.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "java-2", id)
	e.peer.CloseLatch("j2")
	require.Eventually(t, func() bool {
		_, err := el.Leader(ctx)
		return err != nil
	}, cleanTimeout, 10*time.Millisecond)
	_, err = el.Leader(ctx)
	require.ErrorIs(t, err, zklock.ErrNoLeader)
}

// waitLatchParticipants waits until Curator sees n participants.
func waitLatchParticipants(t *testing.T, e *env, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(e.peer.LatchParticipants("j1")) == n }, holdTimeout, 20*time.Millisecond)
}

// A Go Selector and a Java InterProcessMutex (what a LeaderSelector runs)
// on one path exclude each other: the Selector leads only while Java does
// not hold, and Java waits while the Selector leads.
func TestIntegration_SelectorWithCuratorMutex(t *testing.T) {
	e := setup(t)
	e.peer.NewMutex("j", e.path)
	require.True(t, e.peer.Acquire("j", holdTimeout))
	s, err := zklock.NewSelector(e.client, e.path, "go-selector")
	require.NoError(t, err)
	leading := make(chan struct{})
	resign := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Lead(context.Background(), func(ctx context.Context) error {
			close(leading)
			<-resign
			return nil
		})
	}()
	require.Eventually(t, func() bool { return len(e.peer.Participants("j")) == 2 }, holdTimeout, 20*time.Millisecond)
	ps, err := s.Participants(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, "go-selector", ps[1].ID)
	select {
	case <-leading:
		t.Fatal("the Selector leads while Curator holds")
	default:
	}
	e.peer.Release("j")
	select {
	case <-leading:
	case <-time.After(holdTimeout):
		t.Fatal("the Selector did not lead")
	}
	javaNext := e.peer.StartAcquire("j", holdTimeout)
	require.Eventually(t, func() bool { return len(e.peer.Participants("j")) == 2 }, holdTimeout, 20*time.Millisecond)
	assert.False(t, javaNext.Done(), "Java waits while the Selector leads")
	close(resign)
	require.NoError(t, <-done)
	require.True(t, javaNext.Wait(), "Java holds after the Selector resigned")
	e.peer.Release("j")
}
