package zklock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
	"github.com/zklock/zklock/internal/zksession"
)

// revokeMessage is the data Curator's Revoker writes into a lock node to ask
// its holder to release.
var revokeMessage = []byte(layout.RevokeMessage)

// errNodeGone means the node queued for a lock vanished (session expiry, a
// deletion by someone else, a reaped parent); the engine queues again.
var errNodeGone = errors.New("zklock: lock node vanished")

// lockInternals is the engine under every lock recipe. It queues a
// sequential node under basePath, decides with its Driver whether the node
// holds the lock, and waits for the node it must watch. Its waiter is the
// only place where an acquire waits; the Client's holdWatch and the
// background deletes wait only for the session's own events.
type lockInternals struct {
	c         *Client
	basePath  string // full ZooKeeper path of the lock (namespace included)
	lockName  string // name of our nodes before the sequence, such as "lock-"
	variant   string // tells locks apart whose nodes share path and name (see lockID); "" for most
	driver    Driver
	maxLeases int
	fast      Shortcuts     // what its recipe allows its built-in driver; zero for a Driver given through WithDriver (see shortcuts)
	solo      *solo         // a Mutex's: lets an acquire alone skip the listing; nil for none
	maxHold   time.Duration // WithMaxHold's bound of the lock's holds; 0 for none
}

// id identifies the lock li queues on (see lockID).
func (li *lockInternals) id() lockID {
	return lockID{li.c, li.basePath, li.lockName, li.variant}
}

// shortcuts returns the fast paths li may take: those its driver declares
// as a ShortcutDriver, else those its recipe set for its built-in driver
// (fast), which a Driver given through WithDriver has none of.
func (li *lockInternals) shortcuts() Shortcuts {
	if d, ok := li.driver.(ShortcutDriver); ok {
		return d.Shortcuts(li.maxLeases)
	}
	return li.fast
}

// lockNode is one node queued or held by the engine.
type lockNode struct {
	path    string // full ZooKeeper path
	name    string // last segment of path
	session int64  // session that owns the node

	position int // nodes ahead at its first decision; written by the waiter before a grant

	// Set by the first watchOwn, which then marks n known: before a wait,
	// or for a node granted at once, by its Client's holdWatch.
	czxid int64           // fencing token
	owner int64           // the node's ephemeral owner, as ZooKeeper reported it
	own   <-chan zk.Event // data watch on the node itself

	knownMu sync.Mutex    // protects known and knownC
	known   bool          // czxid and owner are set
	knownC  chan struct{} // closed once known; made only for one who waits before (see learned)

	dropped bool  // its wait or hold is over: its Client's holdWatch no longer follows it (guarded by holdWatch.mu)
	revoked int32 // the data version of the revocation request last reported, by watchOwn; -1 for none

	// The child watch on the parent that the listing sent behind its
	// create set, and that watch's count of events before it was sent,
	// until its Client's holdWatch decides whether its hold relies on it
	// (see holdWatch.take); nil for none. Guarded by holdWatch.mu.
	pw       *parentWatch
	pwEvents uint64

	solo *solo // its Mutex's, told when the node is deleted; may be nil
}

func newLockNode(p string, session int64) *lockNode {
	return &lockNode{path: p, name: path.Base(p), session: session, position: -1, revoked: -1}
}

// isKnown reports whether the first watchOwn of n has succeeded.
func (n *lockNode) isKnown() bool {
	n.knownMu.Lock()
	defer n.knownMu.Unlock()
	return n.known
}

// learned returns a channel that is closed once n is known. The channel
// is made only for a caller that must wait: most nodes are known before
// anyone asks, and a channel per node would weigh on a Client that holds
// a hundred thousand.
func (n *lockNode) learned() <-chan struct{} {
	n.knownMu.Lock()
	defer n.knownMu.Unlock()
	if n.known {
		return closedSignal
	}
	if n.knownC == nil {
		n.knownC = make(chan struct{})
	}
	return n.knownC
}

// markKnown marks n known, after its czxid and owner were set.
func (n *lockNode) markKnown() {
	n.knownMu.Lock()
	defer n.knownMu.Unlock()
	n.known = true
	if n.knownC != nil {
		close(n.knownC)
	}
}

// closedSignal is a closed channel, and firedWatch a watch channel that
// has fired: what a caller that must not wait is given.
var (
	closedSignal                 = closedChanOf[struct{}]()
	firedWatch   <-chan zk.Event = closedChanOf[zk.Event]()
)

// closedChanOf returns a new channel of T, closed.
func closedChanOf[T any]() chan T {
	ch := make(chan T)
	close(ch)
	return ch
}

// acquireReq is what a recipe asks of the engine.
type acquireReq struct {
	data     []byte            // node data
	try      bool              // decide once, never wait: ErrLocked instead
	onRevoke func(node string) // runs when someone asks the holder of node to release; may be nil
	at       *placement        // take this node at once instead of queueing; may be nil
	first    *holderProbe      // if not nil, sees the full path of the first node of each listing decided on (the holder, for HolderError)
}

// placement is a node that a recipe's rules entitle a context to take at
// once, without queueing, for as long as the node at guard exists: a read
// node in the place of the write node that its context holds (a downgrade).
type placement struct {
	name  string // node name, before the protection prefix
	guard string // full path of the node that must still exist
}

// acquire queues a node and waits until it holds the lock, ctx ends, or the
// Client closes. It waits for the connection too, before it queues and
// while it waits, bounded by ctx alone. Every failure deletes the node it
// created (once the connection is back, if it is down); a node that
// vanished while it waited is queued again, under the retry policy. An
// acquire that ctx ends while the Client is not connected says so, and
// for how long (see Client.offline).
func (li *lockInternals) acquire(ctx context.Context, req acquireReq) (_ *lockNode, _ snapshot, err error) {
	c := li.c
	judged := false // whether err says already if the wait ended offline
	defer func() {
		if !judged {
			err = c.offline(ctx, err)
		}
	}()
	if err := c.usable(); err != nil {
		return nil, snapshot{}, err
	}
	if req.at != nil {
		return li.acquireAt(ctx, req)
	}
	if req.try {
		// Peek first: when the lock is visibly taken, fail without writing.
		free, err := li.peek(ctx, req)
		if err != nil {
			return nil, snapshot{}, err
		}
		if !free {
			return nil, snapshot{}, ErrLocked
		}
	}
	r := newRetrier(c.opts.retry)
	for {
		// Queue on a session that is up: a node created while the
		// connection is down would only wait for it, and could land in a
		// session that replaces the current one.
		if err := li.awaitUp(ctx, req.try); err != nil {
			return nil, snapshot{}, err
		}
		n, snap, err := li.createAndWait(ctx, req)
		if err == nil {
			return n, snap, nil
		}
		if n == nil {
			return nil, snapshot{}, closedErr(err)
		}
		// Judged as the wait ended, not after the delete below, which may
		// outlast the connection: a busy lock's timeout stays one.
		err = c.offline(ctx, err)
		// Every exit after the create deletes the node, whatever the reason;
		// a vanished node may be an old session's node that is still dying.
		c.deleteGivenUp(ctx, n)
		if !errors.Is(err, errNodeGone) {
			judged = true
			return nil, snapshot{}, err
		}
		if err := r.again(ctx, c.closing, "lock node "+n.path); err != nil {
			return nil, snapshot{}, err
		}
	}
}

// acquireTry is acquire, and for a Try, under tryConnected: a Try never
// waits for a connection, and fails at once with an error wrapping
// ErrNotConnected if the connection is down, or as soon as the Client
// sees it go down, leaving no node behind.
func (li *lockInternals) acquireTry(ctx context.Context, req acquireReq) (n *lockNode, snap snapshot, err error) {
	if !req.try {
		return li.acquire(ctx, req)
	}
	err = li.c.tryConnected(ctx, func(ctx context.Context) (err error) {
		n, snap, err = li.acquire(ctx, req)
		return err
	})
	return n, snap, err
}

// awaitUp waits until the connection is up, before a create; a Try's ctx
// ends as soon as the connection is down (see Client.tryConnected), and
// its wait is not logged.
func (li *lockInternals) awaitUp(ctx context.Context, try bool) error {
	lock := li.basePath
	if try {
		lock = ""
	}
	return li.c.awaitConnectedFor(ctx, 0, 0, lock)
}

// createAndWait creates our node and waits until it holds the lock. On
// failure it returns the node, if it created one, which the caller
// deletes.
func (li *lockInternals) createAndWait(ctx context.Context, req acquireReq) (*lockNode, snapshot, error) {
	n, listed, pre, err := li.create(ctx, req)
	if err != nil {
		return n, snapshot{}, err
	}
	snap, err := li.waitOrClean(ctx, n, req, listed, pre)
	return n, snap, err
}

// create queues our node, and returns a listing that shows it, for the
// first decision, if it has one, and the Client's state from before the
// create. A node that solo proves alone from its create's reply comes
// with that listing, the node alone, and no listing is sent; any other
// comes with the listing sent right behind its create (createAndList),
// which solo records.
//
// The node's session is the one go-zookeeper had throughout the create,
// else the owner ZooKeeper reports (the session changed meanwhile: the
// create began in an outage that ended with a new session). When it is
// not the session of pre, the state returned is taken once the Client's
// view has the node's session, and the first decision lists anew: a node
// recorded under the wrong session would be taken for a dead one, and
// lose its place. On failure after the create, create returns the node
// too, for the caller to delete.
func (li *lockInternals) create(ctx context.Context, req acquireReq) (*lockNode, []string, snapshot, error) {
	c := li.c
	pre, sid := c.snapshot(), c.zc.SessionID()
	n, listed, err := li.createFrom(ctx, req, pre)
	if err != nil {
		return nil, nil, pre, err
	}
	pre, moved, err := li.settle(ctx, n, sid, pre)
	if moved {
		listed = nil
		c.holds.unlist(n) // its grant will rest on another listing
	}
	return n, listed, pre, err
}

// settle learns the session of n, whose create began while
// go-zookeeper's session was sid, and returns the state that a decision
// on n rests on: pre, the Client's state from before the create, if n is
// of pre's session; else (moved) the state once the Client's view has
// n's session, and a listing sent behind the create is not to be decided
// on (see create).
func (li *lockInternals) settle(ctx context.Context, n *lockNode, sid int64, pre snapshot) (_ snapshot, moved bool, err error) {
	c := li.c
	if n.session, err = c.createdIn(ctx, n.path, sid); err != nil || n.session == pre.session {
		return pre, false, err
	}
	pre, err = c.awaitSession(ctx, n.session)
	return pre, true, err
}

// createFrom is create's create, from the Client's state pre.
func (li *lockInternals) createFrom(ctx context.Context, req acquireReq, pre snapshot) (*lockNode, []string, error) {
	c := li.c
	record := li.soloOK()
	solo := record && !req.try
	if solo && li.solo.ready(c.connEpoch()) {
		return li.createAlone(ctx, req.data, pre)
	}
	var armed <-chan struct{}
	if solo {
		armed = li.arm()
	}
	n, listed, parent, err := li.createAndList(ctx, req.data, pre)
	if err != nil {
		return nil, nil, err
	}
	if record {
		li.solo.created(n.name, 0, 0)
		if listed != nil {
			li.solo.listed(n.name, listed, parent)
		}
	}
	if armed != nil {
		select { // it travelled with the create: wait as for the listing
		case <-armed:
		case <-ctx.Done():
		case <-c.closing:
		}
	}
	return n, listed, nil
}

// createAlone creates our node alone, and returns with it the listing it
// would have had if solo proves it alone (the node alone), else none: the
// first decision lists.
func (li *lockInternals) createAlone(ctx context.Context, data []byte, pre snapshot) (*lockNode, []string, error) {
	c := li.c
	conn := c.connEpoch()
	n, err := li.createNode(ctx, data, pre)
	if err != nil {
		return nil, nil, err
	}
	if !li.solo.created(n.name, conn, c.connEpoch()) {
		return n, nil, nil
	}
	c.log.Debug("zklock: granted alone, from the create's reply", "path", n.path)
	return n, []string{n.name}, nil
}

// createNode creates our node with the driver, from the Client's state
// pre.
func (li *lockInternals) createNode(ctx context.Context, data []byte, pre snapshot) (*lockNode, error) {
	p, err := li.driver.CreateNode(ctx, li.c, path.Join(li.basePath, li.lockName), data)
	if err != nil {
		return nil, err
	}
	return li.newNode(p, pre.session), nil
}

// newNode returns our node at p, created in session.
func (li *lockInternals) newNode(p string, session int64) *lockNode {
	n := newLockNode(p, session)
	n.solo = li.solo
	return n
}

// createAndList creates our node and lists the lock's children in one
// round trip (see createBehind). The listing, with the parent's stat, is
// returned only if it shows our node (if it overtook the create, or
// failed, the first decision lists again). snap is the Client's state
// before.
func (li *lockInternals) createAndList(ctx context.Context, data []byte, snap snapshot) (*lockNode, []string, *zk.Stat, error) {
	c := li.c
	type listing struct {
		children []string
		parent   *zk.Stat
	}
	// The listing sets a child watch on the parent, which a hold granted
	// from it relies on instead of a watch of its own (see holdWatch).
	pw, events := c.holds.listing(li.basePath)
	// shown is the node the listing showed; nil, on any other way out (a
	// Driver that panics included), lets the parent's watch go.
	var shown *lockNode
	defer func() { c.holds.listed(li.basePath, pw, events, shown) }()
	n, l, err := createBehind(ctx, li, data, snap, func(ctx context.Context) listing {
		var children []string
		var st *zk.Stat
		var err error
		if pw != nil {
			children, st, _, err = c.zc.ChildrenW(routedOnly(ctx), li.basePath)
		} else {
			children, st, err = c.zc.Children(ctx, li.basePath)
		}
		if err != nil {
			return listing{}
		}
		return listing{children, st}
	})
	if err != nil || !slices.Contains(l.children, n.name) {
		return n, nil, nil, err
	}
	shown = n
	return n, l.children, l.parent, nil
}

// createBehind creates our node with the driver and sends read right
// behind the create, on the same session, so that ZooKeeper serves it
// after the create and the caller waits one round trip for both (see
// readBehind). read's outcome comes with the node, unless ctx ends or the
// Client closes first (then it is T's zero value). snap is the Client's
// state before.
func createBehind[T any](ctx context.Context, li *lockInternals, data []byte, snap snapshot, read func(context.Context) T) (*lockNode, T, error) {
	c := li.c
	var out T
	cctx, sent, listed, ok := readBehind(ctx, c, read)
	if !ok {
		return nil, out, ErrClosed
	}
	defer sent(false) // a Driver that panics: the create's path is forgotten, and the read dropped
	// A custom driver may create otherwise: then the read follows the
	// create's reply.
	n, err := li.createNode(cctx, data, snap)
	sent(err == nil)
	if err != nil { // the read's outcome is dropped, its watch removed (see readBehind)
		return nil, out, err
	}
	select {
	case out = <-listed:
	case <-ctx.Done(): // the first decision reads again, under ctx
	case <-c.closing:
	}
	return n, out, nil
}

// readBehind prepares read to be sent right behind a create, so that
// ZooKeeper, which serves one session's requests in order, serves it after
// the create and the caller waits one round trip for both. The create must
// run under the returned context (see sending); the caller calls sent once
// the create has returned, with whether it created the node (a deferred
// sent(false) after it does nothing). read runs under the context it is
// given; its outcome comes on the channel for a create that succeeded
// (after one that failed it may never come, and must not be used). ok is
// false once the Client has begun to close.
//
// On zklock's own session, read runs on the create's goroutine as soon as
// the create is queued (see whenQueued), before the create waits for its
// reply: it goes on the wire after the create, and its reply, which
// ZooKeeper sends after the create's, finds the create answered; no
// goroutine is needed. A create that fails costs its read nonetheless,
// once queued: the read is in the create's write, before the create's
// reply is known (waiting for the reply would cost every grant a round
// trip, and a transaction cannot hold a read with a write). So its outcome
// is dropped, and the watches it set are removed (zksession.Tentative),
// without waiting: left, they would stay on the server until the node
// changed, which under a parent where the create is refused may never
// happen, and a session would keep one more for every failed attempt. A
// create that fails before it is queued sends no read. A create that
// succeeds without being queued here (a Driver that creates otherwise) is
// followed by its read.
//
// On a go-zookeeper connection, whose queue the Client cannot see, read is
// handed to a goroutine right before the create is sent, and overtakes it
// now and then (its caller then lists again). A create that fails before
// it is sent sends no read; one sent may have had its read sent too, and
// a watch it set stays until it fires (go-zookeeper cannot remove one).
func readBehind[T any](ctx context.Context, c *Client, read func(context.Context) T) (cctx context.Context, sent func(created bool), out <-chan T, ok bool) {
	res := make(chan T, 1)
	var decided sync.Once
	if c.zc.Native() {
		var t zksession.Tentative
		rctx := zksession.WithTentative(ctx, &t)
		var ran sync.Once
		run := func() { ran.Do(func() { res <- read(rctx) }) }
		sent = func(created bool) {
			decided.Do(func() {
				if created {
					run()
					return
				}
				ran.Do(func() {}) // not sent, if it was not yet
				t.Drop()
			})
		}
		return context.WithValue(ctx, sendingKey{}, func(string) { run() }), sent, res, true
	}
	handed := make(chan struct{})
	var once sync.Once
	var skip atomic.Bool // the create failed before read was handed
	sending := func(string) { once.Do(func() { close(handed) }) }
	sent = func(created bool) { // a create never handed: read goes on its own, if it succeeded
		decided.Do(func() {
			skip.Store(!created)
			sending("")
		})
	}
	if !c.goFunc(func() {
		select {
		case <-handed:
		case <-ctx.Done(): // the caller no longer waits for read
			return
		}
		if !skip.Load() {
			res <- read(ctx)
		}
	}) {
		return nil, nil, nil, false
	}
	return context.WithValue(ctx, sendingKey{}, sending), sent, res, true
}

// acquireAt creates the node req.at names, non-sequential and protected,
// in one transaction with a check that req.at.guard still exists, and
// grants it at once.
func (li *lockInternals) acquireAt(ctx context.Context, req acquireReq) (*lockNode, snapshot, error) {
	c := li.c
	snap := c.snapshot()
	p, err := c.createIn(ctx, layoutOf(li.driver), path.Join(li.basePath, req.at.name), req.data, zk.FlagEphemeral, req.at.guard)
	if err != nil {
		return nil, snapshot{}, closedErr(err)
	}
	n := newLockNode(p, snap.session)
	own, err := watchOwn(ctx, c, n, req.onRevoke)
	if err != nil {
		c.deleteLockNode(n)
		if errors.Is(err, errNodeGone) {
			err = fmt.Errorf("node %s vanished: %w", p, zk.ErrNoNode)
		}
		return nil, snapshot{}, err
	}
	n.own, n.position = own, 0
	return n, snap, nil
}

// waitOrClean is wait, deleting the node if a user callback (a Driver)
// panics, before the panic goes on.
func (li *lockInternals) waitOrClean(ctx context.Context, n *lockNode, req acquireReq, listed []string, pre snapshot) (snapshot, error) {
	done := false
	defer func() {
		if !done {
			li.c.deleteLockNode(n)
		}
	}()
	snap, err := li.wait(ctx, n, req, listed, pre)
	done = true
	return snap, err
}

// peek reports whether a node created now could get the lock at once.
func (li *lockInternals) peek(ctx context.Context, req acquireReq) (bool, error) {
	children, err := li.sortedChildren(ctx)
	if err != nil {
		return false, err
	}
	req.first.see(firstChild(li.basePath, children))
	probe := probeName(li.driver, li.lockName)
	res, err := li.driver.GetsTheLock(append(children, probe), probe, li.maxLeases)
	if err != nil {
		return false, err
	}
	return res.Acquired, nil
}

// wait waits until the driver grants n the lock (or, with try, decides
// once). listed, if not nil, is a listing that shows n, for the first
// decision, read after the Client's state was pre. n's own watch, which
// tells of its deletion and of revocation requests, is set before
// waiting; a revocable node sets it at once, and a node granted at once
// leaves it to its Client's holdWatch.
func (li *lockInternals) wait(ctx context.Context, n *lockNode, req acquireReq, listed []string, pre snapshot) (snapshot, error) {
	if req.onRevoke != nil {
		own, err := watchOwn(ctx, li.c, n, req.onRevoke)
		if err != nil {
			return snapshot{}, err
		}
		n.own = own
	}
	w := waiter{c: li.c, lock: li.basePath, own: n, session: n.session, onRevoke: req.onRevoke, try: req.try}
	if listed != nil {
		w.pre = &pre
	}
	return w.run(ctx, func(ctx context.Context) (verdict, error) {
		children := listed
		listed = nil
		return li.decide(ctx, n, children, req)
	})
}

// decide asks the driver about n, from children if given, else from one
// new listing, of which only its layout's contenders count (a kazoo Lock
// counts no readers), for the holder it names and n's position too. When
// n must wait, it watches the one node the driver names (and, the first
// time, n itself, in the same round trip); if that node is already gone,
// the verdict asks to decide again at once.
//
// Two shortcuts take the listing off a handoff's critical path, where the
// driver allows them (see Shortcuts for the facts they rest on). Once the
// listing shows the watched node as the only one in n's way, that node's
// deletion alone grants the lock: the nodes before n can only go, never
// come, so no listing could show more (the waiter still checks first that
// n itself stands). And a waiter with more than one node in its way also
// watches the one before the one it waits for: when that one goes, the
// one it waits for most likely holds, and the waiter lists then, while it
// holds, so that its release grants at once.
func (li *lockInternals) decide(ctx context.Context, n *lockNode, children []string, req acquireReq) (verdict, error) {
	var err error
	if children == nil {
		if children, err = li.children(ctx); err != nil {
			return verdict{}, err
		}
	}
	if children, err = li.contenders(children); err != nil {
		return verdict{}, err
	}
	children = sortUpTo(children, n.name, li.lockName, li.driver)
	if n.position < 0 {
		n.position = len(children) - 1
	}
	res, err := li.driver.GetsTheLock(children, n.name, li.maxLeases)
	if err == nil && !res.Acquired {
		req.first.see(firstChild(li.basePath, children)) // the holder, that n waits for
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return verdict{}, errNodeGone
	case err != nil:
		return verdict{}, err
	case res.Acquired || req.try:
		return verdict{granted: res.Acquired}, nil
	case !slices.Contains(children, res.Watch):
		return verdict{}, fmt.Errorf("driver asked to watch %q, which is not a child of %s: %w", res.Watch, li.basePath, ErrInvalidArgument)
	}
	return li.watchAhead(ctx, n, children, res, req)
}

// watchAhead sets the watches of decide's verdict that n must wait, from
// children, sorted up to n, and res, the driver's answer on them: on the
// node res names, on n itself the first time, and ahead of the watched
// node where the driver allows (see decide). A watched node found gone
// asks to decide again at once, or grants, if its deletion alone grants.
func (li *lockInternals) watchAhead(ctx context.Context, n *lockNode, children []string, res PredicateResult, req acquireReq) (verdict, error) {
	v := verdict{c: li.c}
	sc := li.shortcuts()
	var ahead <-chan watchResult
	if sc.GrantOnDelete {
		next, err := li.driver.GetsTheLock(slices.DeleteFunc(slices.Clone(children), func(ch string) bool { return ch == res.Watch }), n.name, li.maxLeases)
		v.grantOnDelete = err == nil && next.Acquired
		if err == nil && !next.Acquired && sc.LookAhead {
			ahead = watchAlongside(ctx, li.c, path.Join(li.basePath, next.Watch))
		}
	}
	ownErr := watchOwnAlongside(ctx, li.c, n, req.onRevoke)
	watched := path.Join(li.basePath, res.Watch)
	ch, err := li.c.watchNode(ctx, watched)
	if err == nil {
		v.watch, v.watched = ch, watched
	}
	if ahead != nil {
		if a := <-ahead; a.err == nil {
			v.ahead, v.mine = a.ch, a.t
		} else if errors.Is(a.err, zk.ErrNoNode) {
			v.ahead = firedWatch // gone already: list again while the watched node holds
		}
	}
	if err := <-ownErr; err != nil {
		v.letGo(abandoned)
		return verdict{}, err
	}
	if errors.Is(err, zk.ErrNoNode) {
		// Gone already. If its deletion alone grants, it has granted (the
		// waiter confirms as for any grant); else decide again at once.
		// The watch ahead, if any, goes with the verdict.
		return verdict{granted: v.grantOnDelete, c: v.c, mine: v.mine}, nil
	}
	if err != nil {
		v.letGo(abandoned)
		return verdict{}, err
	}
	return v, nil
}

// group asks the engine for nodes that one acquire queues together and
// that hold together, such as a semaphore's leases: they are granted by
// the group's rule, a hook of the recipe's, instead of by the driver's
// predicate, once a listing shows them all. The driver only creates and
// sorts them.
type group struct {
	n    int    // nodes to create, at least one
	data []byte // their data
	try  bool   // decide once, never wait: ErrLocked instead
	// rule reports whether the group holds, from a listing of the lock's
	// children, in no order, that shows every one of its nodes; an error
	// ends the acquire.
	rule func(children []string) (bool, error)
}

// acquireGroup creates g's nodes and waits until g's rule grants them,
// or (with try) decides once, until ctx ends or the Client closes (see
// waiter). It does not wait for the connection first, nor queue again:
// its caller, which orders the groups (a semaphore's internal lock),
// does. On failure it deletes every node it created; a node found gone is
// errNodeGone.
func (li *lockInternals) acquireGroup(ctx context.Context, g group) ([]*lockNode, snapshot, error) {
	nodes, listed, pre, err := li.createGroup(ctx, g)
	if err != nil {
		return nil, snapshot{}, err
	}
	w := waiter{c: li.c, lock: li.basePath, session: nodes[0].session, try: g.try}
	if listed != nil { // read after pre, which the first grant rests on
		w.pre = &pre
	}
	snap, err := w.run(ctx, func(ctx context.Context) (verdict, error) {
		l := listed
		listed = nil
		return li.decideGroup(ctx, nodes, l, g.try, g.rule)
	})
	if err != nil {
		deleteNodes(ctx, li.c, nodes)
		return nil, snapshot{}, err
	}
	return nodes, snap, nil
}

// createGroup creates g's nodes one after another, and lists the lock's
// children, with a watch, right behind the last create (see
// createBehind), so that the first decision costs no round trip of its
// own. It returns that listing if it shows every node, and the state the
// first decision rests on (see create). Nodes of two sessions are
// errNodeGone: the earlier session's are gone. On failure it deletes the
// nodes it made.
func (li *lockInternals) createGroup(ctx context.Context, g group) (nodes []*lockNode, listed *childListing, pre snapshot, err error) {
	c := li.c
	defer func() {
		if err != nil {
			deleteNodes(ctx, c, nodes)
			nodes, listed = nil, nil
		}
	}()
	pre = c.snapshot()
	var l childListing
	for i := range g.n {
		sid := c.zc.SessionID()
		var n *lockNode
		if i < g.n-1 {
			n, err = li.createNode(ctx, g.data, pre)
		} else {
			n, l, err = createBehind(ctx, li, g.data, pre, li.listWatched)
		}
		if err != nil {
			return nodes, nil, pre, closedErr(err)
		}
		nodes = append(nodes, n)
		var moved bool
		if pre, moved, err = li.settle(ctx, n, sid, pre); err != nil {
			return nodes, nil, pre, err
		}
		if n.session != nodes[0].session {
			return nodes, nil, pre, errNodeGone
		}
		if moved {
			l = childListing{} // decided on, it would rest on a state of another session
		}
	}
	if l.err != nil || !listsAll(l.children, nodes) {
		return nodes, nil, pre, nil
	}
	return nodes, &l, pre, nil
}

// decideGroup decides on nodes by rule, from l if it is given, else from
// one new listing of the lock's children. The listing sets a child watch,
// which the verdict waits for: any change of the children may change
// rule's answer; with try, which decides once, it sets none. A listing
// that lacks one of nodes means it is gone (errNodeGone), and so does a
// lock node gone.
func (li *lockInternals) decideGroup(ctx context.Context, nodes []*lockNode, l *childListing, try bool, rule func([]string) (bool, error)) (v verdict, err error) {
	v.c = li.c
	if l == nil {
		list, lctx := li.listWatched, ctx
		switch {
		case try: // decides once: no watch to wait on
			list = li.listOnce
		case len(nodes) == 0:
			// No node of the group among the children, whose deletion
			// would fire the watch if the wait gave up (a kazoo
			// Semaphore's acquirer waits before it makes its leases): the
			// watch is the verdict's own, removed then.
			lctx, v.mine = li.c.tentative(ctx)
		}
		got, err := retry(li.c, ctx, func() (childListing, error) {
			l := list(lctx)
			return l, l.err
		})
		if err == nil {
			l = &got
		}
		defer func() {
			if err != nil {
				v.letGo(abandoned)
				v = verdict{}
			}
		}()
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return v, errNodeGone
		case err != nil:
			return v, err
		}
	}
	if !listsAll(l.children, nodes) {
		return v, errNodeGone
	}
	if v.granted, err = rule(l.children); err != nil {
		return v, err
	}
	v.watch = l.watch
	return v, nil
}

// childListing is one listing of a lock's children, with the child watch
// it set.
type childListing struct {
	children []string
	watch    <-chan zk.Event
	err      error
}

// listWatched lists the lock's children once, with a watch.
func (li *lockInternals) listWatched(ctx context.Context) childListing {
	children, _, ch, err := li.c.zc.ChildrenW(ctx, li.basePath)
	return childListing{children, ch, err}
}

// listOnce lists the lock's children once, without a watch.
func (li *lockInternals) listOnce(ctx context.Context) childListing {
	children, _, err := li.c.zc.Children(ctx, li.basePath)
	return childListing{children: children, err: err}
}

// listsAll reports whether children lists every one of nodes.
func listsAll(children []string, nodes []*lockNode) bool {
	for _, n := range nodes {
		if !slices.Contains(children, n.name) {
			return false
		}
	}
	return true
}

// deleteNodes deletes nodes, guaranteed (see Client.deleteNode), for a
// caller whose context is ctx (see Client.deleteGivenUp).
func deleteNodes(ctx context.Context, c *Client, nodes []*lockNode) {
	for _, nd := range nodes {
		c.deleteGivenUp(ctx, nd)
	}
}

// watchAlongside sets a watch on the node at p on another goroutine, so
// that its request travels with the caller's next one. The watch is the
// caller's own, not shared through the Client's watch set: the node it
// watches is another waiter's predecessor, whose shared watch must deliver
// its event to that waiter, not to this one.
func watchAlongside(ctx context.Context, c *Client, p string) <-chan watchResult {
	return alongside(c, watchResult{err: ErrClosed}, func() watchResult {
		wctx, t := c.tentative(ctx)
		ch, err := await(c, wctx, func() (<-chan zk.Event, error) {
			_, _, ch, err := c.zc.GetW(wctx, p)
			return ch, err
		}, nil)
		if err != nil {
			dropWatches(t) // a watch its abandoned request may still set
		}
		return watchResult{ch, t, closedErr(err)}
	})
}

// watchResult is the outcome of setting a node's watch.
type watchResult struct {
	ch  <-chan zk.Event
	t   *zksession.Tentative // removes it (zklock's own session)
	err error
}

// alongside runs f on a goroutine of the Client, so that its request
// travels with the caller's next one, and yields f's outcome; closed,
// once the Client has begun to close and f cannot run.
func alongside[T any](c *Client, closed T, f func() T) <-chan T {
	out := make(chan T, 1)
	if !c.goFunc(func() { out <- f() }) {
		out <- closed
	}
	return out
}

// watchOwnAlongside sets n's own watch, if it is not set yet, on another
// goroutine, so that its request travels with the caller's next one. The
// channel yields its outcome.
func watchOwnAlongside(ctx context.Context, c *Client, n *lockNode, onRevoke func(string)) <-chan error {
	if n.isKnown() {
		out := make(chan error, 1)
		out <- nil
		return out
	}
	return alongside(c, ErrClosed, func() error {
		ch, err := watchOwn(ctx, c, n, onRevoke)
		n.own = ch
		return err
	})
}

// watchOwn sets a data watch on n and returns it. The first time, it also
// learns n's fencing token and ephemeral owner, and marks n known. (n's
// session is the one that created it, known from the create.) It reports
// a pending revocation request once, however often the watch is set
// again: n's callers set it one at a time.
func watchOwn(ctx context.Context, c *Client, n *lockNode, onRevoke func(string)) (<-chan zk.Event, error) {
	type got struct {
		data []byte
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	c.holds.expect(n) // before the watch is set: none of its events is missed
	g, err := retry(c, ctx, func() (got, error) {
		d, s, ch, err := c.zc.GetW(ctx, n.path)
		return got{d, s, ch}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, errNodeGone
	}
	if err != nil {
		return nil, err
	}
	if n.isKnown() {
		// Watching again, after a data change. A different node under the
		// same name is not ours.
		if g.stat.Czxid != n.czxid {
			return nil, errNodeGone
		}
	} else {
		n.czxid, n.owner = g.stat.Czxid, g.stat.EphemeralOwner
		n.markKnown()
	}
	// Once per request: the watch may be set again with no new request
	// (the Client's holdWatch learns of a data change after the waiter
	// has seen the request, and the hold sets its watch again).
	if onRevoke != nil && bytes.Equal(g.data, revokeMessage) && g.stat.Version != n.revoked {
		n.revoked = g.stat.Version
		onRevoke(n.path)
	}
	return g.ch, nil
}

// ownEventErr returns why an event of the watch on our own node ends our
// claim to it, or nil for a data change (a revocation request, or any
// write), after which the node is watched again.
func ownEventErr(ev zk.Event) error {
	switch {
	case ev.Type == zk.EventNodeDeleted:
		return errNodeGone
	case ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrSessionExpired):
		return errNodeGone
	case ev.Type == zk.EventNotWatching:
		return ErrClosed
	}
	return nil
}

// ownEvent handles an event of the watch on a waiting node: it ends the
// wait, or watches the node again.
func ownEvent(ctx context.Context, c *Client, n *lockNode, ev zk.Event, onRevoke func(string)) error {
	if err := ownEventErr(ev); err != nil {
		return err
	}
	ch, err := watchOwn(ctx, c, n, onRevoke)
	n.own = ch
	return err
}

// children lists the lock's children, unsorted. A missing lock node has
// no children.
func (li *lockInternals) children(ctx context.Context) ([]string, error) {
	c := li.c
	children, err := retry(c, ctx, func() ([]string, error) {
		ch, _, err := c.zc.Children(ctx, li.basePath)
		return ch, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return children, err
}

// sortedChildren lists the lock's children in the driver's order: its
// layout's contenders, and an error wrapping ErrLayoutMismatch if another
// layout's nodes are among them.
func (li *lockInternals) sortedChildren(ctx context.Context) ([]string, error) {
	children, err := li.children(ctx)
	if err != nil {
		return nil, err
	}
	if children, err = li.contenders(children); err != nil {
		return nil, err
	}
	sortChildren(children, li.lockName, li.driver)
	return children, nil
}

// contenders returns, of a listing of the lock, its layout's contenders,
// in place, or an error wrapping ErrLayoutMismatch if another layout's
// nodes are among the children.
func (li *lockInternals) contenders(children []string) ([]string, error) {
	if err := checkLayout(li.driver, li.basePath, children); err != nil {
		return nil, err
	}
	return contenders(li.driver, children), nil
}

// verdict is one decision of a waiter's decide step.
type verdict struct {
	granted bool            // the wait is over
	watch   <-chan zk.Event // fires when it is worth deciding again; nil: at once
	// grantOnDelete: the deletion of the watched node grants the lock,
	// without deciding again.
	grantOnDelete bool
	ahead         <-chan zk.Event // fires when it is worth deciding again, ahead of watch; may be nil

	// The watches the verdict's decide set, which the waiter gives back
	// (letGo) when it no longer waits for them: on the node at watched,
	// watch, shared through the Client's watch set; and mine, those of
	// its own (ahead, or a group's listing).
	c       *Client
	watched string
	mine    *zksession.Tentative
}

// letGo gives back v's watches, once the waiter no longer waits for
// them, for the reason why:
//   - granted: the watches stay until they fire (a removal would cost a
//     request where their events cost none; the node waited for is gone
//     anyway);
//   - decidedAgain: the shared watch stays for the next verdict, which
//     most likely waits on the same node (and takes it back before this
//     one lets it go), and v's own are removed: a next verdict that
//     watches the same node has a watch of its own there, so the server's
//     stays, and one that does not no longer needs it;
//   - abandoned: the wait ends without them (it failed, or ctx ended), and
//     each one, unfired and of no other wait, is removed (see
//     Client.unwatchNode), so that a wait that gave up leaves no watch on
//     the server.
func (v verdict) letGo(why letGoReason) {
	if v.watched != "" {
		v.c.unwatchNode(v.watched, v.watch, why == abandoned)
	}
	if why != granted {
		dropWatches(v.mine)
	}
}

// letGoReason is why a waiter gives back a verdict's watches (see
// verdict.letGo).
type letGoReason uint8

const (
	granted letGoReason = iota
	decidedAgain
	abandoned
)

// waiter is the engine's one waiting loop, shared by the lock queue and the
// semaphore's leases. Its decide step reads ZooKeeper once and either
// grants or names what to wait for; the waiter confirms a grant against
// what happened meanwhile, waits for the next event, and recovers after a
// disconnect, for as long as ctx allows.
type waiter struct {
	c        *Client
	lock     string    // full path of what it waits for, for the log
	own      *lockNode // our node, whose events come first; may be nil
	session  int64     // the session our nodes belong to
	onRevoke func(string)
	try      bool
	pre      *snapshot // the state before the read of the first decision, if earlier than its call
}

// run decides until decide grants, fails, or (with try) once.
func (w *waiter) run(ctx context.Context, decide func(context.Context) (verdict, error)) (_ snapshot, err error) {
	c := w.c
	// last is the newest verdict that did not fail, whose watches the
	// waiter holds until the next one, or the end. (A decision that fails
	// gives its own back.)
	var last verdict
	defer func() {
		if err != nil {
			last.letGo(abandoned)
		} else {
			last.letGo(granted)
		}
	}()
	for {
		if err := c.usable(); err != nil {
			return snapshot{}, err // a closing Client grants nothing more
		}
		// pre is taken before the read the verdict rests on: a grant stands
		// only if nothing (a suspension, a new session) happened since, and
		// the hold is measured against it, so a later change ends it.
		stateCh, pre := c.stateChanged(), c.snapshot()
		if w.pre != nil {
			pre, w.pre = *w.pre, nil
		}
		v, err := decide(ctx)
		if err == nil {
			last.letGo(decidedAgain) // after v took its own, most likely the same
			last = v
		}
		if retryable(err) {
			if err := w.recover(ctx); err != nil {
				return snapshot{}, err
			}
			continue
		}
		switch {
		case err != nil:
			return snapshot{}, err
		case v.granted:
		case w.try:
			return snapshot{}, ErrLocked
		case v.watch != nil:
			// The watch's event can grant too (see verdict.grantOnDelete).
			if v.granted, err = w.await(ctx, v, stateCh); err != nil {
				return snapshot{}, err
			}
		}
		if v.granted { // confirmed against pre, taken before the listing the verdict rests on
			if ok, err := w.confirm(ctx, pre); ok || err != nil {
				return pre, err
			}
		}
	}
}

// confirm reports whether a grant decided after pre stands. An event on our
// node comes first; a ctx that ended first wins over the grant; and a
// suspension since pre means deciding again.
func (w *waiter) confirm(ctx context.Context, pre snapshot) (bool, error) {
	if w.own != nil {
		select {
		case ev := <-w.own.own:
			return false, ownEvent(ctx, w.c, w.own, ev, w.onRevoke)
		default:
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err // ctx ended first: no grant
	}
	if pre.session != w.session && w.session != 0 {
		return false, errNodeGone
	}
	return w.c.holdLost(pre) == nil, nil
}

// await blocks until a watch of v fires, our node changes, the connection
// state changes, ctx ends or the Client closes. It reports whether the
// wait ended in a grant (to confirm); false with no error means: decide
// again.
func (w *waiter) await(ctx context.Context, v verdict, stateCh <-chan struct{}) (bool, error) {
	var own <-chan zk.Event
	if w.own != nil {
		own = w.own.own
	}
	select {
	case ev := <-v.watch:
		// A deletion grants if the verdict said so. Anything else (a data
		// change, a watch shared with another waiter, which sees only the
		// channel close) means deciding again.
		return v.grantOnDelete && ev.Type == zk.EventNodeDeleted, nil
	case <-v.ahead:
		return false, nil
	case ev := <-own:
		return false, ownEvent(ctx, w.c, w.own, ev, w.onRevoke)
	case <-stateCh:
		return false, w.recover(ctx)
	case <-ctx.Done():
		// If the watch fired at this same moment we may now hold the lock.
		// ctx ending "happened before" that, so we pretend we did not get
		// it: the caller deletes our node, which releases the lock if we
		// held it.
		return false, ctx.Err()
	case <-w.c.closing:
		return false, ErrClosed
	}
}

// recover waits, after a disconnect or a failed read, until the connection
// is back, for as long as ctx allows. Our nodes live as long as the
// session that made them: if it is lost, they are gone.
func (w *waiter) recover(ctx context.Context) error {
	lock := w.lock
	if w.try {
		lock = ""
	}
	err := w.c.awaitConnectedFor(ctx, w.session, 0, lock)
	if errors.Is(err, errSessionChanged) {
		return errNodeGone
	}
	return err
}
