package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
	"github.com/zklock/zklock/internal/zksession"
)

// MaxLeasesError is the error of an acquire on a [Semaphore] in kazoo's
// layout whose pool node records another number of leases than the
// Semaphore's maxLeases: kazoo's "Inconsistent max leases", refused
// before anything is created. Every process of a kazoo semaphore must use
// one max_leases; to change it, delete the pool node while no lease is
// out. errors.Is sees ErrInvalidArgument in it.
type MaxLeasesError struct {
	Path      string // the semaphore's path (its pool node), relative to the namespace
	MaxLeases int    // this Semaphore's maxLeases
	Stored    int    // the number the pool node holds
}

// Error says what the pool holds and what the Semaphore has.
func (e *MaxLeasesError) Error() string {
	return fmt.Sprintf("%sinconsistent max leases: the pool %s holds %d, this Semaphore has %d (every process of a kazoo semaphore must use the same max_leases)",
		msgPrefix, e.Path, e.Stored, e.MaxLeases)
}

// Is reports whether target is ErrInvalidArgument: the Semaphore was
// made with a size that the pool refuses.
func (e *MaxLeasesError) Is(target error) bool { return target == ErrInvalidArgument }

// acquireKazoo is acquireOnce in kazoo's layout (kazoo's Semaphore): it
// checks the pool (see ensurePool), takes the kazoo Lock that orders the
// acquirers, waits until the pool has room for n more leases, counting
// every child as kazoo does, and creates them, each in one transaction
// with a check that its lock node still stands, so that only the
// acquirer at the head of the queue adds leases. The lock is given up
// once the leases are made, or the acquire fails.
func (s *Semaphore) acquireKazoo(ctx context.Context, n int, try bool, to grantTo) ([]*Lease, error) {
	c := s.c
	if err := s.ensurePool(ctx); err != nil {
		return nil, err
	}
	// kazoo's Semaphore makes its Lock with its identifier, the leases'
	// data: its lock nodes hold that, not the Client's node data.
	lock, _, err := s.lock.acquire(ctx, acquireReq{data: s.data, try: try})
	if err != nil {
		return nil, err
	}
	// As acquireOnce does: given up before returning, its delete queued.
	defer c.deleteQueued(lock)
	w := waiter{c: c, lock: c.fullPath(s.path), session: lock.session, try: try}
	var pool *zksession.Tentative // the pool's watch of the decision that grants
	snap, err := w.run(ctx, func(ctx context.Context) (verdict, error) {
		v, err := s.decideKazoo(ctx, n, try)
		pool = v.mine
		return v, err
	})
	if err != nil {
		return nil, err
	}
	nodes, err := s.createKazooLeases(ctx, n, lock)
	if err != nil {
		// No lease of ours changes the pool now, which a grant's watch
		// waits for: nothing else may ever fire it.
		dropWatches(pool)
		return nil, err
	}
	for _, nd := range nodes {
		nd.position = lock.position // its place in the queue of acquirers
	}
	return s.grant(nodes, snap, to)
}

// decideKazoo lists the pool once, with a watch unless it decides for a
// Try (see lockInternals.decideGroup): there is room for n leases while the pool
// has at most maxLeases-n children, whatever they are. A pool of
// Curator's layout (its "leases" and "locks" nodes) is refused; a pool
// gone is made again on the next attempt.
func (s *Semaphore) decideKazoo(ctx context.Context, n int, try bool) (verdict, error) {
	v, err := s.pool.decideGroup(ctx, nil, nil, try, func(children []string) (bool, error) {
		if i := slices.IndexFunc(children, func(ch string) bool { return ch == "leases" || ch == "locks" }); i >= 0 {
			return false, layoutMismatch(s.leases, LayoutKazoo, LayoutCurator, children[i])
		}
		return len(children)+n <= s.maxLeases, nil
	})
	if errors.Is(err, errNodeGone) { // the pool
		s.pooled.Store(false)
	}
	return v, err
}

// createKazooLeases creates n lease nodes "<uuid hex>" in the pool, each
// guarded by the lock node (see acquireKazoo) and found again by its name
// after a connection loss, as kazoo finds its lease. On failure it deletes
// those it made; the lock node's loss, or the pool's, is errNodeGone, to
// queue again.
func (s *Semaphore) createKazooLeases(ctx context.Context, n int, lock *lockNode) ([]*lockNode, error) {
	c := s.c
	made := make([]*lockNode, 0, n)
	for range n {
		// The prefix is the whole name: the base after the pool is empty.
		// A pool deleted since decideKazoo is made again by ensurePool,
		// with its size, on the next attempt; not here, empty.
		p, err := c.createInKept(ctx, LayoutKazoo, s.leases+"/", s.data, zk.FlagEphemeral, lock.path)
		if err != nil {
			deleteNodes(ctx, c, made)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				s.pooled.Store(false)
				return nil, errNodeGone
			case errors.Is(err, ErrLockLost):
				return nil, errNodeGone
			}
			return nil, closedErr(err)
		}
		// A guarded create commits only while the lock node, of the
		// lock's session, stands: the lease is of that session.
		made = append(made, newLockNode(p, lock.session))
	}
	return made, nil
}

// ensurePool checks the pool node once per Semaphore, as kazoo checks it
// once per Semaphore object: if it exists and holds a number (in decimal,
// as Python's int reads it, spaces around allowed), that number must be
// maxLeases, else the acquire fails with a *MaxLeasesError; data that is
// no number is left unchecked, as kazoo leaves it. A missing pool is made,
// PERSISTENT, holding maxLeases (kazoo makes it, then writes its size).
func (s *Semaphore) ensurePool(ctx context.Context) error {
	if s.pooled.Load() {
		return nil
	}
	c := s.c
	for range missingParentTries {
		data, err := retry(c, ctx, func() ([]byte, error) {
			d, _, err := c.zc.Get(ctx, s.leases)
			return d, err
		})
		switch {
		case err == nil:
			if stored, ok := layout.KazooMaxLeases(data); ok && stored != s.maxLeases {
				return &MaxLeasesError{Path: s.path, MaxLeases: s.maxLeases, Stored: stored}
			}
			s.pooled.Store(true)
			return nil
		case !errors.Is(err, zk.ErrNoNode):
			return err
		}
		if made, err := s.makePool(ctx); err != nil || made {
			s.pooled.Store(made)
			return err
		}
	}
	return fmt.Errorf("semaphore pool %s was deleted as often as it was made: %w", s.path, zk.ErrNoNode)
}

// checkNoKazooLeases checks the Semaphore's path once per Semaphore in
// Curator's layout, as ensurePool checks kazoo's pool once, for a kazoo
// Semaphore on the same path, which counts its leases as the path's own
// children and so never sees Curator's, nor they its: the acquire is
// refused with ErrLayoutMismatch rather than hold beside it. The signs
// are kazoo's: a lease, an EPHEMERAL child named with 32 hex digits
// (a persistent one, such as a lock path named by a hash, is not); and
// the lock that orders kazoo's acquirers, path + "-__lock__", which
// stays once made, so that an idle kazoo pool is seen too. A path not
// made yet holds neither; a node the Client may not read is no sign.
func (s *Semaphore) checkNoKazooLeases(ctx context.Context) error {
	if s.pooled.Load() {
		return nil
	}
	c := s.c
	base := c.fullPath(s.path)
	children, err := retry(c, ctx, func() ([]string, error) {
		ch, _, err := c.zc.Children(ctx, base)
		return ch, err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNoAuth) {
		return err
	}
	for _, ch := range children {
		if !layout.IsKazooLease(ch) {
			continue
		}
		st, err := s.statIfReadable(ctx, path.Join(base, ch))
		if err != nil {
			return err
		}
		if st != nil && st.EphemeralOwner != 0 {
			return layoutMismatch(base, LayoutCurator, LayoutKazoo, ch)
		}
	}
	lock := c.fullPath(layout.KazooSemaphoreLock(s.path))
	if st, err := s.statIfReadable(ctx, lock); err != nil || st != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: %s is a %s Semaphore's pool (its lock %s exists), not a %s one's; give each lock one layout",
			ErrLayoutMismatch, base, LayoutKazoo, lock, LayoutCurator)
	}
	s.pooled.Store(true)
	return nil
}

// statIfReadable returns the stat of the node at p (a full path), or nil
// if it does not exist or the Client may not read it.
func (s *Semaphore) statIfReadable(ctx context.Context, p string) (*zk.Stat, error) {
	st, err := s.c.stat(ctx, p)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNoAuth) {
		return nil, nil
	}
	return st, err
}

// makePool creates the pool node holding maxLeases, and its missing
// parents, PERSISTENT. It reports false if another process made it first.
func (s *Semaphore) makePool(ctx context.Context) (bool, error) {
	c := s.c
	acl, err := c.aclFor(s.leases)
	if err != nil {
		return false, err
	}
	size := []byte(strconv.Itoa(s.maxLeases))
	for range 2 {
		_, err = retry(c, ctx, func() (string, error) { return c.zc.Create(ctx, s.leases, size, 0, acl) })
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNodeExists): // made meanwhile, or by our create whose reply was lost: read it
			return false, nil
		case !errors.Is(err, zk.ErrNoNode):
			return false, fmt.Errorf("create %s: %w", s.leases, err)
		}
		if err := c.mkdirsAs(ctx, path.Dir(s.leases), false); err != nil {
			return false, err
		}
	}
	return false, nil
}
