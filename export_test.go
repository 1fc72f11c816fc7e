package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// Test hooks: unexported helpers exposed to the black-box tests.
var (
	SortChildren     = sortChildren
	CompareUTF16     = compareUTF16
	IsProtected      = isProtected
	KazooProtected   = kazooProtected
	ParseProtected   = parseProtected
	ValidatePath     = validatePath
	ValidateLockPath = validateLockPath
	SortUpTo         = sortUpTo
	NewUUIDForTest   = newUUID
	Retryable        = retryable
)

// NamespacePaths applies WithNamespace(ns) and returns the namespace
// root ("" for none), p's full ZooKeeper path, and that path mapped back
// out of the namespace, as a Client does.
func NamespacePaths(ns, p string) (root, full, rel string, err error) {
	o := buildOptions([]Option{WithNamespace(ns)})
	if o.err != nil {
		return "", "", "", o.err
	}
	c := &Client{opts: o}
	full = c.fullPath(p)
	return o.namespace, full, c.relPath(full), nil
}

// ZKConn is the engine's view of a connection: the seam that lets tests
// inject failures around a real *zk.Conn.
type ZKConn = zkConn

// WithConnWrapper wraps the connection Connect opens before the Client
// uses it.
func WithConnWrapper(w func(ZKConn) ZKConn) Option {
	return func(o *options) { o.wrapConn = w }
}

// WatchedNodes reports how many nodes the Client's shared watch set tracks.
func WatchedNodes(c *Client) int {
	c.watches.mu.Lock()
	defer c.watches.mu.Unlock()
	return len(c.watches.m)
}

// SoloReady reports whether m's next acquire alone may be granted from
// its create's reply, without a listing (see solo.ready).
func SoloReady(m *Mutex) bool {
	return m.li.solo.ready(m.c.connEpoch())
}

// FollowedNodes reports how many own nodes the Client's holdWatch follows
// (its holds' and its waiters'), and how many lock parents whose child
// watch a listing on its way or a hold relies on.
func FollowedNodes(c *Client) (nodes, parents int) { return c.holds.len() }

// Followed describes what the Client's holdWatch follows, for a failure
// message.
func Followed(c *Client) string {
	w := c.holds
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for p, e := range w.nodes {
		fmt.Fprintf(&b, "node %s (hold %v, parent %v); ", p, e.h != nil, e.pw != nil)
	}
	for p, pw := range w.parents {
		fmt.Fprintf(&b, "parent %s (refs %d, holds %d); ", p, pw.refs, len(pw.holds))
	}
	return b.String()
}

// WatchesSettled reports whether the Client's holdWatch sets no watch at
// the moment: every hold's node is watched, or relies on its parent's.
func WatchesSettled(c *Client) bool {
	w := c.holds
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.nodes {
		if e.setting.busy() {
			return false
		}
	}
	return true
}

// ConnOf returns the engine's view of the Client's session, for tests that
// need a request on it that the Client's data operations do not make (a
// watch, a Multi, a Sync), on either transport.
func ConnOf(c *Client) ZKConn { return c.zc }

// HasChildWatch reports whether the server holds a child watch on the
// full path p for the session of c, a Client of Connect: it asks the
// server (checkWatches), on the session, after anything sent before.
// ZooKeeper 3.8 answers true when any session watches p (seen here: a
// session that never watched a node was told it had a data watch there,
// because another had one), so only a false answer is about c's session
// alone: use it where no other session may watch p, or see wchc.
func HasChildWatch(ctx context.Context, c *Client, p string) (bool, error) {
	err := c.own.cur().Do(ctx, zkwire.OpCheckWatches, p, zkwire.RemoveWatchesRequest{Path: p, Type: zkwire.WatcherChildren}, nil)
	if errors.Is(err, zksession.ErrNoWatcher) {
		return false, nil
	}
	return err == nil, err
}

// AddRecursiveWatch sets a persistent recursive watch on the full path p
// for the session of c, a Client of Connect. Its events are dropped: the
// test wants the server to keep sending to the Client.
func AddRecursiveWatch(ctx context.Context, c *Client, p string) error {
	return c.own.cur().AddWatch(ctx, p, zkwire.AddWatchPersistentRecursive)
}

// DeleteQueued gives up the node at p (a path in c's namespace) as a
// Semaphore gives up its internal lock once its leases are made: see
// Client.deleteQueued.
func DeleteQueued(c *Client, p string) {
	c.deleteQueued(newLockNode(c.fullPath(p), c.zc.SessionID()))
}

// OccupyBackground keeps every worker of c's background queue busy, as a
// mass loss's clean-up does, until the function it returns is called:
// work queued meanwhile waits.
func OccupyBackground(c *Client) (release func()) {
	gate := make(chan struct{})
	started := make(chan struct{}, backgroundWorkers)
	for range backgroundWorkers {
		c.cleanup(func() {
			started <- struct{}{}
			<-gate
		})
	}
	for range backgroundWorkers {
		<-started
	}
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// ConnEpoch identifies c's current connection: it changes at every
// reconnect (see Client.connEpoch).
func ConnEpoch(c *Client) uint64 { return c.connEpoch() }
