package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
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
// ZooKeeper sequence order. Two Mutex values on one path are independent
// participants, even in one process.
//
// A hold can be lost at any time: under StandardPolicy when the connection
// is suspended, under SessionPolicy when the session is lost, and under
// both when someone else deletes the lock node or the Client is closed. The
// hold's context is then cancelled with cause ErrLockLost. Between the
// event and the cancellation another process may already hold the lock;
// guard writes with [Mutex.CheckOp] or a fencing token from [Mutex.Token].
type Mutex struct {
	c    *Client
	path string        // base path as given, relative to the namespace
	li   lockInternals // immutable after construction
	data []byte        // node data; nil means the Client's default

	rw *ReadWriteLock // the read/write lock m is a side of, or nil

	mu     sync.Mutex         // protects the fields below
	holds  map[*hold]struct{} // live (not released, not lost) holds
	revoke func(*Mutex)       // revocation callback, nil if not revocable
}

// NewMutex returns a Mutex on path, which is relative to the Client's
// namespace and must satisfy ZooKeeper's path rules. It does no I/O: the
// lock's parent nodes are created on the first Acquire. It returns an error
// wrapping ErrInvalidArgument for a nil or misconfigured Client or an
// invalid option, and ErrInvalidPath for a bad path.
func NewMutex(c *Client, path string, opts ...LockOption) (*Mutex, error) {
	o, err := parseLockOptions("lock", path, opts, true)
	if err != nil {
		return nil, err
	}
	return newMutex(c, path, "lock-", 1, o)
}

// newMutex makes a Mutex from parsed options; a nil driver means
// StandardDriver.
func newMutex(c *Client, path, lockName string, maxLeases int, o lockOptions) (*Mutex, error) {
	if c == nil {
		return nil, fmt.Errorf("zklock: lock %s: nil Client: %w", path, ErrInvalidArgument)
	}
	if c.initErr != nil {
		return nil, c.initErr
	}
	if err := validatePath(path); err != nil {
		return nil, err
	}
	if o.driver == nil {
		o.driver = StandardDriver{}
	}
	return &Mutex{
		c:     c,
		path:  path,
		li:    lockInternals{c: c, basePath: c.fullPath(path), lockName: lockName, driver: o.driver, maxLeases: maxLeases},
		data:  o.data,
		holds: make(map[*hold]struct{}),
	}, nil
}

// Acquire blocks until the lock is held, ctx is done, or the Client is
// closed, and returns the context that carries the hold. If ctx already
// carries a hold of m, Acquire only counts the re-entry and returns the
// hold's context; each Acquire owes one Release.
//
// The returned context is cancelled when the hold ends: with cause
// ErrReleased after the last Release, with cause ErrLockLost when the hold
// is lost. It keeps ctx's values but not its deadline or cancellation.
//
// On failure Acquire returns an error naming the path and wrapping
// ctx.Err(), ErrClosed, or the ZooKeeper error, and leaves no node behind.
func (m *Mutex) Acquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, false)
}

// TryAcquire is Acquire without waiting: if another participant holds the
// lock, it returns an error wrapping ErrLocked at once and leaves no node
// behind. A context that already holds m re-enters.
func (m *Mutex) TryAcquire(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, true)
}

func (m *Mutex) acquire(ctx context.Context, try bool) (context.Context, error) {
	if ctx == nil {
		return nil, fmt.Errorf("zklock: acquire %s: nil context: %w", m.path, ErrInvalidArgument)
	}
	if ctx.Err() != nil {
		return nil, m.acquireErr(ctx, ctx.Err())
	}
	if h := m.holdOf(ctx); h != nil {
		m.mu.Lock()
		if _, live := m.holds[h]; live {
			h.count++
			m.mu.Unlock()
			return h.ctx, nil
		}
		m.mu.Unlock()
	}
	var atName string // non-empty: create this node and hold at once
	if m.rw != nil {
		switch {
		case m == m.rw.write && m.rw.read.live(ctx) != nil:
			return nil, fmt.Errorf("zklock: acquire %s: %w", m.path, ErrLockUpgrade)
		case m == m.rw.read:
			if wh := m.rw.write.live(ctx); wh != nil {
				// Downgrade: the read node takes the write node's place.
				atName = readLockName + rwSortKey(wh.node.name)
			}
		}
	}
	var onRevoke func()
	m.mu.Lock()
	if fn := m.revoke; fn != nil {
		onRevoke = func() { m.c.goFunc(func() { fn(m) }) }
	}
	m.mu.Unlock()
	data := m.data
	if data == nil {
		data = m.c.opts.nodeData
	}
	var (
		node *lockNode
		snap snapshot
		err  error
	)
	if atName != "" {
		node, snap, err = m.li.acquireAt(ctx, atName, data, onRevoke)
	} else {
		node, snap, err = m.li.acquire(ctx, data, try, onRevoke)
	}
	if err != nil {
		return nil, m.acquireErr(ctx, err)
	}
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	h := &hold{node: node, cancel: cancel, stop: make(chan struct{}), count: 1}
	h.ctx = context.WithValue(hctx, holdKey{m}, h)
	m.mu.Lock()
	m.holds[h] = struct{}{}
	m.mu.Unlock()
	if !m.c.goFunc(func() { m.li.monitor(node, snap, h.stop, func(err error) { m.lose(h, err) }, onRevoke) }) {
		// Close began while we acquired: the hold cannot be watched.
		m.lose(h, fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
		m.mu.Lock()
		h.count = 0
		m.mu.Unlock()
		return nil, m.acquireErr(ctx, ErrClosed)
	}
	return h.ctx, nil
}

// acquireErr names the path in an Acquire error, and keeps the cause of a
// cancelled ctx next to ctx.Err().
func (m *Mutex) acquireErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if cause := context.Cause(ctx); cause != ctx.Err() {
			return fmt.Errorf("zklock: acquire %s: %w (%w)", m.path, err, cause)
		}
	}
	return fmt.Errorf("zklock: acquire %s: %w", m.path, err)
}

// lose ends a hold that was lost: cancels its context with err (which wraps
// ErrLockLost) and deletes its node, which may still exist.
func (m *Mutex) lose(h *hold, err error) {
	m.mu.Lock()
	if _, live := m.holds[h]; !live {
		m.mu.Unlock()
		return
	}
	delete(m.holds, h)
	h.lost = fmt.Errorf("zklock: lock %s: %w", m.path, err)
	close(h.stop)
	m.mu.Unlock()
	h.cancel(h.lost)
	m.c.log.Warn("zklock: lock lost", "path", m.path, "node", h.node.path, "err", err)
	m.c.deleteNode(h.node.path)
}

// Release gives up one hold carried by ctx. The last Release of a hold
// cancels the hold's context with cause ErrReleased, then deletes the lock
// node; if the delete fails on the network it goes on in the background
// until it succeeds, the node is gone, or the Client closes, and Release
// returns nil. Release returns an error wrapping ErrNotHeld if ctx carries
// no hold of m, and one wrapping ErrLockLost if the hold was lost (clearing
// it), including a node found already gone.
func (m *Mutex) Release(ctx context.Context) error {
	h := m.holdOf(ctx)
	if h == nil {
		return fmt.Errorf("zklock: release %s: %w", m.path, ErrNotHeld)
	}
	m.mu.Lock()
	if h.count == 0 {
		m.mu.Unlock()
		return fmt.Errorf("zklock: release %s: %w", m.path, ErrNotHeld)
	}
	h.count--
	if h.lost != nil {
		m.mu.Unlock()
		return h.lost
	}
	if h.count > 0 {
		m.mu.Unlock()
		return nil
	}
	delete(m.holds, h)
	close(h.stop)
	m.mu.Unlock()
	h.cancel(ErrReleased)
	if err := m.c.deleteNode(h.node.path); errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zklock: release %s: %w: node already gone", m.path, ErrLockLost)
	} else if err != nil {
		return fmt.Errorf("zklock: release %s: %w", m.path, err)
	}
	return nil
}

// IsAcquiredInThisProcess reports whether any context holds m.
func (m *Mutex) IsAcquiredInThisProcess() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.holds) > 0
}

// IsOwnedBy reports whether ctx carries a live hold of m.
func (m *Mutex) IsOwnedBy(ctx context.Context) bool {
	return m.live(ctx) != nil
}

// Path returns the lock's base path, relative to the namespace.
func (m *Mutex) Path() string { return m.path }

// LockPath returns the path of the node of ctx's hold, relative to the
// namespace, or "" if ctx carries no live hold of m.
func (m *Mutex) LockPath(ctx context.Context) string {
	if h := m.live(ctx); h != nil {
		return m.c.relPath(h.node.path)
	}
	return ""
}

// Token returns the fencing token of ctx's hold: the creation zxid of its
// node, which strictly increases from one holder of the path to the next,
// across sessions and across the lock's parent being reaped and created
// again. It returns an error wrapping ErrNotHeld if ctx carries no hold, and
// ErrLockLost if the hold was lost.
func (m *Mutex) Token(ctx context.Context) (int64, error) {
	h, err := m.heldOrErr(ctx, "token")
	if err != nil {
		return 0, err
	}
	return h.node.czxid, nil
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
	if ctx == nil {
		return nil, fmt.Errorf("zklock: participants %s: nil context: %w", m.path, ErrInvalidArgument)
	}
	children, err := m.li.sortedChildren(ctx)
	if err != nil {
		return nil, fmt.Errorf("zklock: participants %s: %w", m.path, err)
	}
	out := make([]string, 0, len(children))
	for _, ch := range children {
		if m.rw != nil && !strings.Contains(ch, m.li.lockName) {
			continue // a read/write side lists its own kind only
		}
		out = append(out, m.c.relPath(path.Join(m.li.basePath, ch)))
	}
	return out, nil
}

// MakeRevocable makes holds acquired after the call revocable: when another
// process asks the holder of a node to release it (see [Revoke], or
// Curator's Revoker), fn runs on its own goroutine. It also runs for a
// request that arrives while an Acquire is still waiting. Revocation is
// cooperative: fn decides whether to Release. Close waits for fn to return,
// so fn must not call Close.
func (m *Mutex) MakeRevocable(fn func(*Mutex)) {
	m.mu.Lock()
	m.revoke = fn
	m.mu.Unlock()
}

// Do acquires m, runs fn with the hold's context, and releases. It returns
// the error of Acquire, or else the errors of fn and Release, joined. A hold
// lost while fn runs cancels fn's context and makes the Release error wrap
// ErrLockLost. If fn panics, Do releases and the panic goes on.
func (m *Mutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	hctx, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	released := false
	defer func() {
		if !released { // fn panicked: release, then let the panic go on
			_ = m.Release(hctx)
		}
	}()
	ferr := fn(hctx)
	released = true
	rerr := m.Release(hctx)
	switch {
	case rerr == nil:
		return ferr
	case ferr == nil:
		return rerr
	}
	return errors.Join(ferr, rerr)
}

// holdOf returns the hold of m that ctx carries, live or not.
func (m *Mutex) holdOf(ctx context.Context) *hold {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(holdKey{m}).(*hold)
	return h
}

// live returns ctx's hold of m if it stands.
func (m *Mutex) live(ctx context.Context) *hold {
	h := m.holdOf(ctx)
	if h == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.holds[h]; !ok {
		return nil
	}
	return h
}

func (m *Mutex) heldOrErr(ctx context.Context, what string) (*hold, error) {
	h := m.holdOf(ctx)
	if h == nil {
		return nil, fmt.Errorf("zklock: %s %s: %w", what, m.path, ErrNotHeld)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if h.lost != nil {
		return nil, h.lost
	}
	if h.count == 0 {
		return nil, fmt.Errorf("zklock: %s %s: %w", what, m.path, ErrNotHeld)
	}
	return h, nil
}
