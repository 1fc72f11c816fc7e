package zklock

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// revokeMessage is the data Curator's Revoker writes into a lock node to ask
// its holder to release.
var revokeMessage = []byte("__REVOKE__")

// protectedPrefix starts every protected node name: "_c_<uuid>-".
const (
	protectedPrefix    = "_c_"
	protectedPrefixLen = len(protectedPrefix) + 36 + 1
)

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

// sortChildren sorts children by the driver's sort key, comparing keys as
// Java's String.compareTo does, and keeps the listing order of equal keys.
func sortChildren(children []string, lockName string, d Driver) {
	type keyed struct{ key, name string }
	ks := make([]keyed, len(children))
	for i, ch := range children {
		ks[i] = keyed{d.SortKey(ch, lockName), ch}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return compareUTF16(a.key, b.key) })
	for i := range ks {
		children[i] = ks[i].name
	}
}

// compareUTF16 compares two strings in UTF-16 code unit order, the order of
// Java's String.compareTo. It equals byte order except where a character
// above U+FFFF meets one in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b) // one is a prefix of the other
	}
	if a[i] < 0x80 && b[i] < 0x80 {
		return int(a[i]) - int(b[i])
	}
	// Back up to the start of the differing characters.
	for i > 0 && a[i]&0xC0 == 0x80 {
		i--
	}
	ra, rb := []rune(a[i:])[0], []rune(b[i:])[0]
	return int(utf16Unit(ra)) - int(utf16Unit(rb))
}

// utf16Unit returns the first UTF-16 code unit of r.
func utf16Unit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// monitor watches a held node until stop is closed, and calls onLost once
// if the hold ends otherwise: the node is deleted, the session is lost, or
// (under StandardPolicy) the connection is suspended.
func (li *lockInternals) monitor(n *lockNode, snap snapshot, stop <-chan struct{}, onLost func(error), onRevoke func()) {
	c := li.c
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	for {
		stateCh := c.stateChanged()
		if err := c.holdLost(snap); err != nil {
			onLost(err)
			return
		}
		select {
		case ev := <-n.own:
			if err := li.ownEvent(ctx, n, ev, onRevoke); err != nil {
				if ctx.Err() != nil {
					return // released while we looked
				}
				if errors.Is(err, errNodeGone) {
					err = fmt.Errorf("%w: node %s deleted", ErrLockLost, c.relPath(n.path))
				} else if errors.Is(err, ErrClosed) {
					err = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)
				} else {
					err = fmt.Errorf("%w: %w", ErrLockLost, err)
				}
				onLost(err)
				return
			}
		case <-stateCh:
		case <-stop:
			return
		case <-c.closing:
			onLost(fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
			return
		}
	}
}

// watchSet shares one ZooKeeper watch per node among all local waiters.
// go-zookeeper cannot remove a watch, so a waiter that gives up leaves its
// watch registered until the node changes; sharing bounds those leftovers
// by the number of distinct watched nodes instead of the number of waits.
type watchSet struct {
	mu      sync.Mutex
	m       map[string]<-chan zk.Event // guarded by mu; unfired watches by path
	sweepAt int                        // guarded by mu; size that triggers a sweep
}

// fired reports whether a watch channel has delivered its event. go-zk sends
// one event and closes the channel, so every waiter still wakes.
func fired(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// watchNode returns a channel that fires at the next change to the node at
// p (data change or deletion), or zk.ErrNoNode if it does not exist.
func (c *Client) watchNode(ctx context.Context, p string) (<-chan zk.Event, error) {
	ws := &c.watches
	ws.mu.Lock()
	if ch, ok := ws.m[p]; ok {
		if !fired(ch) {
			ws.mu.Unlock()
			return ch, nil
		}
		delete(ws.m, p)
	}
	ws.mu.Unlock()
	type got struct{ ch <-chan zk.Event }
	keep := func(g got, err error) {
		if err == nil {
			ws.put(p, g.ch)
		}
	}
	g, err := await(c, ctx, func() (got, error) {
		_, _, ch, err := c.zc.GetW(p)
		return got{ch}, err
	}, keep)
	if err != nil {
		return nil, closedErr(err)
	}
	keep(g, nil)
	return g.ch, nil
}

func (ws *watchSet) put(p string, ch <-chan zk.Event) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.m[p] = ch
	if len(ws.m) >= ws.sweepAt {
		for k, v := range ws.m {
			if fired(v) {
				delete(ws.m, k)
			}
		}
		ws.sweepAt = 2*len(ws.m) + 64
	}
}

// createProtected creates a node named "_c_<uuid>-<base of p>" beside p, as
// Curator's protected mode does, creating missing parents as CONTAINER
// nodes. After a connection loss it finds the node it may already have
// created by its prefix; a node found that belongs to an earlier session is
// deleted and the create starts over (CURATOR-498). If the create finally
// fails, or ctx ends while it is in flight, a node it may have left behind
// is found and deleted in the background.
func (c *Client) createProtected(ctx context.Context, p string, data []byte, flags int32) (created string, err error) {
	parent, base := path.Split(p)
	parent = strings.TrimSuffix(parent, "/")
	if parent == "" {
		parent = "/"
	}
	prefix := protectedPrefix + newUUID() + "-"
	acl := c.opts.acl(p)
	ephemeral := flags&zk.FlagEphemeral != 0
	r := newRetrier(c.opts.retry)
	unknown := false // a create with prefix may have succeeded unseen
	defer func() {
		if err != nil && unknown {
			c.findAndDelete(parent, prefix)
		}
	}()
	abandoned := func(pfx string) func(string, error) {
		return func(created string, err error) {
			switch {
			case err == nil:
				c.deleteNode(created)
			case retryable(err):
				c.findAndDelete(parent, pfx)
			}
		}
	}
	noNode := 0
	for {
		if unknown {
			found, owner, err := c.findProtected(ctx, parent, prefix)
			if err != nil {
				return "", err
			}
			if found != "" {
				if !ephemeral || owner == c.zc.SessionID() {
					return found, nil
				}
				c.deleteNode(found) // an earlier session's node, dying
				prefix = protectedPrefix + newUUID() + "-"
			}
			unknown = false
		}
		name := path.Join(parent, prefix+base)
		created, err := await(c, ctx, func() (string, error) {
			return c.zc.Create(name, data, flags, acl)
		}, abandoned(prefix))
		switch {
		case err == nil:
			return created, nil
		case errors.Is(err, zk.ErrNoNode) && noNode < 3:
			// A parent is missing, or a container parent was reaped
			// between mkdirs and the create: make it and try at once.
			noNode++
			if err := c.mkdirs(ctx, parent); err != nil {
				return "", err
			}
			continue
		case !retryable(err):
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return "", err // the abandoned create cleans up after itself
			}
			return "", fmt.Errorf("create %s: %w", name, closedErr(err))
		}
		unknown = true
		if ok, werr := r.next(ctx, c.closing); !ok {
			if werr != nil {
				return "", werr
			}
			return "", fmt.Errorf("create %s: %w", name, err)
		}
	}
}

// stat returns the Stat of the node at p, or nil if it does not exist.
// (go-zookeeper's Exists returns a zero Stat for a missing node.)
func (c *Client) stat(ctx context.Context, p string) (*zk.Stat, error) {
	return retry(c, ctx, func() (*zk.Stat, error) {
		ok, st, err := c.zc.Exists(p)
		if err == nil && !ok {
			st = nil
		}
		return st, err
	})
}

// findProtected lists parent for a child that starts with prefix. It
// returns the child's path and ephemeral owner, or "" if there is none.
func (c *Client) findProtected(ctx context.Context, parent, prefix string) (string, int64, error) {
	// The create may have reached the leader while our server lags: sync
	// first, so the listing cannot miss it.
	if _, err := retry(c, ctx, func() (string, error) { return c.zc.Sync(parent) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", 0, err
	}
	children, err := retry(c, ctx, func() ([]string, error) {
		ch, _, err := c.zc.Children(parent)
		return ch, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			p := path.Join(parent, ch)
			st, err := c.stat(ctx, p)
			if err != nil {
				return "", 0, err
			}
			if st == nil {
				return "", 0, nil
			}
			return p, st.EphemeralOwner, nil
		}
	}
	return "", 0, nil
}

// findAndDelete deletes, in the background, the child of parent that starts
// with prefix, if it exists: the node of a create whose outcome is unknown.
func (c *Client) findAndDelete(parent, prefix string) {
	c.cleanup(func() {
		c.untilDone(func() (bool, error) {
			children, _, err := c.zc.Children(parent)
			if errors.Is(err, zk.ErrNoNode) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			for _, ch := range children {
				if strings.HasPrefix(ch, prefix) {
					err := c.zc.Delete(path.Join(parent, ch), -1)
					return err == nil || errors.Is(err, zk.ErrNoNode), err
				}
			}
			return true, nil
		})
	})
}

// mkdirs creates parent and its missing ancestors as CONTAINER nodes.
func (c *Client) mkdirs(ctx context.Context, parent string) error {
	if parent == "/" {
		return nil
	}
	segs := strings.Split(parent[1:], "/")
	for i := range segs {
		p := "/" + strings.Join(segs[:i+1], "/")
		acl := c.opts.acl(p)
		_, err := retry(c, ctx, func() (string, error) {
			return c.zc.CreateContainer(p, nil, zk.FlagContainer, acl)
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create parent %s: %w", p, err)
		}
	}
	return nil
}

// deleteNode deletes a node the Client created, guaranteed: while the
// connection is up it deletes at once; if that fails on the network, or the
// connection is down, the delete goes on in the background until it
// succeeds, the node is gone, or the Client closes. It returns the error of
// the attempt made at once, nil when it deleted the node or handed the
// delete to the background, and zk.ErrNoNode when the node was already gone.
func (c *Client) deleteNode(p string) error {
	var err error
	if s := c.State(); s == StateConnected || s == StateReconnected || s == StateClosed {
		ctx, cancel := context.WithTimeout(context.Background(), c.sessionTimeout()/3)
		_, err = await(c, ctx, func() (struct{}, error) {
			return struct{}{}, c.zc.Delete(p, -1)
		}, nil)
		cancel()
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if !retryable(err) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	c.log.Warn("zklock: delete continues in the background", "path", p, "err", err)
	c.cleanup(func() {
		c.untilDone(func() (bool, error) {
			err := c.zc.Delete(p, -1)
			return err == nil || errors.Is(err, zk.ErrNoNode), err
		})
	})
	return nil
}

// untilDone runs op until it reports done, fails with an error that is not
// connection-level, or the Client closes. Between attempts it waits for the
// connection state to change, or a back-off of at most a second.
func (c *Client) untilDone(op func() (bool, error)) {
	wait := 50 * time.Millisecond
	for {
		changed := c.stateChanged()
		done, err := op()
		if done {
			return
		}
		if err != nil && !retryable(err) {
			c.log.Error("zklock: background clean-up gave up", "err", err)
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-c.closing:
			t.Stop()
			return
		case <-changed:
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, time.Second)
	}
}

// newUUID returns a random (version 4) UUID in its 36-character form, as
// java.util.UUID.randomUUID().toString() does.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux; see crypto/rand
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// isProtected reports whether name has the protection prefix, the test
// Curator's ProtectedUtils.isProtectedZNode makes.
func isProtected(name string) bool {
	if len(name) <= protectedPrefixLen || !strings.HasPrefix(name, protectedPrefix) || name[protectedPrefixLen-1] != '-' {
		return false
	}
	return validUUID(name[len(protectedPrefix) : protectedPrefixLen-1])
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(s[i])) {
				return false
			}
		}
	}
	return true
}
