package zklock

import (
	"context"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
)

// Mutex is a re-entrant distributed lock, wire-compatible with Curator's
// InterProcessMutex: a Go Mutex and a Java InterProcessMutex on the same
// path exclude each other.
//
// A Mutex is safe for concurrent use. A hold belongs to the context that
// Acquire returns, not to a goroutine: pass that context down, and an
// Acquire with it re-enters (only counting), a Release with it releases.
// Any other context is a new participant, so goroutines that share one
// Mutex exclude each other. Waiters are served first come, first served, in
// ZooKeeper sequence order. A hold belongs to the lock, not to the Mutex
// value: a context that holds a path through one Mutex re-enters through
// any other Mutex of the same Client and path (a Mutex per request is
// fine), and either may release it. Mutexes of different Clients are
// different participants, even in one process.
//
// [Mutex.Lock] returns the hold as a [Hold], which is released through
// itself and so cannot be released with the wrong context; prefer it to
// Acquire and Release by context, which remain for re-entry down a call
// chain in the manner of Curator.
//
// An acquire costs one round trip when the lock is free: its create, with
// the listing that decides sent right behind it. A Mutex that keeps taking
// its lock alone soon skips the listing: its create's reply proves that no
// other node can be there (the node's sequence number follows its last
// one, in a parent that an exists watch the Mutex keeps shows unchanged),
// so that an acquire and release send two requests, the least possible.
// What proves it lives in the Mutex value: keep one per lock to have it.
//
// A hold can be lost at any time: under StandardPolicy when the connection
// is suspended, under SessionPolicy when the session is lost, and under
// both when someone else deletes the lock node or the Client is closed. The
// hold's context is then cancelled with cause ErrLockLost. Between the
// event and the cancellation another process may already hold the lock;
// guard writes with [Mutex.CheckOp] or a fencing token from [Mutex.Token].
type Mutex struct {
	// Written once by the constructor (rules by NewReadWriteLock before it
	// returns), read-only after.
	c     *Client
	path  string        // base path as given, relative to the namespace
	li    lockInternals // the engine
	data  []byte        // node data
	rules sideRules     // a read/write lock's rules for this side; zero for a plain Mutex
	kind  Recipe        // what its events say it is: RecipeMutex unless a constructor says otherwise

	live liveCounter // holds of the lock that stand, through any Mutex of it (its lockCount; a Selector's also counts its own terms)
	key  any         // li.id(), boxed once: its holds' key (see keyOf)
	name string      // "lock " + path, its holds' name in errors, made once

	mu     sync.Mutex   // protects revoke
	revoke func(*Mutex) // revocation callback, nil if not revocable
}

// sideRules are what a [ReadWriteLock] installs on each of its sides, so
// that the Mutex itself knows nothing of reading and writing.
type sideRules struct {
	// admit runs before any I/O: it refuses ctx (an upgrade), or names the
	// node ctx takes at once (a downgrade), or returns nil, nil to queue.
	admit func(ctx context.Context) (*placement, error)
	// owns reports whether a child of the lock belongs to this side.
	owns func(child string) bool
}

// NewMutex returns a Mutex on path, which is relative to the Client's
// namespace and must satisfy ZooKeeper's path rules. It takes every lock
// option: [WithLockData] (its nodes' data), [WithDriver] (the predicates),
// [WithMaxHold] (a bound on each hold) and [WithLayout] (a kazoo Lock's
// nodes instead of Curator's InterProcessMutex's; not with WithDriver).
// It does no I/O: the
// lock's parent nodes are created on the first Acquire. It returns an error
// wrapping ErrInvalidArgument for a nil or misconfigured Client, an invalid
// option, or a path and data too large for one ZooKeeper request, and
// ErrInvalidPath for a bad path.
func NewMutex(c *Client, path string, opts ...LockOption) (*Mutex, error) {
	o, err := parseLockOptions("lock", path, opts, true)
	if err != nil {
		return nil, err
	}
	if o.layout == LayoutKazoo {
		o.driver, o.fast = kazooLock, kazooLockFast
		return newMutex(c, path, layout.KazooLockName, "", 1, o)
	}
	return newMutex(c, path, "lock-", "", 1, o)
}

// newMutex makes a Mutex from parsed options, of nodes named lockName and
// the lockID variant variant; a nil driver means StandardDriver. The
// engine takes o.fast, or StandardDriver's own paths for a StandardDriver
// (given or by default): the exact type, not one that embeds it.
func newMutex(c *Client, path, lockName, variant string, maxLeases int, o lockOptions) (*Mutex, error) {
	data, err := c.recipeData("lock", path, o.data)
	if err != nil {
		return nil, err
	}
	if err := o.kazooText("lock", path, "node", "contenders()", data); err != nil {
		return nil, err
	}
	if _, std := o.driver.(StandardDriver); std || o.driver == nil {
		o.driver, o.fast = StandardDriver{}, standardFast(maxLeases)
	}
	m := &Mutex{
		c:    c,
		path: path,
		li:   lockInternals{c: c, basePath: c.fullPath(path), lockName: lockName, variant: variant, driver: o.driver, maxLeases: maxLeases, fast: o.fast},
		data: data,
		kind: RecipeMutex,
	}
	m.key, m.name = m.li.id(), "lock "+path
	m.li.solo = c.solos.of(m.key)
	m.li.maxHold = o.maxHold
	m.live = c.lives.count(m.key)
	return m, nil
}

// lockKey implements lockKeyer: a Mutex's holds belong to its lock.
func (m *Mutex) lockKey() (any, string) {
	if m == nil || m.c == nil {
		return nil, ""
	}
	return m.key, m.path
}

// Lock is Acquire returning the hold as a [Hold]: release it with
// [Hold.Release], which cannot pick the wrong context, and pass
// [Hold.Context] (or [Hold.Bind]) down the call chain. A Lock with a
// context that already holds the lock re-enters, and returns another Hold
// that owes its own Release. Its errors are Acquire's.
func (m *Mutex) Lock(ctx context.Context) (*Hold, error) {
	hctx, err := m.acquire(ctx, false)
	return handleOf(m, m.Path(), hctx, err)
}

// TryLock is Lock without waiting: if another participant holds the lock,
// it returns an error wrapping ErrLocked at once and leaves no node behind.
// It never waits for the connection either: while the Client is not
// connected (suspended, lost, or before its first session) it fails at
// once with an error wrapping ErrNotConnected, and if the connection goes
// down during the call it fails so as soon as the Client sees it
// (go-zookeeper takes up to two thirds of the session timeout to notice a
// server that went silent), leaving no node behind. A context that
// already holds the lock re-enters, whatever the connection.
func (m *Mutex) TryLock(ctx context.Context) (*Hold, error) {
	hctx, err := m.acquire(ctx, true)
	return handleOf(m, m.Path(), hctx, err)
}

// Acquire blocks until the lock is held, ctx is done, or the Client is
// closed, and returns the context that carries the hold. If ctx already
// carries a hold of the lock, through m or through another Mutex of the
// same Client and path, Acquire only counts the re-entry and returns the
// hold's context; each Acquire owes one Release.
//
// The returned context is cancelled when the hold ends: with cause
// ErrReleased after the last Release, with cause ErrLockLost when the hold
// is lost. It keeps ctx's values but not its deadline or cancellation.
//
// Acquire waits for the connection too, for as long as ctx allows (the
// retry policy does not bound that wait). On failure it returns an error
// naming the path and wrapping ctx.Err() (and its cause), ErrClosed, or
// the ZooKeeper error, and leaves no node behind (a node it cannot delete
// while the connection is down is deleted once it is back; on zklock's own
// session, when ctx has ended, the delete is queued on the connection
// before Acquire returns and its reply not awaited, so that a silent
// connection does not hold the caller: on that connection the Client's
// later requests find the node gone, other sessions a round trip later;
// across a reconnect the delete is retried in the background). When ctx
// ends while the Client is not connected, the error also wraps
// ErrNotConnected and says for how long; while connected, it names the
// holder ([HolderError]) when it could be read in time (see HolderError:
// a wait cancelled with no deadline names none on zklock's own session).
func (m *Mutex) Acquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, false)
}

// TryAcquire is Acquire without waiting: if another participant holds the
// lock, it returns an error wrapping ErrLocked at once and leaves no node
// behind; without a connection it fails with ErrNotConnected, as
// [Mutex.TryLock] does. A context that already holds m re-enters.
func (m *Mutex) TryAcquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, true)
}

func (m *Mutex) acquire(ctx context.Context, try bool) (context.Context, error) {
	if err := valid(ctx, m, "acquire"); err != nil {
		return nil, err
	}
	if h := holdIn(ctx, m); h != nil && ctx.Err() == nil && h.enter() {
		return h.ctx, nil
	}
	req := acquireReq{data: m.data, try: try}
	var refused error
	if m.rules.admit != nil {
		req.at, refused = m.rules.admit(ctx)
	}
	a, err := m.c.acquiring(ctx, m.kind, "acquire", m.path, m.li.maxHold, refused)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	req.first = a.probeHolder(ctx, m.c, holderSource{path: m.path}, !try)
	req.onRevoke = m.onRevoke(a.story)
	node, snap, err := m.li.acquireTry(a.ctx, req)
	if err != nil {
		err = req.first.nameHolder(ctx, shutdownErr(ctx, a.ctx, err))
		return nil, a.failed(opErr(ctx, "acquire", m.path, err))
	}
	h := newHold(m.c, ctx, holdSpec{key: holdKey{keyOf(m)}, name: m.name, node: node, live: m.live, story: a.story, maxHold: a.maxHold})
	if !h.watch(snap, req.onRevoke) {
		return nil, a.failed(opErr(ctx, "acquire", m.path, ErrClosed))
	}
	a.granted(h)
	return h.ctx, nil
}

// onRevoke returns the revocation callback for a new hold of story st, or
// nil.
func (m *Mutex) onRevoke(st story) func(node string) {
	m.mu.Lock()
	fn := m.revoke
	m.mu.Unlock()
	if fn == nil {
		return nil
	}
	return func(node string) {
		st.emit(Event{Kind: EventRevocationRequested, Node: m.c.relPath(node)})
		m.c.goFunc(func() { fn(m) })
	}
}

// Release gives up one hold carried by ctx. The last Release of a hold
// cancels the hold's context with cause ErrReleased, then deletes the lock
// node; if the delete fails on the network it goes on in the background
// until it succeeds, the node is gone, or the Client closes, and Release
// returns nil. Release returns an error wrapping ErrLockLost if the hold
// was lost (clearing it), including a node found already gone.
//
// Release returns an error wrapping ErrNotHeld if ctx carries no hold of
// the lock. If holds taken through m stand meanwhile, that is most likely
// the mistake of releasing with the context given to Acquire instead of the
// one it returned, which leaves the lock held: the error says so, and so
// does a Warn record on the Client's logger, for callers that drop it.
func (m *Mutex) Release(ctx context.Context) error {
	if err := valid(context.Background(), m, "release"); err != nil {
		return err
	}
	h := holdIn(ctx, m)
	if h == nil {
		return notHeld(m.c, m.path, m.live.Load())
	}
	return h.release(m.path)
}

// IsAcquiredInThisProcess reports whether any context holds the lock,
// through m or through another Mutex of the same Client and path (the
// holds belong to the lock).
func (m *Mutex) IsAcquiredInThisProcess() bool {
	return m != nil && m.live != nil && m.live.Load() > 0
}

// IsOwnedBy reports whether ctx carries a live hold of m.
func (m *Mutex) IsOwnedBy(ctx context.Context) bool {
	return m != nil && holdIn(ctx, m).isLive()
}

// Path returns the lock's base path, relative to the namespace.
func (m *Mutex) Path() string {
	if m == nil {
		return ""
	}
	return m.path
}

// LockPath returns the path of the node of ctx's hold, relative to the
// namespace, or "" if ctx carries no live hold of m.
func (m *Mutex) LockPath(ctx context.Context) string {
	if h := holdIn(ctx, m); m != nil && h.isLive() {
		return m.c.relPath(h.node.path)
	}
	return ""
}

// Token returns the fencing token of ctx's hold: the creation zxid of its
// node, which strictly increases from one holder of the path to the next,
// across sessions and across the lock's parent being reaped and created
// again. It returns an error wrapping ErrNotHeld if ctx carries no hold, and
// ErrLockLost if the hold was lost.
//
// A hold granted at once under StandardPolicy, whose node its Client
// follows through the lock's parent (the two-request acquire), reads its
// token when first asked: Token then waits one round trip, or until the
// hold ends. From a
// Client's first Token on, the Client reads each new hold's token as it is
// granted, beside the acquire, so that fencing users rarely wait.
func (m *Mutex) Token(ctx context.Context) (int64, error) {
	h, err := m.heldOrErr(ctx, "token")
	if err != nil {
		return 0, err
	}
	return h.token(ctx, "token", m.path)
}

// CheckOp returns a check on the node of ctx's hold, to put first in
// conn.Multi: the transaction commits only while the node exists, that is,
// while the hold does. The path inside is the full ZooKeeper path. It
// returns an error wrapping ErrNotHeld or ErrLockLost like Token.
func (m *Mutex) CheckOp(ctx context.Context) (*zk.CheckVersionRequest, error) {
	h, err := m.heldOrErr(ctx, "check op")
	if err != nil {
		return nil, err
	}
	return &zk.CheckVersionRequest{Path: h.node.path, Version: -1}, nil
}

// Participants returns the full paths (relative to the namespace) of every
// node queued on the lock, holders first, in queue order; for a side of a
// [ReadWriteLock], the nodes of that side only. It is empty if the lock has
// never been used or its parent has been reaped.
func (m *Mutex) Participants(ctx context.Context) ([]string, error) {
	if err := valid(ctx, m, "participants"); err != nil {
		return nil, err
	}
	children, err := m.li.sortedChildren(ctx)
	if err != nil {
		return nil, wrapf(err, "participants %s", m.path)
	}
	out := make([]string, 0, len(children))
	for _, ch := range children {
		if m.rules.owns == nil || m.rules.owns(ch) {
			out = append(out, m.c.relPath(path.Join(m.li.basePath, ch)))
		}
	}
	return out, nil
}

// MakeRevocable makes holds acquired after the call revocable: when another
// process asks the holder of a node to release it (see [Revoke], or
// Curator's Revoker), fn runs on its own goroutine. It also runs for a
// request that arrives while an Acquire is still waiting. Revocation is
// cooperative: fn decides whether to Release. Close waits for fn to return,
// so fn must not call Close. A nil fn makes later holds not revocable.
func (m *Mutex) MakeRevocable(fn func(*Mutex)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.revoke = fn
	m.mu.Unlock()
}

// Do acquires m, runs fn, and releases. fn's context carries the hold (an
// acquire with it re-enters) and ends as soon as ctx or the hold ends (see
// [Hold.Bind]): its cause is ctx's when ctx ends first, ErrLockLost's
// when the hold is lost. Do returns the error of Acquire, or else the
// errors of fn and Release, joined; a hold lost while fn runs makes the
// Release error wrap ErrLockLost. If fn panics, Do releases and the panic
// goes on. A nil fn gives ErrInvalidArgument, before anything is acquired.
func (m *Mutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return wrapf(ErrInvalidArgument, "do %s: nil function", m.Path())
	}
	hd, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	return hd.run(ctx, fn)
}

// site implements recipe.
func (m *Mutex) site() (*Client, string, string) {
	const notMade = "Mutex not made by NewMutex or NewReadWriteLock"
	if m == nil || m.c == nil {
		return nil, "", notMade
	}
	return m.c, m.path, notMade
}

// heldOrErr returns ctx's hold of m if it stands.
// A nil ctx carries no hold.
func (m *Mutex) heldOrErr(ctx context.Context, what string) (*hold, error) {
	if err := valid(context.Background(), m, what); err != nil {
		return nil, err
	}
	h := holdIn(ctx, m)
	if err := h.check(what, m.path); err != nil {
		return nil, err
	}
	return h, nil
}
