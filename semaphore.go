package zklock

import (
	"cmp"
	"context"
	"errors"
	"math"
	pathpkg "path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
)

// leaseName is the name of lease nodes before their sequence number, as
// Curator names them.
const leaseName = "lease-"

// Semaphore is a counting semaphore of maxLeases leases, wire-compatible
// with Curator's InterProcessSemaphoreV2: an internal mutex under
// path/locks orders the acquirers (first come, first served, and only its
// holder watches the leases), and each lease is a node
// path/leases/_c_<uuid>-lease-<seq>.
//
// A Semaphore is safe for concurrent use. A [Lease] is a hold like any
// other (see [Hold]): it has a context that ends when it is released or
// lost, with the cause, a fencing token, and a Release that it owes once;
// any goroutine may release it. As in Curator, nothing checks
// that every process uses the same maxLeases; a lease is granted while the
// leases node has at most maxLeases children, whoever made them. The
// first acquire of each Semaphore checks that path is no kazoo
// Semaphore's (a lease of one among path's children, or its lock beside
// path), which counts its leases as path's own children and so never
// sees these, and fails with [ErrLayoutMismatch] if it is; a
// kazoo process that starts later on the same path is not seen by a
// Semaphore that checked before it (nor does kazoo see Curator's leases):
// give each path one layout.
//
// With [WithLayout](LayoutKazoo) it is kazoo's Semaphore instead: a kazoo
// Lock at path + "-__lock__" orders the acquirers; the one at its head
// counts the children of path, the pool, and while fewer than maxLeases
// are there it adds its lease, a node path/<uuid hex>, and gives the lock
// up. The pool node holds maxLeases in decimal, and an acquire whose
// maxLeases differs from the number the pool holds fails with a
// [*MaxLeasesError], as kazoo refuses it. Leases are granted to the head
// of the queue only: a lease freed while the head waits for n > 1 of them
// is not taken by one queued behind it.
type Semaphore struct {
	// Written once by NewSemaphore, read-only after.
	c         *Client
	path      string        // as given, relative to the namespace
	leases    string        // full ZooKeeper path of the leases node (in kazoo's layout, the pool: path itself)
	pool      lockInternals // the engine over the children of leases: it lists and sorts them, and in Curator's layout creates them and grants them by the lease rule (see acquireOnce)
	maxLeases int
	data      []byte        // lease node data
	lock      lockInternals // the internal lock at path/locks (in kazoo's layout, a kazoo Lock at path-__lock__)
	kind      Recipe        // what its events say it is: RecipeSemaphore, or RecipeSemaphoreMutex
	maxHold   time.Duration // WithMaxHold's bound of each lease; 0 for none
	layout    Layout        // its nodes' layout

	live   liveCounter // leases that stand: the Semaphore's own count, or a SemaphoreMutex's lockCount
	pooled atomic.Bool // the path was checked: in kazoo's layout, the pool (see ensurePool); in Curator's, for kazoo's leases (see checkNoKazooLeases)
}

// Lease is one lease of a Semaphore: a hold of one lease node, a [Hold]
// in all but name (Lease.Hold returns it as one, for code that handles
// holds of any recipe alike). The methods it shares with Hold behave as
// the Hold's do; Token and CheckOp keep the signatures of the API, with
// no error, and give the Hold's values while the lease stands (the Hold's
// are the checked forms). Its methods are safe for concurrent use.
type Lease struct {
	// Written once by the Semaphore, read-only after.
	s  *Semaphore
	h  *hold
	hd *Hold // the lease as a Hold
}

// NewSemaphore returns a Semaphore of maxLeases leases on path, relative
// to the Client's namespace. [WithLockData] sets the data of lease nodes,
// [WithMaxHold] bounds each lease, and [WithLayout] chooses Curator's
// layout (the default) or kazoo's; [WithDriver] is refused. It returns
// ErrInvalidArgument for maxLeases outside 1..2^31-1 (ZooKeeper counts
// children and sequence numbers in an int32), and for lease data that is
// not UTF-8 in kazoo's layout (kazoo reads it as text), and
// ErrInvalidPath for a bad path. It does no I/O.
func NewSemaphore(c *Client, path string, maxLeases int, opts ...LockOption) (*Semaphore, error) {
	if maxLeases < 1 || maxLeases > math.MaxInt32 {
		return nil, wrapf(ErrInvalidArgument, "semaphore %s: maxLeases %d is outside [1, %d]", quotePath(path), maxLeases, math.MaxInt32)
	}
	o, err := parseLockOptions("semaphore", path, opts, false)
	if err != nil {
		return nil, err
	}
	data, err := c.recipeData("semaphore", path, o.data)
	if err != nil {
		return nil, err
	}
	if err := o.kazooText("semaphore", path, "lease", "lease_holders()", data); err != nil {
		return nil, err
	}
	s := &Semaphore{kind: RecipeSemaphore, maxHold: o.maxHold, c: c, path: path, maxLeases: maxLeases, data: data,
		layout: o.layout, live: new(atomic.Int32)}
	leases, lease := pathpkg.Join(path, "leases"), ""
	s.lock = lockInternals{c: c, basePath: c.fullPath(pathpkg.Join(path, "locks")), lockName: "lock-", driver: StandardDriver{}, maxLeases: 1, fast: standardFast(1)}
	if o.layout == LayoutKazoo {
		leases, lease = path, "/"+strings.Repeat("0", 32)
		s.lock = lockInternals{c: c, basePath: c.fullPath(layout.KazooSemaphoreLock(path)), lockName: layout.KazooLockName, driver: kazooLock, maxLeases: 1, fast: kazooLockFast}
	}
	if err := checkRequest("semaphore", path, c.fullPath(leases)+lease, data); err != nil {
		return nil, err
	}
	s.leases = c.fullPath(leases)
	s.pool = lockInternals{c: c, basePath: s.leases, lockName: leaseName, driver: StandardDriver{}, maxLeases: maxLeases}
	return s, nil
}

// Acquire blocks until a lease is granted, ctx is done, or the Client is
// closed; it waits for the connection too, as [Mutex.Acquire] does. On
// failure it returns an error wrapping ctx.Err() (and its cause, and
// ErrNotConnected if ctx ended while the Client was not connected),
// ErrClosed or the ZooKeeper error, and leaves no node behind.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	return oneLease(s.acquire(ctx, 1, false, nil))
}

// TryAcquire is Acquire without waiting: if another acquirer is queued
// or no lease is free, it returns an error wrapping ErrLocked at once and
// leaves no node behind (in Curator's layout, a pool with no free lease
// is refused before anything is written). Without a connection it fails with an error
// wrapping ErrNotConnected, as [Mutex.TryLock] does.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	return oneLease(s.acquire(ctx, 1, true, nil))
}

// oneLease is the outcome of acquiring one lease.
func oneLease(leases []*Lease, err error) (*Lease, error) {
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// AcquireN acquires n leases, all or nothing, under ctx's one deadline. It
// keeps the internal lock for the whole call, so concurrent AcquireN calls
// cannot each hold part of what they need and wait for ever. On failure it
// returns every lease it took and an error as Acquire does; n outside
// 1..maxLeases gives ErrInvalidArgument.
func (s *Semaphore) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, false, nil)
}

// ReturnAll releases every lease that has not been released yet, skipping
// nil ones and those released before, and joins the errors (a lost
// lease's wraps ErrLockLost).
func (s *Semaphore) ReturnAll(leases []*Lease) error {
	var errs []error
	for _, l := range leases {
		if l != nil && (l.hd == nil || !l.hd.spent.Load()) {
			errs = append(errs, l.Release())
		}
	}
	return errors.Join(errs...)
}

// Participants returns the names of the lease nodes in sequence order
// (in kazoo's layout, whose leases have no order, in name order: every
// child of the pool). It is empty if the semaphore has never been used
// (where Curator throws).
func (s *Semaphore) Participants(ctx context.Context) ([]string, error) {
	if err := valid(ctx, s, "semaphore participants"); err != nil {
		return nil, err
	}
	children, err := s.pool.sortedChildren(ctx)
	if err != nil {
		return nil, wrapf(err, "semaphore %s participants", s.path)
	}
	if children == nil {
		children = []string{}
	}
	return children, nil
}

// site implements recipe.
func (s *Semaphore) site() (*Client, string, string) {
	const notMade = "Semaphore not made by NewSemaphore"
	if s == nil || s.c == nil {
		return nil, "", notMade
	}
	return s.c, s.path, notMade
}

// acquire acquires n leases; refused is the caller's own refusal (see
// acquiring), nil for none.
func (s *Semaphore) acquire(ctx context.Context, n int, try bool, refused error) ([]*Lease, error) {
	if err := valid(ctx, s, "semaphore acquire"); err != nil {
		return nil, err
	}
	if refused == nil && (n < 1 || n > s.maxLeases) {
		refused = wrapf(ErrInvalidArgument, "%d leases of %d", n, s.maxLeases)
	}
	a, err := s.c.acquiring(ctx, s.kind, "acquire", s.path, s.maxHold, refused)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	src := holderSource{path: s.path, leases: &s.pool}
	if s.kind == RecipeSemaphore {
		src.maxLeases = s.maxLeases
	}
	holder := a.probeHolder(ctx, s.c, src, !try)
	// Its leases wait in the engine's acquireGroup, which leaves queueing
	// again to this loop: an error that ctx ended while the Client was
	// not connected says so here (see Client.offline).
	r := newRetrier(s.c.opts.retry)
	for {
		if err := a.ctx.Err(); err != nil {
			return nil, a.failed(opErr(ctx, "acquire", s.path, shutdownErr(ctx, a.ctx, s.c.offline(ctx, err))))
		}
		leases, err := s.acquireOnceTry(a.ctx, n, try, grantTo{ctx, a.story, a.maxHold})
		if !errors.Is(err, errNodeGone) {
			if err != nil {
				return nil, a.failed(opErr(ctx, "acquire", s.path, holder.nameHolder(ctx, shutdownErr(ctx, a.ctx, s.c.offline(ctx, err)))))
			}
			holds := make([]*hold, len(leases))
			for i, l := range leases {
				holds[i] = l.h
			}
			a.granted(holds...)
			return leases, nil
		}
		if err := r.again(a.ctx, s.c.closing, "a lease of "+s.path); err != nil {
			return nil, a.failed(opErr(ctx, "acquire", s.path, shutdownErr(ctx, a.ctx, s.c.offline(ctx, err))))
		}
	}
}

// acquireOnceTry is acquireOnce, and for a Try, under tryConnected (see
// lockInternals.acquireTry).
func (s *Semaphore) acquireOnceTry(ctx context.Context, n int, try bool, to grantTo) (leases []*Lease, err error) {
	if !try {
		return s.acquireOnce(ctx, n, false, to)
	}
	err = s.c.tryConnected(ctx, func(ctx context.Context) (err error) {
		leases, err = s.acquireOnce(ctx, n, true, to)
		return err
	})
	return leases, err
}

// acquireOnce takes the internal lock, then has the engine create n
// lease nodes and wait until the lease rule grants them (see leaseRule).
// The internal lock only orders acquirers, so that only its holder
// watches the leases: it is a node, not a hold, and a connection blip
// does not end it. Losing it with the session means losing the lease
// nodes too, which the wait notices. The leases go to to.
func (s *Semaphore) acquireOnce(ctx context.Context, n int, try bool, to grantTo) ([]*Lease, error) {
	if s.layout == LayoutKazoo {
		return s.acquireKazoo(ctx, n, try, to)
	}
	if err := s.checkNoKazooLeases(ctx); err != nil {
		return nil, err
	}
	c := s.c
	if try {
		// A Try refuses a pool without room for n more leases before it
		// writes anything, whether or not another acquirer holds the
		// internal lock now (which the lock's own peek sees).
		leases, err := s.pool.children(ctx)
		if err != nil {
			return nil, err
		}
		if ok, _ := s.leaseRule(append(leases, make([]string, n)...)); !ok {
			return nil, ErrLocked
		}
	}
	lock, _, err := s.lock.acquire(ctx, acquireReq{data: c.opts.nodeData, try: try})
	if err != nil {
		return nil, err
	}
	// Give the internal lock up before returning, as Curator does, but
	// without waiting for the delete's reply: queued, it goes out before
	// whatever this Client sends next (the lease's Release, another
	// acquire), so no acquirer told of that finds the lock still taken.
	defer c.deleteQueued(lock)
	// The leases' own watches, which learn their tokens, are left to their
	// holds, as for a Mutex granted at once: a grant costs the creates'
	// round trip alone.
	nodes, snap, err := s.pool.acquireGroup(ctx, group{n: n, data: s.data, try: try, rule: s.leaseRule})
	if err != nil {
		return nil, err
	}
	for _, nd := range nodes {
		nd.position = lock.position // its place in the queue of acquirers
	}
	return s.grant(nodes, snap, to)
}

// leaseRule is the lease rule of Curator's layout: the leases are granted
// while the leases node has at most maxLeases children, whoever made
// them.
func (s *Semaphore) leaseRule(children []string) (bool, error) {
	return len(children) <= s.maxLeases, nil
}

// grantTo is whom leases are granted to: the caller's context (whose
// values the holds keep), the acquire's story, and the leases' maximum
// hold time.
type grantTo struct {
	ctx     context.Context
	st      story
	maxHold time.Duration
}

// grant turns granted lease nodes into Leases, each a hold of to's
// context and story, watched for loss.
func (s *Semaphore) grant(nodes []*lockNode, snap snapshot, to grantTo) ([]*Lease, error) {
	leases := make([]*Lease, 0, len(nodes))
	for i, nd := range nodes {
		h := newHold(s.c, to.ctx, holdSpec{name: "lease " + s.c.relPath(nd.path), node: nd, live: s.live, story: to.st, maxHold: to.maxHold})
		if !h.watch(snap, nil) { // the Client is closing; h is lost
			deleteNodes(context.Background(), s.c, nodes[i+1:])
			return nil, errors.Join(ErrClosed, s.ReturnAll(leases))
		}
		path := s.c.relPath(nd.path)
		hd := newHandle(h, h.ctx, path)
		leases = append(leases, &Lease{s: s, h: h, hd: hd})
	}
	return leases, nil
}

// Release returns the lease: it cancels the lease's context with cause
// ErrReleased, deletes the lease node (in the background if the delete
// fails on the network, until it succeeds, the node is gone, or the Client
// closes) and closes Done. It returns an error wrapping ErrLockLost if the
// lease had been lost, and ErrInvalidArgument for a Lease not made by a
// Semaphore. As for every [Hold], a lease is released once: a later
// Release changes nothing and returns an error wrapping ErrNotHeld.
func (l *Lease) Release() error {
	if l == nil || l.h == nil {
		return wrapf(ErrInvalidArgument, "lease release: Lease not made by a Semaphore")
	}
	return l.hd.Release()
}

// Hold returns the lease as a [Hold]: the same hold, for code that
// handles holds of any recipe alike, with the methods that a Lease does
// not repeat, such as [Hold.Multi] and [Hold.Bind], and the checked
// forms of Token and CheckOp. It is nil for a Lease not made by a Semaphore (a
// nil Hold's methods return ErrInvalidArgument).
func (l *Lease) Hold() *Hold {
	if l == nil {
		return nil
	}
	return l.hd
}

// Context returns the lease's context: it is cancelled when the lease
// ends, with cause ErrReleased after Release, or a cause wrapping
// ErrLockLost when the lease is lost (see [Hold.Context]).
func (l *Lease) Context() context.Context {
	return l.Hold().Context()
}

// Err returns nil while the lease stands, and why it ended once it has
// (see [Hold.Err]).
func (l *Lease) Err() error {
	return l.Hold().Err()
}

// Node returns the name of the lease node.
func (l *Lease) Node() string {
	if l == nil || l.h == nil {
		return ""
	}
	return l.h.node.name
}

// Path returns the full path of the lease node, relative to the namespace.
func (l *Lease) Path() string {
	if l == nil || l.h == nil {
		return ""
	}
	return l.s.c.relPath(l.h.node.path)
}

// Data reads the lease node's data. It returns an error wrapping
// ErrNotHeld once the lease is released, and ErrLockLost once it is lost
// or its node is found gone.
func (l *Lease) Data(ctx context.Context) ([]byte, error) {
	switch {
	case l == nil || l.h == nil:
		return nil, wrapf(ErrInvalidArgument, "lease data: Lease not made by a Semaphore")
	case ctx == nil:
		return nil, wrapf(ErrInvalidArgument, "lease %s data: nil context", l.Path())
	}
	if err := l.h.check("lease data", l.Path()); err != nil {
		return nil, err
	}
	c := l.s.c
	data, err := retry(c, ctx, func() ([]byte, error) {
		d, _, err := c.zc.Get(ctx, l.h.node.path)
		return d, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, cmp.Or(l.h.check("lease data", l.Path()), wrapf(kindOf(ErrLockLost, err), "lease %s data", l.Path()))
	case err != nil:
		return nil, opErr(ctx, "lease data", l.Path(), err)
	}
	return data, nil
}

// Token returns the lease's fencing token: its node's creation zxid. Right
// after the grant it may wait for the lease's first watch to learn it (one
// round trip at most, unless the lease is lost meanwhile). It is 0 for a
// lease that ended before its token was learnt, and for a Lease not made
// by a Semaphore. While the lease stands it is the token that
// l.Hold().Token() returns. It does not say whether the lease still
// stands: l.Hold().Token() is the checked form, which returns an error
// wrapping ErrNotHeld or ErrLockLost once the lease has ended, as every
// hold's Token.
func (l *Lease) Token() int64 {
	if l == nil || l.h == nil {
		return 0
	}
	l.h.learn()
	select {
	case <-l.h.node.learned():
		return l.h.node.czxid
	case <-l.h.ctx.Done():
		if l.h.node.isKnown() {
			return l.h.node.czxid
		}
		return 0
	}
}

// CheckOp returns a check on the lease node, to put first in conn.Multi so
// that the transaction commits only while the lease exists; its path is
// the node's full path (see "Paths" in the package doc). It is nil for a
// Lease not made by a Semaphore. While the lease stands it equals the
// check that l.Hold().CheckOp() returns. It does not say whether the
// lease still stands: l.Hold().CheckOp() is the checked form, which
// returns an error wrapping ErrNotHeld or ErrLockLost once the lease has
// ended, as every hold's CheckOp. (Token and CheckOp keep the signatures they had before leases
// were Holds; l.Hold() is the Lease with the error-returning methods
// that every recipe's holds share, [Hold.Multi] among them.)
func (l *Lease) CheckOp() *zk.CheckVersionRequest {
	if l == nil || l.h == nil {
		return nil
	}
	return &zk.CheckVersionRequest{Path: l.h.node.path, Version: -1}
}

// Done returns a channel that is closed when the lease is released or lost
// (at once for a Lease not made by a Semaphore).
func (l *Lease) Done() <-chan struct{} {
	if l == nil || l.h == nil {
		return closedSignal
	}
	return l.h.ctx.Done()
}
