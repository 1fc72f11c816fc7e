package zklock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// revokeMessage is the data Curator's Revoker writes into a lock node to ask
// its holder to release.
var revokeMessage = []byte("__REVOKE__")

// errNodeGone means the node queued for a lock vanished (session expiry, a
// deletion by someone else, a reaped parent); the engine queues again.
var errNodeGone = errors.New("zklock: lock node vanished")

// lockInternals is the engine under every lock recipe. It queues a
// sequential node under basePath, decides with its Driver whether the node
// holds the lock, and waits for the node it must watch. It is the only
// place that waits.
type lockInternals struct {
	c         *Client
	basePath  string // full ZooKeeper path of the lock (namespace included)
	lockName  string // name of our nodes before the sequence, such as "lock-"
	driver    Driver
	maxLeases int
}

// lockNode is one node queued or held by the engine.
type lockNode struct {
	path    string          // full ZooKeeper path
	name    string          // last segment of path
	czxid   int64           // fencing token
	session int64           // session that owns the node
	own     <-chan zk.Event // data watch on the node itself
}

// acquire queues a node and waits until it holds the lock, ctx ends, or the
// Client closes. With try it does not wait and returns ErrLocked instead.
// onRevoke, if not nil, runs when someone asks the node's holder to release.
// Every failure deletes the node it created.
func (li *lockInternals) acquire(ctx context.Context, data []byte, try bool, onRevoke func()) (*lockNode, snapshot, error) {
	c := li.c
	if err := c.usable(); err != nil {
		return nil, snapshot{}, err
	}
	if try {
		// Peek first: when the lock is visibly taken, fail without writing.
		if held, err := li.peek(ctx); err != nil {
			return nil, snapshot{}, err
		} else if !held {
			return nil, snapshot{}, ErrLocked
		}
	}
	r := newRetrier(c.opts.retry)
	for {
		p, err := li.driver.CreateNode(ctx, c, path.Join(li.basePath, li.lockName), data)
		if err != nil {
			return nil, snapshot{}, closedErr(err)
		}
		n := &lockNode{path: p, name: path.Base(p)}
		snap, err := li.waitOrClean(ctx, n, try, onRevoke)
		if err == nil {
			return n, snap, nil
		}
		if !errors.Is(err, errNodeGone) {
			// Every exit after the create deletes the node, whatever the
			// reason: a cancelled ctx, a closed Client, a failed read.
			// Cleanup runs detached from ctx, which may be done.
			c.deleteNode(p)
			return nil, snapshot{}, err
		}
		c.deleteNode(p) // it may be an old session's node that is still dying
		if ok, werr := r.next(ctx, c.closing); !ok {
			if werr != nil {
				return nil, snapshot{}, werr
			}
			return nil, snapshot{}, fmt.Errorf("lock node %s vanished and the retry policy gave up: %w", p, zk.ErrNoNode)
		}
	}
}

// relistAfterDelete reports whether the engine must list the children
// again after the watched child is deleted, instead of dropping it from its
// list. It must for a driver that says so, and for more than one lease:
// the standard predicate then watches a node maxLeases places ahead, so
// deletions between it and ours go unseen.
func (li *lockInternals) relistAfterDelete(child string) bool {
	if rl, ok := li.driver.(relister); ok {
		return rl.relistAfterDelete(child)
	}
	return li.maxLeases > 1
}

// relister is implemented by internal drivers whose locks can gain a node
// that sorts before an existing one: the write-to-read downgrade creates a
// read node with the sequence of the write node it replaces.
type relister interface {
	// relistAfterDelete reports whether the deletion of the watched child
	// may have been preceded by such a node.
	relistAfterDelete(child string) bool
}

// acquireAt creates a non-sequential node named name (protected) under the
// lock and grants it at once. The caller has made sure that the node is
// entitled to the lock, as a downgrade is.
func (li *lockInternals) acquireAt(ctx context.Context, name string, data []byte, onRevoke func()) (*lockNode, snapshot, error) {
	c := li.c
	if err := c.usable(); err != nil {
		return nil, snapshot{}, err
	}
	p, err := c.createProtected(ctx, path.Join(li.basePath, name), data, zk.FlagEphemeral)
	if err != nil {
		return nil, snapshot{}, closedErr(err)
	}
	n := &lockNode{path: p, name: path.Base(p)}
	if err := li.watchOwn(ctx, n, onRevoke); err != nil {
		c.deleteNode(p)
		if errors.Is(err, errNodeGone) {
			err = fmt.Errorf("node %s vanished: %w", p, zk.ErrNoNode)
		}
		return nil, snapshot{}, err
	}
	return n, c.snapshot(), nil
}

// waitOrClean is wait, deleting the node if a user callback (a Driver)
// panics, before the panic goes on.
func (li *lockInternals) waitOrClean(ctx context.Context, n *lockNode, try bool, onRevoke func()) (snapshot, error) {
	done := false
	defer func() {
		if !done {
			li.c.deleteNode(n.path)
		}
	}()
	snap, err := li.wait(ctx, n, try, onRevoke)
	done = true
	return snap, err
}

// peek reports whether a node created now could get the lock at once.
func (li *lockInternals) peek(ctx context.Context) (bool, error) {
	children, err := li.sortedChildren(ctx)
	if err != nil {
		return false, err
	}
	// A name that sorts after every existing node stands for ours: U+FFFF
	// is the largest UTF-16 code unit.
	probe := li.lockName + strings.Repeat("\uffff", 16)
	res, err := li.driver.GetsTheLock(append(children, probe), probe, li.maxLeases)
	if err != nil {
		return false, err
	}
	return res.Acquired, nil
}

// wait decides whether n holds the lock and, unless try, waits until it
// does. It lists the children once: nodes created later sort after n, so
// the only later change that matters is that nodes before n disappear, and
// wait learns of those from the one node it watches at a time.
func (li *lockInternals) wait(ctx context.Context, n *lockNode, try bool, onRevoke func()) (snapshot, error) {
	c := li.c
	// pre is taken before each read the verdict rests on: a grant stands
	// only if nothing (a suspension, a new session) happened since, and the
	// hold is measured against it, so a change after the last read ends it.
	pre := c.snapshot()
	if err := li.watchOwn(ctx, n, onRevoke); err != nil {
		return snapshot{}, err
	}
	children, err := li.sortedChildren(ctx)
	if err != nil {
		return snapshot{}, err
	}
	recheck := false // confirm our node before trusting the cached children
	for {
		if err := c.usable(); err != nil {
			return snapshot{}, err // a closing Client grants nothing more
		}
		if recheck {
			pre = c.snapshot()
			if err := li.checkOwn(ctx, n); err != nil {
				if !retryable(err) {
					return snapshot{}, err
				}
				// While the session lives our node does too: keep waiting
				// for the connection for as long as ctx allows.
				if err := c.awaitConnected(ctx, time.Hour); err != nil {
					return snapshot{}, err
				}
				continue
			}
			recheck = false
		}
		res, err := li.driver.GetsTheLock(children, n.name, li.maxLeases)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return snapshot{}, errNodeGone
			}
			return snapshot{}, err
		}
		if res.Acquired {
			select {
			case ev := <-n.own: // an event on our node comes first
				if err := li.ownEvent(ctx, n, ev, onRevoke); err != nil {
					return snapshot{}, err
				}
				continue
			default:
			}
			if err := ctx.Err(); err != nil {
				return snapshot{}, err // ctx ended first: no grant
			}
			if pre.session != n.session && n.session != 0 {
				return snapshot{}, errNodeGone
			}
			if c.holdLost(pre) != nil {
				recheck = true // suspended since the last read: look again
				continue
			}
			return pre, nil
		}
		if try {
			return snapshot{}, ErrLocked
		}
		if !slices.Contains(children, res.Watch) {
			return snapshot{}, fmt.Errorf("driver asked to watch %q, which is not a child of %s: %w", res.Watch, li.basePath, ErrInvalidArgument)
		}
		stateCh := c.stateChanged()
		pre = c.snapshot()
		pred, err := c.watchNode(ctx, path.Join(li.basePath, res.Watch))
		if errors.Is(err, zk.ErrNoNode) {
			if li.relistAfterDelete(res.Watch) {
				// A node can appear ahead of ours in its place (a
				// downgrade): look at the children again.
				if children, err = li.sortedChildren(ctx); err != nil {
					return snapshot{}, err
				}
				continue
			}
			children = slices.DeleteFunc(children, func(s string) bool { return s == res.Watch })
			continue
		}
		if retryable(err) {
			recheck = true
			continue
		}
		if err != nil {
			return snapshot{}, err
		}
		select {
		case <-pred:
			// The predecessor changed or went away; the next round finds
			// out which when it watches it again.
		case ev := <-n.own:
			if err := li.ownEvent(ctx, n, ev, onRevoke); err != nil {
				return snapshot{}, err
			}
		case <-stateCh:
			if s := c.State(); s == StateReconnected || s == StateLost {
				// Our node survives a reconnect with the same session; a
				// new session means it is gone. Check rather than guess.
				recheck = true
			}
		case <-ctx.Done():
			// If the predecessor went away at this same moment we may now
			// hold the lock. ctx ending "happened before" that, so we
			// pretend we did not get it: the caller deletes our node,
			// which releases the lock if we held it.
			return snapshot{}, ctx.Err()
		case <-c.closing:
			return snapshot{}, ErrClosed
		}
	}
}

// watchOwn sets the data watch on n, learns its fencing token and owner,
// and reports a pending revocation.
func (li *lockInternals) watchOwn(ctx context.Context, n *lockNode, onRevoke func()) error {
	c := li.c
	type got struct {
		data []byte
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	g, err := retry(c, ctx, func() (got, error) {
		d, s, ch, err := c.zc.GetW(n.path)
		return got{d, s, ch}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return errNodeGone
	}
	if err != nil {
		return err
	}
	if n.czxid != 0 {
		// Watching again (after a data change): the token and owner were
		// set once, before the node was granted, and are read without a
		// lock. A different node under the same name is not ours.
		if g.stat.Czxid != n.czxid {
			return errNodeGone
		}
		n.own = g.ch
	} else {
		n.czxid, n.own = g.stat.Czxid, g.ch
		if n.session = g.stat.EphemeralOwner; n.session == 0 {
			n.session = c.snapshot().session // a persistent node (custom driver)
		}
	}
	if onRevoke != nil && bytes.Equal(g.data, revokeMessage) {
		onRevoke()
	}
	return nil
}

// ownEvent handles an event of the watch on our own node.
func (li *lockInternals) ownEvent(ctx context.Context, n *lockNode, ev zk.Event, onRevoke func()) error {
	switch {
	case ev.Type == zk.EventNodeDeleted:
		return errNodeGone
	case ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrSessionExpired):
		return errNodeGone
	case ev.Type == zk.EventNotWatching:
		return ErrClosed
	}
	// Data changed (a revocation request, or any write): watch again.
	return li.watchOwn(ctx, n, onRevoke)
}

// checkOwn confirms after a reconnect that n still exists in our session.
func (li *lockInternals) checkOwn(ctx context.Context, n *lockNode) error {
	c := li.c
	st, err := c.stat(ctx, n.path)
	if err != nil {
		return err
	}
	if st == nil || st.Czxid != n.czxid {
		return errNodeGone
	}
	if st.EphemeralOwner != 0 && st.EphemeralOwner != c.snapshot().session {
		return errNodeGone // an old session's node, about to be deleted
	}
	return nil
}

// sortedChildren lists the lock's children in the driver's order. A
// missing lock node has no children.
func (li *lockInternals) sortedChildren(ctx context.Context) ([]string, error) {
	c := li.c
	children, err := retry(c, ctx, func() ([]string, error) {
		ch, _, err := c.zc.Children(li.basePath)
		return ch, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sortChildren(children, li.lockName, li.driver)
	return children, nil
}
