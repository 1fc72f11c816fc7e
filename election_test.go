package zklock_test

import (
	"context"
	"errors"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// election makes an Election on the test's root joined with name.
func (e *env) election(c *zklock.Client, name, id string) *zklock.Election {
	e.t.Helper()
	el, err := zklock.NewElection(c, e.root+name, id)
	require.NoError(e.t, err)
	return el
}

// campaigned is the outcome of a Campaign run in the background.
type campaigned = held

// campaignAsync runs el.Campaign(ctx) on a goroutine.
func campaignAsync(ctx context.Context, el *zklock.Election) <-chan campaigned {
	return inBackground(func() (*zklock.Hold, error) { return el.Campaign(ctx) })
}

// waitLeaderID waits until the election's leader is id ("" with
// ErrNoLeader: none).
func waitLeaderID(t *testing.T, el *zklock.Election, id string, none bool) {
	t.Helper()
	var got string
	var gotErr error
	require.Eventually(t, func() bool {
		got, gotErr = el.Leader(context.Background())
		if none {
			return errors.Is(gotErr, zklock.ErrNoLeader)
		}
		return gotErr == nil && got == id
	}, 15*time.Second, 5*time.Millisecond, "want leader %q (none: %v), have %q, %v", id, none, got, gotErr)
}

// waitElectionSize waits until the election has n participants.
func waitElectionSize(t *testing.T, el *zklock.Election, n int) []zklock.Participant {
	t.Helper()
	var got []zklock.Participant
	require.Eventually(t, func() bool {
		p, err := el.Participants(context.Background())
		got = p
		return err == nil && len(p) == n
	}, 15*time.Second, 5*time.Millisecond, "want %d participants, have %v", n, got)
	return got
}

var latchNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-latch-\d{10}$`)

// Three participants lead in turn, in the order they queued; Leader and
// Participants agree with the Holds, and the nodes are LeaderLatch's.
func TestIntegration_ElectionHandover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	ids := []string{"alpha", "", "gamma ✓"}
	els := make([]*zklock.Election, len(ids))
	for i, id := range ids {
		els[i] = e.election(e.client(), "/latch", id)
	}
	_, err := els[0].Leader(bg)
	require.ErrorIs(t, err, zklock.ErrNoLeader)

	first, err := els[0].Campaign(bg)
	require.NoError(t, err)
	assert.True(t, els[0].IsLeader())
	rest := []<-chan campaigned{campaignAsync(bg, els[1])}
	waitElectionSize(t, els[0], 2)
	rest = append(rest, campaignAsync(bg, els[2]))
	ps := waitElectionSize(t, els[0], 3)
	for i, p := range ps {
		assert.Equal(t, ids[i], p.ID)
		assert.Equal(t, i == 0, p.Leader)
		assert.Regexp(t, latchNode, path.Base(p.Node))
		data, _, err := e.admin.Get(p.Node)
		require.NoError(t, err)
		assert.Equal(t, []byte(ids[i]), data, "node data is the id, empty for an empty id")
	}
	assert.Equal(t, first.Path(), ps[0].Node)
	tok, err := first.Token()
	require.NoError(t, err)

	prev := first
	for i, ch := range rest {
		require.NoError(t, prev.Release())
		require.ErrorIs(t, context.Cause(prev.Context()), zklock.ErrReleased)
		got := await(t, ch, 15*time.Second)
		require.NoError(t, got.err)
		waitLeaderID(t, els[0], ids[i+1], false)
		next, err := got.hd.Token()
		require.NoError(t, err)
		assert.Greater(t, next, tok, "fencing tokens grow from leader to leader")
		tok, prev = next, got.hd
	}
	require.NoError(t, prev.Release())
	waitLeaderID(t, els[0], "", true)
	assert.False(t, els[2].IsLeader())
}

// A Campaign that is cancelled, or whose Client closes, leaves no node
// and returns the reason.
func TestIntegration_ElectionCampaignEnds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	leader, err := e.election(e.client(), "/ends", "l").Campaign(bg)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	_, err = e.election(e.client(), "/ends", "t").Campaign(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	c := e.client()
	got := campaignAsync(bg, e.election(c, "/ends", "c"))
	waitChildren(t, e, e.root+"/ends", 2)
	require.NoError(t, c.Close())
	r := await(t, got, 10*time.Second)
	require.ErrorIs(t, r.err, zklock.ErrClosed)
	waitChildren(t, e, e.root+"/ends", 1)
	require.NoError(t, leader.Release())
}

// Observe reports the leader, each change, and "no leader", with the
// newest state only; its channel closes with ctx.
func TestIntegration_ElectionObserve(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	c := e.client()
	watcher := e.election(c, "/observe", "watcher")
	ctx, cancel := context.WithCancel(bg)
	obs := watcher.Observe(ctx)
	next := func(want string, none bool) zklock.Leader {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case l := <-obs:
				require.NoError(t, l.Err)
				if (none && l.Node == "") || (!none && l.Node != "" && l.ID == want) {
					return l
				}
			case <-deadline:
				t.Fatalf("Observe did not report leader %q (none: %v)", want, none)
			}
		}
	}
	next("", true)
	a, err := e.election(e.client(), "/observe", "a").Campaign(bg)
	require.NoError(t, err)
	la := next("a", false)
	assert.Equal(t, a.Path(), la.Node)
	bCh := campaignAsync(bg, e.election(e.client(), "/observe", "b"))
	waitElectionSize(t, watcher, 2)
	require.NoError(t, a.Release())
	next("b", false)
	b := await(t, bCh, 10*time.Second)
	require.NoError(t, b.err)

	require.NoError(t, b.hd.Release())
	next("", true)

	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-obs:
			return !ok
		default:
			return false
		}
	}, 10*time.Second, 5*time.Millisecond, "the channel closes with ctx")

	closed := watcher.Observe(bg)
	require.NoError(t, c.Close())
	waitClosed(t, closed)
}

// A reader that does not read while the leader changes four times finds
// the newest state at once, not the history: Observe never queues.
func TestIntegration_ElectionObserveLatest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	watcher := e.election(e.client(), "/latest", "watcher")
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	obs := watcher.Observe(ctx)
	b, err := e.election(e.client(), "/latest", "b").Campaign(bg)
	require.NoError(t, err)
	require.NoError(t, b.Release())
	waitLeaderID(t, watcher, "", true)
	// Latest value: while nobody reads, the leader changes four times;
	// the reader then finds the newest state at once, not the history.
	cc, err := e.election(e.client(), "/latest", "c").Campaign(bg)
	require.NoError(t, err)
	require.NoError(t, cc.Release())
	waitLeaderID(t, watcher, "", true)
	d, err := e.election(e.client(), "/latest", "d").Campaign(bg)
	require.NoError(t, err)
	reads := 0
	require.Eventually(t, func() bool {
		select {
		case l := <-obs:
			reads++
			return l.ID == "d"
		default:
			return false
		}
	}, 10*time.Second, 5*time.Millisecond)
	assert.LessOrEqual(t, reads, 2, "a slow reader gets the newest state, not a queue of old ones")
	require.NoError(t, d.Release())
}

// waitClosed waits until a Leader channel is closed, draining it.
func waitClosed(t *testing.T, ch <-chan zklock.Leader) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("Observe's channel not closed")
		}
	}
}

func TestIntegration_ElectionBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	for _, tc := range []struct {
		name, path, id string
		opts           []zklock.LockOption
		want           error
	}{
		{"bad path", "no-slash", "x", nil, zklock.ErrInvalidPath},
		{"bad id", "/p", "\xff", nil, zklock.ErrInvalidArgument},
		{"lock data", "/p", "x", []zklock.LockOption{zklock.WithLockData([]byte("d"))}, zklock.ErrInvalidArgument},
		{"driver", "/p", "x", []zklock.LockOption{zklock.WithDriver(zklock.StandardDriver{})}, zklock.ErrInvalidArgument},
		{"nil option", "/p", "x", []zklock.LockOption{nil}, zklock.ErrInvalidArgument},
		{"huge id", "/p", string(make([]byte, 2<<20)), nil, zklock.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := zklock.NewElection(c, tc.path, tc.id, tc.opts...)
			assert.ErrorIs(t, err, tc.want)
			_, err = zklock.NewSelector(c, tc.path, tc.id, tc.opts...)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err := zklock.NewElection(nil, "/p", "x")
	assert.ErrorIs(t, err, zklock.ErrInvalidArgument)
	var zero zklock.Election
	_, err = zero.Campaign(context.Background())
	assert.ErrorIs(t, err, zklock.ErrInvalidArgument)
	var zs zklock.Selector
	assert.ErrorIs(t, zs.Run(context.Background(), func(context.Context) error { return nil }), zklock.ErrInvalidArgument)
	el := e.election(c, "/p", "x")
	//lint:ignore SA1012 a nil context is the input under test
	_, err = el.Campaign(nil) //nolint:staticcheck
	assert.ErrorIs(t, err, zklock.ErrInvalidArgument)
	require.NoError(t, c.Close())
	_, err = el.Campaign(context.Background())
	assert.ErrorIs(t, err, zklock.ErrClosed)
	_, ok := <-el.Observe(context.Background())
	assert.False(t, ok, "Observe on a closed Client returns a closed channel")
}

// Campaign with a leader's context re-enters its leadership: the Hold
// owes its own Release, and the node stays until the last.
func TestIntegration_ElectionReenter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	el := e.election(e.client(), "/reenter", "x")
	h1, err := el.Campaign(context.Background())
	require.NoError(t, err)
	h2, err := el.Campaign(h1.Context())
	require.NoError(t, err)
	assert.Equal(t, h1.Path(), h2.Path())
	require.NoError(t, h2.Release())
	assert.NoError(t, h1.Err())
	require.NoError(t, h1.Release())
	require.ErrorIs(t, h1.Release(), zklock.ErrNotHeld)
	_, _, err = e.admin.Get(h1.Path())
	require.ErrorIs(t, err, zk.ErrNoNode)
}
