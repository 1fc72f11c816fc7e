package interop_test

import (
	"context"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/integration_test/interop"
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
	assert.Equal(t, want, participantIDs(ps), "zklock's view")
	for _, p := range ps {
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

// participantIDs is zklock's view of an election in the peer's form: ids
// in order, the leader's followed by "*".
func participantIDs(ps []zklock.Participant) []string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID + map[bool]string{true: "*"}[p.Leader]
	}
	return ids
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

// A Go Selector and a Java LeaderSelector on one path: one leader at a
// time, leadership handed over Java → Go → Java, and both sides see the
// same participants, whose ids are their nodes' data (the Java side's
// from setId).
func TestIntegration_SelectorWithLeaderSelector(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	terms := newSelectorTerms(t, e.peer, "j")
	e.peer.NewLeaderSelector("j", e.path, "java-1")
	terms.awaitJava()
	s, err := zklock.NewSelector(e.client, e.path, "go-1")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Lead(ctx, terms.lead) }()

	ps := waitSameParticipants(t, e, s, "java-1*", "go-1")
	for i, want := range []string{"java-1", "go-1"} {
		data, _, err := e.conn.Get(ps[i].Node)
		require.NoError(t, err)
		assert.Equal(t, want, string(data), "the node's data is the participant id")
		assert.Regexp(t, protectedLockName, path.Base(ps[i].Node))
	}
	assert.False(t, s.IsLeader())

	e.peer.ResignSelector("j") // Java → Go
	terms.awaitGo()
	waitSameParticipants(t, e, s, "go-1*", "java-1") // Java queued again
	assert.False(t, e.peer.SelectorHasLeadership("j"))

	terms.resignGo() // Go → Java
	terms.awaitJava()
	require.NoError(t, <-done)
	waitSameParticipants(t, e, s, "java-1*")
	leader, err := s.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "java-1", leader)
	closeSelector(t, e, terms, s)
}

// A Go Selector's Run and a Java LeaderSelector with autoRequeue on one
// path hand leadership to each other, round after round, and their terms
// never overlap.
func TestIntegration_SelectorRunWithLeaderSelector(t *testing.T) {
	e := setup(t)
	terms := newSelectorTerms(t, e.peer, "j")
	e.peer.NewLeaderSelector("j", e.path, "java-1")
	terms.awaitJava()
	s, err := zklock.NewSelector(e.client, e.path, "go-1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := make(chan error, 1)
	go func() { run <- s.Run(ctx, terms.lead) }()
	for range 3 {
		waitSameParticipants(t, e, s, "java-1*", "go-1") // both queued: the next is the other
		e.peer.ResignSelector("j")
		terms.awaitGo()
		waitSameParticipants(t, e, s, "go-1*", "java-1")
		terms.resignGo()
		terms.awaitJava()
	}
	cancel()
	require.ErrorIs(t, <-run, context.Canceled)
	waitSameParticipants(t, e, s, "java-1*")
	closeSelector(t, e, terms, s)
}

// closeSelector closes the Java selector "j", which leads, and waits until
// its term has ended and no participant is left.
func closeSelector(t *testing.T, e *env, terms *selectorTerms, s *zklock.Selector) {
	t.Helper()
	e.peer.CloseSelector("j")
	terms.awaitJavaEvent("resigned")
	waitSelectorParticipants(t, s)
	_, err := s.Leader(context.Background())
	require.ErrorIs(t, err, zklock.ErrNoLeader)
}

// waitSameParticipants waits until zklock's Selector sees the participants
// want (ids in order, the leader's followed by "*"), checks that Curator's
// LeaderSelector "j" sees the same, and returns zklock's view.
func waitSameParticipants(t *testing.T, e *env, s *zklock.Selector, want ...string) []zklock.Participant {
	t.Helper()
	ps := waitSelectorParticipants(t, s, want...)
	assert.Equal(t, want, e.peer.SelectorParticipants("j"), "Curator's view")
	return ps
}

// waitSelectorParticipants waits until zklock's Selector sees the
// participants want, and returns them.
func waitSelectorParticipants(t *testing.T, s *zklock.Selector, want ...string) []zklock.Participant {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	deadline := time.Now().Add(holdTimeout)
	for {
		ps, err := s.Participants(context.Background())
		require.NoError(t, err)
		if slices.Equal(participantIDs(ps), want) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("selector %s: want participants %v, have %v", s.Path(), want, participantIDs(ps))
		}
		time.Sleep(20 * time.Millisecond) // polls a state, as waitQueueLen
	}
}

// selectorTerms follows the terms of a Go Selector (through its function
// lead) and of the Java LeaderSelector javaID (through the peer's events)
// on one path, and checks, without sleeps, that they never overlap: a
// Java term must begin while no Go term stands, and when a Go term begins,
// the Java events written before it (a Java term ends before Curator
// releases its lock) must show no Java term standing. Its methods other
// than lead run on the test's goroutine.
type selectorTerms struct {
	t         *testing.T
	peer      *interop.Peer
	javaID    string
	javaLeads bool          // as the events read so far tell
	goLeads   atomic.Bool   // a Go term stands
	goStarted chan error    // a Go term began; the outcome of its barrier
	goResign  chan struct{} // ends the Go term
}

func newSelectorTerms(t *testing.T, peer *interop.Peer, javaID string) *selectorTerms {
	return &selectorTerms{t: t, peer: peer, javaID: javaID, goStarted: make(chan error), goResign: make(chan struct{})}
}

// lead is the Go Selector's function: one term, from its start until the
// test resigns it or its context ends.
func (st *selectorTerms) lead(ctx context.Context) error {
	st.goLeads.Store(true)
	select {
	case st.goStarted <- st.peer.Barrier():
		select {
		case <-st.goResign:
		case <-ctx.Done():
		}
	case <-ctx.Done(): // the test has given up
	}
	st.goLeads.Store(false)
	return nil
}

// awaitGo waits until a Go term begins, and checks that no Java term
// stood then.
func (st *selectorTerms) awaitGo() {
	st.t.Helper()
	select {
	case err := <-st.goStarted:
		require.NoError(st.t, err, "the Go term's barrier")
	case <-time.After(holdTimeout):
		st.t.Fatal("the Go Selector did not lead")
	}
	st.drain()
	require.False(st.t, st.javaLeads, "a Java term stood when the Go term began")
}

// resignGo ends the Go term.
func (st *selectorTerms) resignGo() {
	st.t.Helper()
	select {
	case st.goResign <- struct{}{}:
	case <-time.After(holdTimeout):
		st.t.Fatal("no Go term to resign")
	}
}

// awaitJava waits until a Java term begins, and checks that no Go term
// stood then.
func (st *selectorTerms) awaitJava() {
	st.t.Helper()
	st.awaitJavaEvent("leading")
	require.False(st.t, st.goLeads.Load(), "a Go term stood when the Java term began")
}

// awaitJavaEvent applies the peer's events until the Java selector's
// event kind ("leading" or "resigned") comes.
func (st *selectorTerms) awaitJavaEvent(kind string) {
	st.t.Helper()
	timeout := time.After(holdTimeout)
	for {
		select {
		case ev, ok := <-st.peer.Events():
			if st.apply(ev, ok) == kind {
				return
			}
		case <-timeout:
			st.t.Fatalf("no Java event %q of %s within %v", kind, st.javaID, holdTimeout)
		}
	}
}

// drain applies the events already read from the peer.
func (st *selectorTerms) drain() {
	st.t.Helper()
	for {
		select {
		case ev, ok := <-st.peer.Events():
			st.apply(ev, ok)
		default:
			return
		}
	}
}

// apply applies one event of the peer (ok false: the peer has exited) and
// returns its kind if it is the Java selector's, else "".
func (st *selectorTerms) apply(ev string, ok bool) string {
	st.t.Helper()
	if !ok {
		st.t.Fatal("the peer exited")
	}
	kind, id, _ := strings.Cut(ev, " ")
	if id != st.javaID {
		return ""
	}
	switch kind {
	case "leading":
		require.False(st.t, st.javaLeads, "two Java terms at once")
		st.javaLeads = true
	case "resigned":
		st.javaLeads = false
	}
	return kind
}
