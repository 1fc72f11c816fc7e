package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// requireOwned checks that the leadership hd stands on a node that exists
// and belongs to c's current session.
func requireOwned(t *testing.T, e *env, c *zklock.Client, hd *zklock.Hold) {
	t.Helper()
	require.NoError(t, hd.Err())
	ok, st, err := e.admin.Exists(hd.Path())
	require.NoError(t, err)
	require.True(t, ok, "the leader's node %s exists", hd.Path())
	require.Equal(t, zklock.ConnOf(c).SessionID(), st.EphemeralOwner, "the leader's node belongs to the current session")
}

// standsOrLost reports whether the leadership hd stands on a node that
// exists and belongs to c's current session; if its node is gone, the
// leadership must end, told with ErrLockLost, and it reports false.
func standsOrLost(t *testing.T, e *env, c *zklock.Client, hd *zklock.Hold) bool {
	t.Helper()
	ok, st, err := e.admin.Exists(hd.Path())
	require.NoError(t, err)
	if !ok {
		waitDone(t, hd.Context(), 10*time.Second)
		require.ErrorIs(t, context.Cause(hd.Context()), zklock.ErrLockLost)
		return false
	}
	require.NoError(t, hd.Err())
	require.Equal(t, zklock.ConnOf(c).SessionID(), st.EphemeralOwner, "the leader's node belongs to the current session")
	return true
}

// CURATOR-724: the latch path vanishes (ZooKeeper's data wiped, the
// container reaped) under a leader and its waiters. The leadership is
// lost, and a waiting participant creates the path and its node again and
// leads: the election never stays without a leader. The path exists
// before the first Campaign, so that only its re-creation is at stake.
func TestIntegration_ElectionPathWiped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	p := e.root + "/wiped"
	e.create(p)
	leader, err := e.election(e.client(), "/wiped", "a").Campaign(bg)
	require.NoError(t, err)
	cb, cc := e.client(), e.client()
	b := campaignAsync(bg, e.election(cb, "/wiped", "b"))
	waitChildren(t, e, p, 2)
	c := campaignAsync(bg, e.election(cc, "/wiped", "c"))
	waitChildren(t, e, p, 3)

	for round := 0; round < 2; round++ {
		wipe(t, e, p)
		if round == 0 {
			waitDone(t, leader.Context(), 10*time.Second)
			require.ErrorIs(t, context.Cause(leader.Context()), zklock.ErrLockLost)
		}
		// One of the waiters leads; the other waits behind it. A waiter
		// granted by the deletion of the node before it, in the same
		// transaction that deletes its own, leads for an instant and is
		// told at once: it campaigns again, as Selector.Run would.
		var won campaigned
		var wonBy *zklock.Client
		for wonBy == nil {
			select {
			case won = <-b:
				wonBy, b = cb, nil
			case won = <-c:
				wonBy, c = cc, nil
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: no participant leads after the path was wiped", round)
			}
			require.NoError(t, won.err)
			if !standsOrLost(t, e, wonBy, won.hd) {
				if wonBy == cb {
					b = campaignAsync(bg, e.election(cb, "/wiped", "b"))
				} else {
					c = campaignAsync(bg, e.election(cc, "/wiped", "c"))
				}
				wonBy = nil
			}
		}
		waitElectionSize(t, e.election(e.client(), "/wiped", "x"), 2-round)
		if round == 0 {
			// Wipe again with only the winner's node... and the other
			// waiter's: the winner loses, the waiter leads.
			leader = won.hd
			continue
		}
		waitDone(t, leader.Context(), 10*time.Second)
		require.NoError(t, won.hd.Release())
	}
}

// wipe deletes p and its children in one transaction, as a restore of
// ZooKeeper's data or a reaped container would leave it.
func wipe(t *testing.T, e *env, p string) {
	t.Helper()
	var ops []any
	for _, ch := range e.children(p) {
		ops = append(ops, &zk.DeleteRequest{Path: p + "/" + ch, Version: -1})
	}
	_, err := e.admin.Multi(append(ops, &zk.DeleteRequest{Path: p, Version: -1})...)
	require.NoError(t, err)
}

// staleConn serves listings of one path from a snapshot, a given number
// of times, as a server that lags behind the ensemble would: it still
// lists the nodes of a session that the leader has already closed.
type staleConn struct {
	zklock.ZKConn
	mu       sync.Mutex
	path     string   // guarded by mu
	children []string // guarded by mu
	left     int      // guarded by mu; stale listings still to serve
	served   atomic.Int32
}

func (s *staleConn) arm(p string, children []string, n int) {
	s.mu.Lock()
	s.path, s.children, s.left = p, children, n
	s.mu.Unlock()
}

func (s *staleConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	s.mu.Lock()
	stale := p == s.path && s.left > 0
	if stale {
		s.left--
	}
	children := slices.Clone(s.children)
	s.mu.Unlock()
	if stale {
		s.served.Add(1)
		return children, &zk.Stat{}, nil
	}
	return s.ZKConn.Children(ctx, p)
}

// CURATOR-696: a waiting participant's session expires behind a pause
// while the leader resigns; when it reconnects, with a new session, a
// lagging server still lists its old node first. The old node is not
// leadership: Campaign returns only a node of the current session, and
// the old one is never reported as leading.
func TestIntegration_ElectionOldSessionNodeListedFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	p := e.root + "/old-session"
	faults := e.link()
	stale := &staleConn{}
	ca := e.client(
		zklock.WithSessionTimeout(2*time.Second),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: 30 * time.Second, Sleep: 100 * time.Millisecond}),
		zklock.WithDialer(faults.Dial),
		zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn { stale.ZKConn = real; return stale }),
	)
	b, err := e.election(e.client(), "/old-session", "b").Campaign(bg)
	require.NoError(t, err)
	a := campaignAsync(bg, e.election(ca, "/old-session", "a"))
	waitChildren(t, e, p, 2)
	oldSession := zklock.ConnOf(ca).SessionID()

	faults.Pause()
	require.NoError(t, b.Release())
	old := e.children(p)
	require.Len(t, old, 1, "a's old node is alone, and first")
	// The server expires a's session and deletes its node; a still lags.
	waitChildren(t, e, p, 0)
	stale.arm(p, old, 3)
	faults.Resume()

	got := await(t, a, 30*time.Second)
	require.NoError(t, got.err)
	require.NotEqual(t, oldSession, zklock.ConnOf(ca).SessionID(), "a has a new session")
	requireOwned(t, e, ca, got.hd)
	assert.NotEqual(t, path.Base(got.hd.Path()), old[0], "the old session's node is not leadership")
	t.Logf("stale listings served: %d", stale.served.Load())
	require.NoError(t, got.hd.Release())
}

// CURATOR-696, the check before Campaign returns: the node that the
// engine takes for the participant's, first in line, belongs to another
// session than the Client's current one, as a node of an expired session
// that a lagging server still shows. Here the participant's create lands
// in another session (another connection's), so that the engine's own
// bookkeeping of its session's changes cannot tell: only that check can.
// Campaign must not grant the node: it deletes it, queues again, and leads
// on a node of its current session. Both ways to the head of the line:
// granted at once (the owner is read), and after waiting behind a leader
// that resigns (the owner was read by the node's watch).
func TestIntegration_ElectionOtherSessionNodeNotGranted(t *testing.T) {
	t.Parallel()
	for _, behind := range []bool{false, true} {
		t.Run(map[bool]string{false: "at-once", true: "after-waiting"}[behind], func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			p := e.root + "/other-session"
			var leader *zklock.Hold
			if behind {
				var err error
				leader, err = e.election(e.client(), "/other-session", "leader").Campaign(context.Background())
				require.NoError(t, err)
			}
			other := zktest.ConnectT(t, e.servers)
			ca, f := e.faultClient()
			f.setCreate(createVia(f, other, nil))
			a := campaignAsync(context.Background(), e.election(ca, "/other-session", "a"))
			if behind {
				waitChildren(t, e, p, 2)
				require.NoError(t, leader.Release())
			}
			got := await(t, a, 10*time.Second)
			require.NoError(t, got.err)
			requireOwned(t, e, ca, got.hd)
			require.NoError(t, got.hd.Release())
			assert.Empty(t, e.children(p), "the other session's node was deleted")
		})
	}
}

// CURATOR-696 on an ensemble, with local sessions, and no fault client: a
// follower that lags shows a participant whose session was just replaced
// its old node, first in line. a campaigns alone, through g; its node
// leads at once, and Campaign reads the node's owner before it grants, but
// the reply is lost with a's connection. a's dials hang until its session
// expires: the leader deletes the node, and g follows, but f, whose link to
// the leader lags, does not yet. a's next connection goes to g, which tells
// it its session expired; the one after goes to f, with a new session
// (local: f answers it at once), and the read is sent again there. f shows
// the old node, of the old session. Campaign must not lead on it (the node
// is gone, and the leadership would be lost as soon as granted): it
// deletes it, queues again, and leads on a node of its new session.
func TestIntegration_EnsembleElectionOldSessionNodeOnLaggingFollower(t *testing.T) {
	t.Parallel()
	const lag = 750 * time.Millisecond
	bg := context.Background()
	ens := startLaggingEnsemble(t)
	e := setupOn(t, ens.upToDate())
	plan := newDialPlan(t, ens.servers)
	name := "/lagging-follower"
	p := e.root + name
	e.create(p) // so that Campaign's first create is its node's
	onF := ens.onF(t)
	waitShown(t, onF, p, true)

	plan.route(ens.g)
	ca := e.clientTo(ens.servers, // three addresses, which the session tries in turn
		// A round trip through f takes two lags, and a ping waits behind
		// a create: a third of the session must outlast that.
		zklock.WithSessionTimeout(4*time.Second),
		zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: 30 * time.Second, Sleep: 100 * time.Millisecond}),
		zklock.WithDialer(plan.Dial),
	)
	oldSession := zklock.ConnOf(ca).SessionID()
	plan.hold()
	cut := plan.proxies[ens.g].CutOnRequest(time.Second, 3) // exists: the owner's read
	a := campaignAsync(bg, e.election(ca, name, "a"))
	await(t, cut, 10*time.Second)
	old := otherChild(e, p, "")
	require.NotEmpty(t, old, "a's node")
	require.Equal(t, oldSession, e.owner(old), "a's node, of its first session")
	waitShown(t, onF, old, true)
	ens.lag(t, lag)

	// The old session expires: its timeout after the cut, and two lags
	// more, since f, which learnt of the session when the node was made,
	// counts that as a sign of life and reports it late.
	require.Eventually(t, func() bool { return e.owner(old) == 0 },
		20*time.Second, 5*time.Millisecond, "the old session expires on the leader")
	ok, st, err := onF.Exists(old)
	require.NoError(t, err)
	require.True(t, ok, "f still shows the old node")
	require.Equal(t, oldSession, st.EphemeralOwner)
	plan.route(ens.g, ens.f)

	got := await(t, a, 20*time.Second)
	require.NoError(t, got.err)
	ens.lag(t, 0)
	t.Logf("dials %v; a's sessions 0x%x, then 0x%x", plan.dials(), oldSession, zklock.ConnOf(ca).SessionID())
	require.NotEqual(t, oldSession, zklock.ConnOf(ca).SessionID(), "a has a new session")
	assert.NotEqual(t, old, got.hd.Path(), "Campaign does not lead on the old session's node that the lagging follower showed")
	requireOwned(t, e, ca, got.hd)
	require.NoError(t, got.hd.Release())
	// Release waits a second for its delete, then leaves it to the
	// background; through f, whose link has just stopped lagging, the
	// reply can take longer (CI, a loaded machine: the node stood at once).
	assert.Eventually(t, func() bool { return len(e.children(p)) == 0 }, 10*time.Second, 5*time.Millisecond, "no node is left")
}

// CURATOR-498: a participant's create succeeds but its reply is lost, so
// it finds its node again by the protection prefix, while another
// participant leads. It adopts its own node (no second node), never
// touches the leader's, and leads once the leader resigns.
func TestIntegration_ElectionLostCreateReply(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	p := e.root + "/lost-reply"
	leader, err := e.election(e.client(), "/lost-reply", "leader").Campaign(bg)
	require.NoError(t, err)
	leaderNode := path.Base(leader.Path())

	ca, f := e.faultClient()
	f.setCreate(lostResponse(f, zk.ErrConnectionClosed))
	a := campaignAsync(bg, e.election(ca, "/lost-reply", "a"))
	waitChildren(t, e, p, 2)
	assert.Contains(t, e.children(p), leaderNode, "the leader's node is untouched")
	assert.NoError(t, leader.Err(), "the leader still leads")
	select {
	case r := <-a:
		t.Fatalf("a leads beside the leader: %v", r.err)
	default:
	}
	require.NoError(t, leader.Release())
	var got campaigned
	select {
	case got = <-a:
	case <-time.After(10 * time.Second):
		// A second create would leave the first node, unseen, ahead of it.
		t.Fatalf("a does not lead once the leader resigned: %d creates, children %v", f.creates.Load(), e.children(p))
	}
	require.NoError(t, got.err)
	requireOwned(t, e, ca, got.hd)
	assert.EqualValues(t, 1, f.creates.Load(), "the create lost its reply, and the engine found its node: no second create")
	require.NoError(t, got.hd.Release())
}

// leaderLog records every leadership term of the participants of one
// test process, to check that terms never overlap, and counts their
// Campaigns.
type leaderLog struct {
	mu        sync.Mutex
	terms     []term
	campaigns atomic.Int32
	vanished  atomic.Int32 // Campaigns that ended because their node vanished
}

type term struct {
	who        string
	start, end time.Time
}

func (l *leaderLog) add(who string, start, end time.Time) {
	l.mu.Lock()
	l.terms = append(l.terms, term{who, start, end})
	l.mu.Unlock()
}

func (l *leaderLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.terms)
}

// overlaps returns a description of two terms that overlap, or "".
func (l *leaderLog) overlaps() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := slices.Clone(l.terms)
	slices.SortFunc(ts, func(a, b term) int { return a.start.Compare(b.start) })
	for i := 1; i < len(ts); i++ {
		if ts[i].start.Before(ts[i-1].end) {
			return fmt.Sprintf("%s led %v..%v, %s from %v", ts[i-1].who, ts[i-1].start.Format("15:04:05.000"),
				ts[i-1].end.Format("15:04:05.000"), ts[i].who, ts[i].start.Format("15:04:05.000"))
		}
	}
	return ""
}

// campaignLoop campaigns again and again until ctx ends, logging each
// term: from Campaign's return to the end of the Hold's context.
func campaignLoop(ctx context.Context, el *zklock.Election, log *leaderLog, errs chan<- error) {
	for ctx.Err() == nil {
		log.campaigns.Add(1)
		hd, err := el.Campaign(ctx)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				log.vanished.Add(1)
			}
			if ctx.Err() == nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zklock.ErrLockLost) && !zklock.Retryable(err) {
				errs <- err
				return
			}
			continue
		}
		start := time.Now()
		select {
		case <-hd.Done():
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // a short term, then resign
		}
		// The term ends when the leader stops believing it leads: at a
		// loss's cancellation, seen above, or here, before Release cancels
		// the Hold and sends its delete, which no one else can lead
		// before. (Stamped after Release, a term would also count the
		// delete's reply, after which the next leader may already lead.)
		end := time.Now()
		_ = hd.Release()
		log.add(el.ID(), start, end)
	}
	errs <- nil
}

// CURATOR-620/653 and CURATOR-644/645: participants lose their
// connections twice in quick succession, again and again, while they
// campaign and resign. Leadership terms never overlap (a participant
// whose node is not first never leads), and the reconnects cause no reset
// storm: no Campaign creates more than one node (a waiter keeps its node
// through a reconnect, and a deleted node before it is no reason to queue
// again), as the sequence numbers show.
func TestIntegration_ElectionReconnectStorm(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.root + "/storm"
	var log leaderLog
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 3
	errs := make(chan error, n)
	faults := make([]*kit.Link, n)
	clients := make([]*zklock.Client, n)
	for i := range n {
		faults[i] = e.link()
		policy := zklock.StandardPolicy
		if i == 0 {
			policy = zklock.SessionPolicy // keeps its leadership through short cuts
		}
		c := e.client(zklock.WithErrorPolicy(policy), zklock.WithDialer(faults[i].Dial))
		clients[i] = c
		go campaignLoop(ctx, e.election(c, "/storm", "p"+strconv.Itoa(i)), &log, errs)
	}
	observer := e.election(e.client(), "/storm", "observer")
	waitElectionSize(t, observer, n)
	const cuts = 6
	for i := range cuts {
		before := log.count()
		faults[i%n].Cut()
		faults[i%n].Cut() // two reconnects in quick succession
		waitState(t, clients[i%n], 15*time.Second, zklock.StateReconnected)
		require.Eventually(t, func() bool { return log.count() > before+n }, 15*time.Second, 5*time.Millisecond,
			"the election goes on after cut %d", i)
	}
	cancel()
	for range n {
		require.NoError(t, await(t, errs, 30*time.Second))
	}
	if o := log.overlaps(); o != "" {
		t.Fatalf("two leaders at once: %s", o)
	}
	log.mu.Lock()
	terms := len(log.terms)
	log.mu.Unlock()
	require.Positive(t, terms)
	// Every node's sequence number counts the nodes created before it.
	// Each Campaign, whether it led, failed on a cut or was cancelled at
	// the end, needs one node; a reset would create another, or, once the
	// retry policy gives up, end its Campaign with ErrNoNode (and the
	// loop's next Campaign would then hide the extra node in the count).
	// No node vanishes here: the cuts are shorter than a session.
	created, campaigns := maxSeq(t, e, p), int(log.campaigns.Load())
	t.Logf("%d terms, %d campaigns, %d cuts, %d nodes created, %d Campaigns ended by a vanished node", terms, campaigns, cuts, created, log.vanished.Load())
	assert.LessOrEqual(t, created, campaigns, "no reset storm: one node per Campaign")
	assert.Zero(t, log.vanished.Load(), "no reset storm: no Campaign's node vanished")
}

// maxSeq returns the cversion of p: how many children it has ever had.
func maxSeq(t *testing.T, e *env, p string) int {
	t.Helper()
	_, st, err := e.admin.Exists(p)
	require.NoError(t, err)
	if st == nil {
		return 0
	}
	return int(st.Cversion+st.NumChildren) / 2 // a create and a delete each count
}

// CURATOR-518/671 and CURATOR-15/16: a Selector's Run keeps its
// participant in the election through repeated interruptions: its node
// deleted by someone else twice in quick succession, a session expiry,
// and a function that returns. After each it queues again and leads
// again, with the other participant leading between.
func TestIntegration_SelectorRequeues(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	faults := e.link()
	ca := e.client(zklock.WithSessionTimeout(1500*time.Millisecond), zklock.WithDialer(faults.Dial))
	sa, err := zklock.NewSelector(ca, e.root+"/selector", "a")
	require.NoError(t, err)
	sb, err := zklock.NewSelector(e.client(), e.root+"/selector", "b")
	require.NoError(t, err)

	terms := make(chan string, 100)
	causes := make(chan error, 100)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	lead := func(who string, giveUp bool) func(context.Context) error {
		return func(ctx context.Context) error {
			select {
			case terms <- who:
			default: // the test reads what it needs; never block a term
			}
			if giveUp {
				// A short term, so that b does not spin while a is away.
				select {
				case <-time.After(20 * time.Millisecond):
				case <-ctx.Done():
				}
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}
	}
	runA := make(chan error, 1)
	go func() { runA <- sa.Run(ctx, lead("a", false)) }()
	require.Equal(t, "a", await(t, terms, 10*time.Second))
	runB := make(chan error, 1)
	go func() { runB <- sb.Run(ctx, lead("b", true)) }() // b gives up at once, each term
	for i := 0; i < 2; i++ {
		ps, err := sa.Participants(bg)
		require.NoError(t, err)
		require.True(t, ps[0].Leader)
		require.Equal(t, "a", ps[0].ID)
		_ = e.admin.Delete(ps[0].Node, -1) // interrupt a's leadership
		require.ErrorIs(t, await(t, causes, 10*time.Second), zklock.ErrLockLost)
		require.Equal(t, "b", await(t, terms, 10*time.Second), "b leads between")
		require.Equal(t, "a", awaitNot(t, terms, "b", 10*time.Second), "a leads again after interruption %d", i+1)
	}
	faults.Pause() // a's session expires
	require.ErrorIs(t, await(t, causes, 10*time.Second), zklock.ErrLockLost)
	faults.Resume()
	require.Equal(t, "a", awaitNot(t, terms, "b", 30*time.Second), "a leads again on its new session")
	cancel()
	require.ErrorIs(t, await(t, runA, 10*time.Second), context.Canceled)
	require.ErrorIs(t, await(t, runB, 10*time.Second), context.Canceled)
}

// awaitNot reads from ch, skipping skip, until another value comes.
func awaitNot(t *testing.T, ch <-chan string, skip string, d time.Duration) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case v := <-ch:
			if v != skip {
				return v
			}
		case <-deadline:
			t.Fatalf("only %q within %v", skip, d)
			return ""
		}
	}
}
