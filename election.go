package zklock

import (
	"context"
	"errors"
	"path"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock/internal/layout"
	"github.com/zklock/zklock/internal/zksession"
)

// latchName is the name of a leader latch's nodes before the sequence, as
// Curator's LeaderLatch names them.
const latchName = "latch-"

// Election is leader election in the layout of Curator's LeaderLatch: a Go
// Election and a Java LeaderLatch on the same path take part in one
// election, and see the same participants and the same leader.
//
// Each participant queues a protected EPHEMERAL_SEQUENTIAL node
// "_c_<uuid>-latch-<seq10>" under the path, holding its id; the first node
// in sequence order leads, and every other participant watches only the
// node just before its own. [Election.Campaign] waits for the leadership
// and returns it as a [Hold]: leadership is a hold of the latch, and ends
// as a lock hold ends.
//
// An Election is safe for concurrent use. Each Campaign is a participant of
// its own, so two Campaigns of one Election compete with each other; a
// Campaign with a context that carries a leadership of the same Client
// and path re-enters it instead (see [Hold]).
//
// Leadership can be lost at any time: under StandardPolicy when the
// connection is suspended, under SessionPolicy when the session is lost,
// and under both when someone deletes the leader's node or the Client is
// closed. The Hold's context is then cancelled with a cause wrapping
// ErrLockLost. Between the event and the cancellation another participant
// may already lead: fence writes with [Hold.Token] or [Hold.Multi].
// A participant whose leadership ended is out of the election; to stand
// again, it campaigns again, with a new node at the end of the queue.
type Election struct {
	// Written once by NewElection, read-only after.
	c    *Client
	path string        // as given, relative to the namespace
	id   string        // the participant id, the nodes' data
	li   lockInternals // the engine: latch-, StandardDriver, one leader

	live atomic.Int32 // leaderships that stand
}

// NewElection returns an Election on path, relative to the Client's
// namespace, for the participant id. id is the data of the participant's
// node, as Curator's LeaderLatch stores it: UTF-8 text, empty by default
// in Curator. NewElection does no I/O: the path is created by the first
// Campaign, as CONTAINER nodes. Of the lock options it takes
// [WithMaxHold], a bound on each leadership, and [WithLayout]: with
// LayoutKazoo the election is a kazoo Election (a kazoo Lock on the path,
// the id as its nodes' data, parents made persistent); [WithDriver] and
// [WithLockData] are refused with ErrInvalidArgument, since the layout is
// the election's definition and the data is the id. It returns an error wrapping ErrInvalidArgument for a
// nil or misconfigured Client, an id that is not UTF-8, or a path and id
// too large for one ZooKeeper request, and ErrInvalidPath for a bad path.
func NewElection(c *Client, path, id string, opts ...LockOption) (*Election, error) {
	li, err := electionEngine(c, "election", path, id, latchName, opts)
	if err != nil {
		return nil, err
	}
	return &Election{c: c, path: path, id: id, li: li}, nil
}

// electionEngine checks what NewElection and NewSelector are given and
// returns the engine of their nodes.
func electionEngine(c *Client, what, p, id, lockName string, opts []LockOption) (lockInternals, error) {
	o, err := parseLockOptions(what, p, opts, false)
	if err == nil && o.data != nil {
		err = errorf(ErrInvalidArgument, "%s %s: node data is the participant id; WithLockData cannot be set", what, quotePath(p))
	}
	if err == nil && !utf8.ValidString(id) {
		err = errorf(ErrInvalidArgument, "%s %s: participant id %q is not UTF-8", what, quotePath(p), id)
	}
	if err != nil {
		return lockInternals{}, err
	}
	if _, err := c.recipeData(what, p, []byte(id)); err != nil {
		return lockInternals{}, err
	}
	var d Driver = StandardDriver{}
	fast := standardFast(1)
	if o.layout == LayoutKazoo { // kazoo's Election is a kazoo Lock
		lockName, d, fast = layout.KazooLockName, kazooLock, kazooLockFast
	}
	return lockInternals{c: c, basePath: c.fullPath(p), lockName: lockName, driver: d, maxLeases: 1, maxHold: o.maxHold, fast: fast}, nil
}

// Campaign queues the participant and blocks until it leads, ctx is done,
// or the Client is closed, and returns the leadership as a [Hold]. Its
// context is cancelled when the leadership ends: with cause ErrReleased
// after [Hold.Release] (which resigns: the node is deleted and the next
// participant leads), or a cause wrapping ErrLockLost when it is lost. It
// keeps ctx's values but not its deadline or cancellation.
//
// Campaign grants leadership only to a node of the Client's current
// session that is first in line: seen first in a listing taken after the
// last change of the connection's state, or left first by its only
// predecessor's deletion while its own watch shows it standing. Its
// ephemeral owner, as ZooKeeper reports it, must be the current session
// (Curator 5.7's check, CURATOR-696): a participant that waited read it
// with its node's watch, so a handoff costs no round trip for the check;
// one granted at once reads it, and that the node exists (one round
// trip). A node that vanishes while Campaign waits (its session expired,
// someone deleted it, the path was deleted and reaped) is created again,
// under the Client's retry policy, parents too. A leadership granted on
// the deletion of the node before it can end at once, told, when the same
// change deletes its own node too (a path wiped in one transaction):
// campaign again when a leadership ends, as [Selector.Run] does, to stay
// in the election.
//
// Campaign waits for the connection too, as [Mutex.Acquire] does. On
// failure it returns an error naming the path and wrapping ctx.Err() (and
// its cause, and ErrNotConnected if ctx ended while the Client was not
// connected), ErrClosed, or the ZooKeeper error, and leaves no node
// behind.
func (e *Election) Campaign(ctx context.Context) (*Hold, error) {
	if err := valid(ctx, e, "campaign"); err != nil {
		return nil, err
	}
	return campaign(ctx, e.c, &e.li, e.id, "leadership "+e.path, e.path, &e.live)
}

// campaign is Election.Campaign on the engine li.
func campaign(ctx context.Context, c *Client, li *lockInternals, id, name, p string, live *atomic.Int32) (*Hold, error) {
	key := holdKey{li.id()}
	if h, _ := ctx.Value(key).(*hold); h != nil && ctx.Err() == nil && h.enter() {
		return newHandle(h, h.ctx, p), nil
	}
	a, err := c.acquiring(ctx, RecipeElection, "campaign", p, li.maxHold, nil)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	leader := a.probeHolder(ctx, c, holderSource{path: p}, true)
	node, snap, err := acquireOwned(a.ctx, c, li, id, leader)
	if err != nil {
		// Its owner check and its requeue wait outside the engine's acquire
		// (see Client.offline).
		err = shutdownErr(ctx, a.ctx, c.offline(ctx, err))
		return nil, a.failed(opErr(ctx, "campaign", p, leader.nameHolder(ctx, err)))
	}
	h := newHold(c, ctx, holdSpec{key: key, name: name, node: node, live: live, story: a.story, maxHold: a.maxHold})
	if !h.watch(snap, nil) {
		return nil, a.failed(opErr(ctx, "campaign", p, ErrClosed))
	}
	a.granted(h)
	return newHandle(h, h.ctx, p), nil
}

// acquireOwned queues a node on li and waits until it leads, then checks
// that the node exists and belongs to the Client's current session before
// it grants: the engine decided from a listing, and a listing may show a
// node that is already gone, or an earlier session's node that is dying
// (CURATOR-696). A node that fails the check is deleted and the
// participant queues again, under the retry policy. first sees the
// leader as the engine sees it.
func acquireOwned(ctx context.Context, c *Client, li *lockInternals, id string, first *holderProbe) (*lockNode, snapshot, error) {
	r := newRetrier(c.opts.retry)
	for {
		node, snap, err := li.acquire(ctx, acquireReq{data: []byte(id), first: first})
		if err != nil {
			return nil, snapshot{}, err
		}
		owner, err := ownerOf(ctx, c, node)
		switch {
		case err != nil:
			c.deleteLockNode(node)
			return nil, snapshot{}, err
		case owner == node.session && node.session == c.zc.SessionID():
			return node, snap, nil
		}
		c.deleteLockNode(node)
		if err := r.again(ctx, c.closing, "leader node "+node.path); err != nil {
			return nil, snapshot{}, err
		}
	}
}

// ownerOf returns the session that owns the granted node n, or 0 if n is
// gone. A node that waited has it already: its own watch read it, and
// still stands, since the engine confirms every grant on that watch (an
// owner never changes), so a handoff costs no round trip for the check.
// A node granted at once is read.
func ownerOf(ctx context.Context, c *Client, n *lockNode) (int64, error) {
	if n.isKnown() {
		return n.owner, nil
	}
	st, err := c.stat(ctx, n.path)
	if err != nil || st == nil {
		return 0, err
	}
	return st.EphemeralOwner, nil
}

// Leader returns the id of the current leader: the data of the first node
// in sequence order that still exists when read. It returns an error
// wrapping ErrNoLeader when no participant takes part. Like Curator's
// getLeader, it reads ZooKeeper at one moment; a leader may change right
// after.
func (e *Election) Leader(ctx context.Context) (string, error) {
	if err := usable(ctx, e, "leader"); err != nil {
		return "", err
	}
	return leaderOf(ctx, &e.li, e.path)
}

// Participants returns the participants in sequence order, the leader
// first, each with its id and node; empty if none takes part. Nodes that
// vanish while it reads are left out, and the first node that still exists
// is marked as the leader, as Curator's getParticipants does.
func (e *Election) Participants(ctx context.Context) ([]Participant, error) {
	if err := usable(ctx, e, "participants"); err != nil {
		return nil, err
	}
	return participantsOf(ctx, &e.li, e.path)
}

// Observe reports the leader, at once and at every change: a new leader,
// or none (a [Leader] with an empty Node). The channel holds the newest
// state only: a reader that falls behind gets the latest leader, never a
// stale one, and never slows the election down. It is closed when ctx ends
// or the Client closes. While the connection is down Observe reports
// nothing; once it is back, it reads the election again and reports a
// change that happened meanwhile. A read that fails otherwise is reported
// as a Leader with Err set, and Observe reads again after the Client's
// retry policy's first back-off. The goroutine behind it belongs to the
// Client, whose Close waits for it.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader, 1)
	if usable(ctx, e, "observe") != nil || !e.c.goFunc(func() { observe(ctx, &e.li, out) }) {
		close(out)
	}
	return out
}

// Path returns the election's path, relative to the namespace.
func (e *Election) Path() string {
	if e == nil {
		return ""
	}
	return e.path
}

// ID returns the participant id given to NewElection.
func (e *Election) ID() string {
	if e == nil {
		return ""
	}
	return e.id
}

// IsLeader reports whether a leadership taken through e stands: a local
// fact, as Curator's hasLeadership, with no ZooKeeper read.
func (e *Election) IsLeader() bool {
	return e != nil && e.live.Load() > 0
}

// site implements recipe.
func (e *Election) site() (*Client, string, string) {
	const notMade = "Election not made by NewElection"
	if e == nil || e.c == nil {
		return nil, "", notMade
	}
	return e.c, e.path, notMade
}

// Participant is one participant of an election, as [Election.Participants]
// and [Selector.Participants] report it.
type Participant struct {
	ID     string // the node's data as text: the participant id
	Node   string // the node's path, relative to the namespace
	Leader bool   // the first node that existed when read
}

// Leader is one state of an election, as [Election.Observe] reports it.
type Leader struct {
	ID   string // the leader's id; "" with no leader, or an empty id
	Node string // the leader's node, relative to the namespace; "" with no leader
	Err  error  // not nil if the election could not be read; ID and Node are then empty
}

// participantsOf lists the participants of the engine li's path.
func participantsOf(ctx context.Context, li *lockInternals, p string) ([]Participant, error) {
	out := []Participant{}
	err := eachExisting(ctx, li, func(node string, data []byte) bool {
		out = append(out, Participant{ID: string(data), Node: node, Leader: len(out) == 0})
		return true
	})
	if err != nil {
		return nil, wrapf(err, "participants %s", p)
	}
	return out, nil
}

// leaderOf returns the id of the leader of the engine li's path.
func leaderOf(ctx context.Context, li *lockInternals, p string) (string, error) {
	l, err := firstExisting(ctx, li)
	if err != nil {
		return "", wrapf(err, "leader %s", p)
	}
	if l.Node == "" {
		return "", wrapf(ErrNoLeader, "leader %s", p)
	}
	return l.ID, nil
}

// firstExisting reads the leader of li's path: the first child in sort
// order that exists when read, or a Leader with no Node.
func firstExisting(ctx context.Context, li *lockInternals) (Leader, error) {
	var l Leader
	err := eachExisting(ctx, li, func(node string, data []byte) bool {
		l = Leader{ID: string(data), Node: node}
		return false
	})
	if err != nil {
		return Leader{}, err
	}
	return l, nil
}

// eachExisting reads li's children in sort order and calls fn with the
// path (relative to the namespace) and data of each that still exists when
// read, until fn returns false.
func eachExisting(ctx context.Context, li *lockInternals, fn func(node string, data []byte) bool) error {
	c := li.c
	children, err := li.sortedChildren(ctx)
	if err != nil {
		return err
	}
	for _, ch := range children {
		full := path.Join(li.basePath, ch)
		data, err := retry(c, ctx, func() ([]byte, error) {
			d, _, err := c.zc.Get(ctx, full)
			return d, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if !fn(c.relPath(full), data) {
			return nil
		}
	}
	return nil
}

// observe follows the leader of li's path until ctx ends or the Client
// closes, and publishes each change on out, which it closes at the end.
func observe(ctx context.Context, li *lockInternals, out chan Leader) {
	defer close(out)
	c := li.c
	var last *Leader
	// The watches of the last read, removed once they are not waited for
	// (on zklock's own session): an Observe that ends leaves no watch
	// behind, on the server or in the session, however long the leader
	// stays.
	watches := new(zksession.Tentative)
	defer func() { watches.Drop() }()
	for {
		stateCh := c.stateChanged()
		t := new(zksession.Tentative)
		l, watch, err := watchLeader(zksession.WithTentative(ctx, t), li)
		watches.Drop() // the read before's, unless fired: a state change left it
		watches = t
		switch {
		case ctx.Err() != nil || errors.Is(err, ErrClosed) || c.usable() != nil:
			return
		case retryable(err):
			// Nothing to report while the connection is down: read again
			// once it is back.
			if c.awaitConnected(ctx, 0, 0) != nil {
				return
			}
			continue
		case err != nil:
			l = Leader{Err: wrapf(err, "observe %s", c.relPath(li.basePath))}
			if watch == nil {
				watch = backOff(c)
			}
		}
		if last == nil || last.ID != l.ID || last.Node != l.Node || (last.Err == nil) != (l.Err == nil) {
			publish(out, l)
			last = &l
		}
		select {
		case <-watch:
		case <-stateCh:
			if c.awaitConnected(ctx, 0, 0) != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-c.closing:
			return
		}
	}
}

// publish replaces what out holds with l. Only the observer sends on out,
// so once it has emptied the buffer the send cannot block.
func publish(out chan Leader, l Leader) {
	select {
	case <-out:
	default:
	}
	out <- l
}

// backOff returns a channel that fires after the retry policy's first
// back-off (a second if it has none).
func backOff(c *Client) <-chan zk.Event {
	wait, ok := c.opts.retry.AllowRetry(0, 0)
	if !ok || wait <= 0 {
		wait = time.Second
	}
	ch := make(chan zk.Event, 1)
	time.AfterFunc(wait, func() { ch <- zk.Event{} })
	return ch
}

// watchLeader reads the leader of li's path and sets a watch that fires
// when it may have changed: on the path's children, or, while the path
// does not exist, on its creation. Another layout's node among the
// children is an error wrapping ErrLayoutMismatch, with the watch.
func watchLeader(ctx context.Context, li *lockInternals) (Leader, <-chan zk.Event, error) {
	c := li.c
	type listing struct {
		children []string
		watch    <-chan zk.Event
	}
	ls, err := await(c, ctx, func() (listing, error) {
		ch, _, w, err := c.zc.ChildrenW(ctx, li.basePath)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, w, err = c.zc.ExistsW(ctx, li.basePath)
			if err == nil && ok {
				w = firedWatch // created meanwhile: read again
			}
		}
		return listing{ch, w}, err
	}, nil)
	if err != nil {
		return Leader{}, nil, closedErr(err)
	}
	if ls.children, err = li.contenders(ls.children); err != nil {
		return Leader{}, ls.watch, err // a mix-up of layouts: read again when it changes
	}
	sortChildren(ls.children, li.lockName, li.driver)
	for _, ch := range ls.children {
		full := path.Join(li.basePath, ch)
		data, err := await(c, ctx, func() ([]byte, error) {
			d, _, err := c.zc.Get(ctx, full)
			return d, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // its deletion fires the watch too
		}
		if err != nil {
			return Leader{}, nil, closedErr(err)
		}
		return Leader{ID: string(data), Node: c.relPath(full)}, ls.watch, nil
	}
	return Leader{}, ls.watch, nil
}
