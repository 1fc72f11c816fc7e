package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Semaphore is a counting semaphore of maxLeases leases, wire-compatible
// with Curator's InterProcessSemaphoreV2: an internal mutex under
// path/locks orders the acquirers (first come, first served, and only its
// holder watches the leases), and each lease is a node
// path/leases/_c_<uuid>-lease-<seq>.
//
// A Semaphore is safe for concurrent use. Leases are values, not holds of a
// context: any goroutine may release one. As in Curator, nothing checks
// that every process uses the same maxLeases; a lease is granted while the
// leases node has at most maxLeases children, whoever made them.
type Semaphore struct {
	c         *Client
	path      string // as given, relative to the namespace
	leases    string // full ZooKeeper path of the leases node
	maxLeases int
	data      []byte // lease node data; nil means the Client's default
	lock      *Mutex // the internal mutex at path/locks
}

// Lease is one lease of a Semaphore. Its methods are safe for concurrent
// use.
type Lease struct {
	s    *Semaphore
	node *lockNode
	done chan struct{} // closed when the lease ends
	stop chan struct{} // closed when the lease ends; stops the monitor

	mu    sync.Mutex // protects ended and lost
	ended bool       // released or lost
	lost  error      // why the lease was lost, nil otherwise
}

// NewSemaphore returns a Semaphore of maxLeases leases on path, relative
// to the Client's namespace. WithLockData sets the data of lease nodes;
// WithDriver is refused. It returns ErrInvalidArgument for maxLeases < 1.
// It does no I/O.
func NewSemaphore(c *Client, path string, maxLeases int, opts ...LockOption) (*Semaphore, error) {
	if maxLeases < 1 {
		return nil, fmt.Errorf("zklock: semaphore %s: maxLeases %d must be positive: %w", path, maxLeases, ErrInvalidArgument)
	}
	o, err := parseLockOptions("semaphore", path, opts, false)
	if err != nil {
		return nil, err
	}
	lockPath := strings.TrimSuffix(path, "/") + "/locks"
	lock, err := NewMutex(c, lockPath)
	if err != nil {
		if errors.Is(err, ErrInvalidPath) {
			return nil, validatePath(path) // name the path the caller gave
		}
		return nil, err
	}
	return &Semaphore{
		c:         c,
		path:      path,
		leases:    c.fullPath(strings.TrimSuffix(path, "/") + "/leases"),
		maxLeases: maxLeases,
		data:      o.data,
		lock:      lock,
	}, nil
}

// Acquire blocks until a lease is granted, ctx is done, or the Client is
// closed. On failure it returns an error wrapping ctx.Err(), ErrClosed or
// the ZooKeeper error, and leaves no node behind.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	leases, err := s.acquire(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// AcquireN acquires n leases, all or nothing, under ctx's one deadline. It
// keeps the internal mutex for the whole call, so concurrent AcquireN calls
// cannot each hold part of what they need and wait for ever. On failure it
// returns every lease it took and an error as Acquire does; n outside
// 1..maxLeases gives ErrInvalidArgument.
func (s *Semaphore) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, false)
}

// ReturnAll releases every lease and joins the errors.
func (s *Semaphore) ReturnAll(leases []*Lease) error {
	var errs []error
	for _, l := range leases {
		if l != nil {
			errs = append(errs, l.Release())
		}
	}
	return errors.Join(errs...)
}

// Participants returns the names of the lease nodes in sequence order. It
// is empty if the semaphore has never been used (where Curator throws).
func (s *Semaphore) Participants(ctx context.Context) ([]string, error) {
	if ctx == nil {
		return nil, fmt.Errorf("zklock: semaphore %s participants: nil context: %w", s.path, ErrInvalidArgument)
	}
	children, err := retry(s.c, ctx, func() ([]string, error) {
		ch, _, err := s.c.zc.Children(s.leases)
		return ch, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zklock: semaphore %s participants: %w", s.path, err)
	}
	sortChildren(children, "lease-", StandardDriver{})
	return children, nil
}

func (s *Semaphore) acquire(ctx context.Context, n int, try bool) ([]*Lease, error) {
	if ctx == nil {
		return nil, fmt.Errorf("zklock: semaphore %s: nil context: %w", s.path, ErrInvalidArgument)
	}
	if n < 1 || n > s.maxLeases {
		return nil, fmt.Errorf("zklock: semaphore %s: %d leases of %d: %w", s.path, n, s.maxLeases, ErrInvalidArgument)
	}
	wrap := func(err error) error {
		return fmt.Errorf("zklock: semaphore %s: %w", s.path, err)
	}
	r := newRetrier(s.c.opts.retry)
	for {
		leases, err := s.acquireOnce(ctx, n, try)
		if !errors.Is(err, errNodeGone) {
			if err != nil {
				return nil, wrap(err)
			}
			return leases, nil
		}
		if ok, werr := r.next(ctx, s.c.closing); !ok {
			if werr != nil {
				return nil, wrap(werr)
			}
			return nil, wrap(fmt.Errorf("lease vanished and the retry policy gave up: %w", zk.ErrNoNode))
		}
	}
}

// acquireOnce takes the internal mutex, creates n lease nodes and waits
// until the leases node has at most maxLeases children.
func (s *Semaphore) acquireOnce(ctx context.Context, n int, try bool) (leases []*Lease, err error) {
	c := s.c
	take := s.lock.Acquire
	if try {
		take = s.lock.TryAcquire
	}
	lctx, err := take(ctx)
	if err != nil {
		return nil, errors.Unwrap(err) // drop the internal mutex's path
	}
	defer func() {
		// Granted leases stand on their own; the internal mutex only orders
		// acquirers, so losing it is worth a log line, not a failure.
		if rerr := s.lock.Release(lctx); rerr != nil {
			c.log.Warn("zklock: semaphore internal mutex", "path", s.path, "err", rerr)
		}
	}()
	data := s.data
	if data == nil {
		data = c.opts.nodeData
	}
	var nodes []*lockNode
	defer func() {
		if err != nil {
			for _, nd := range nodes {
				c.deleteNode(nd.path)
			}
		}
	}()
	for range n {
		p, err := c.createProtected(ctx, path.Join(s.leases, "lease-"), data, zk.FlagEphemeral|zk.FlagSequence)
		if err != nil {
			return nil, closedErr(err)
		}
		nd := &lockNode{path: p, name: path.Base(p)}
		nodes = append(nodes, nd)
		li := lockInternals{c: c, basePath: s.leases}
		if err := li.watchOwn(ctx, nd, nil); err != nil {
			return nil, err
		}
	}
	for {
		if err := c.usable(); err != nil {
			return nil, err
		}
		if lctx.Err() != nil {
			return nil, fmt.Errorf("internal mutex: %w", context.Cause(lctx))
		}
		type got struct {
			children []string
			ch       <-chan zk.Event
		}
		g, err := retry(c, ctx, func() (got, error) {
			children, _, ch, err := c.zc.ChildrenW(s.leases)
			return got{children, ch}, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return nil, errNodeGone
		}
		if err != nil {
			return nil, err
		}
		for _, nd := range nodes {
			if !slices.Contains(g.children, nd.name) {
				return nil, errNodeGone
			}
		}
		if len(g.children) <= s.maxLeases {
			snap := c.snapshot()
			for _, nd := range nodes {
				leases = append(leases, s.newLease(nd, snap))
			}
			return leases, nil
		}
		if try {
			return nil, ErrLocked
		}
		select {
		case <-g.ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closing:
			return nil, ErrClosed
		}
	}
}

func (s *Semaphore) newLease(nd *lockNode, snap snapshot) *Lease {
	l := &Lease{s: s, node: nd, done: make(chan struct{}), stop: make(chan struct{})}
	li := &lockInternals{c: s.c, basePath: s.leases}
	if !s.c.goFunc(func() { li.monitor(nd, snap, l.stop, l.lose, nil) }) {
		l.lose(fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
	}
	return l
}

// lose ends a lease that was lost and deletes its node if it still exists.
func (l *Lease) lose(err error) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	l.lost = fmt.Errorf("zklock: lease %s: %w", l.Path(), err)
	close(l.stop)
	close(l.done)
	l.mu.Unlock()
	l.s.c.deleteNode(l.node.path)
}

// Release returns the lease: it deletes the lease node (in the background
// if the delete fails on the network, until it succeeds, the node is gone,
// or the Client closes) and closes Done. It is idempotent: later calls return nil. It
// returns an error wrapping ErrLockLost if the lease had been lost.
func (l *Lease) Release() error {
	l.mu.Lock()
	if l.ended {
		err := l.lost
		l.lost = nil // report a loss once
		l.mu.Unlock()
		return err
	}
	l.ended = true
	close(l.stop)
	close(l.done)
	l.mu.Unlock()
	if err := l.s.c.deleteNode(l.node.path); errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zklock: lease %s: %w: node already gone", l.Path(), ErrLockLost)
	} else if err != nil {
		return fmt.Errorf("zklock: lease %s: %w", l.Path(), err)
	}
	return nil
}

// Node returns the name of the lease node.
func (l *Lease) Node() string { return l.node.name }

// Path returns the full path of the lease node, relative to the namespace.
func (l *Lease) Path() string { return l.s.c.relPath(l.node.path) }

// Data reads the lease node's data.
func (l *Lease) Data(ctx context.Context) ([]byte, error) {
	data, err := retry(l.s.c, ctx, func() ([]byte, error) {
		d, _, err := l.s.c.zc.Get(l.node.path)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("zklock: lease %s data: %w", l.Path(), err)
	}
	return data, nil
}

// Token returns the lease's fencing token: its node's creation zxid.
func (l *Lease) Token() int64 { return l.node.czxid }

// CheckOp returns a check on the lease node, to put first in conn.Multi so
// that the transaction commits only while the lease exists.
func (l *Lease) CheckOp() *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: l.node.path, Version: -1}
}

// Done returns a channel that is closed when the lease is released or lost.
func (l *Lease) Done() <-chan struct{} { return l.done }
