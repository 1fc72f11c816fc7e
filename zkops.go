package zklock

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock/internal/zksession"
)

// zkConn is the engine's one view of a ZooKeeper session, whichever
// transport carries it: zklock's own session (Connect) or a go-zookeeper
// connection (NewClient). Every call takes the context of the work it
// serves. A transport that can abandon a request returns at once when ctx
// ends, with ctx.Err(); one that cannot (go-zookeeper) ignores ctx, and
// the engine's await bounds the wait instead.
type zkConn interface {
	Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(ctx context.Context, path string) ([]string, *zk.Stat, error)
	ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Get(ctx context.Context, path string) ([]byte, *zk.Stat, error)
	GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Exists(ctx context.Context, path string) (bool, *zk.Stat, error)
	ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error)
	Delete(ctx context.Context, path string, version int32) error
	Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)
	Sync(ctx context.Context, path string) (string, error)
	SessionID() int64
	// Native reports whether the calls return when ctx ends.
	Native() bool
}

// goConn is a go-zookeeper connection seen as a zkConn. Its calls cannot
// be cancelled: they ignore ctx (see await).
type goConn struct{ conn *zk.Conn }

func (g goConn) Create(_ context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return g.conn.Create(p, data, flags, acl)
}

func (g goConn) CreateContainer(_ context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return g.conn.CreateContainer(p, data, flags, acl)
}

func (g goConn) Children(_ context.Context, p string) ([]string, *zk.Stat, error) {
	return g.conn.Children(p)
}

func (g goConn) ChildrenW(_ context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return g.conn.ChildrenW(p)
}

func (g goConn) Get(_ context.Context, p string) ([]byte, *zk.Stat, error) { return g.conn.Get(p) }

func (g goConn) GetW(_ context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return g.conn.GetW(p)
}

func (g goConn) Exists(_ context.Context, p string) (bool, *zk.Stat, error) { return g.conn.Exists(p) }

func (g goConn) ExistsW(_ context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return g.conn.ExistsW(p)
}

func (g goConn) Set(_ context.Context, p string, data []byte, version int32) (*zk.Stat, error) {
	return g.conn.Set(p, data, version)
}

func (g goConn) Delete(_ context.Context, p string, version int32) error {
	return g.conn.Delete(p, version)
}

func (g goConn) Multi(_ context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return g.conn.Multi(ops...)
}

func (g goConn) Sync(_ context.Context, p string) (string, error) { return g.conn.Sync(p) }

func (g goConn) SessionID() int64 { return g.conn.SessionID() }

func (g goConn) Native() bool { return false }

// retryable reports whether err is a connection-level failure after which
// the same operation may succeed. go-zookeeper reports most losses as
// ErrConnectionClosed, but a request whose write fails gets the socket's own
// error (a *net.OpError such as "broken pipe"); the server may or may not
// have read that request, so it is a connection loss like any other.
// (context.DeadlineExceeded is a net.Error too, hence *net.OpError.)
func retryable(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrSessionExpired) ||
		errors.As(err, &opErr) || errors.Is(err, io.EOF)
}

// await runs op and waits for it or for ctx. On zklock's own session op
// runs on the caller's goroutine and returns when ctx ends; a request it
// abandoned had an unknown outcome, which abandoned (if not nil) hears as
// errAbandoned, in the background. go-zookeeper calls cannot be
// cancelled, so when ctx can end, op runs on its own goroutine; if ctx ends
// first, await returns ctx.Err() and hands op's late result to abandoned
// (if not nil) on that goroutine, so that whatever op created is cleaned up.
func await[T any](c *Client, ctx context.Context, op func() (T, error), abandoned func(T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if c.zc.Native() {
		v, err := op()
		if err != nil && abandoned != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The request may still be served; its reply is not read
			// here: its outcome is unknown.
			late := func() { abandoned(zero, errAbandoned) }
			if !c.goFunc(late) {
				late()
			}
		}
		return v, err
	}
	if ctx.Done() == nil {
		return op()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	if !c.goFunc(func() {
		v, err := op()
		ch <- result{v, err}
	}) {
		// Close has begun; clean-up still runs, on the caller's goroutine.
		return op()
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if abandoned != nil {
			late := func() {
				r := <-ch
				abandoned(r.v, r.err)
			}
			if !c.goFunc(late) {
				late() // Close has begun: clean up before returning
			}
		}
		return zero, ctx.Err()
	}
}

// errAbandoned is the outcome await hands to abandoned when the transport
// dropped the request's reply: unknown, as after a connection loss.
var errAbandoned = fmt.Errorf("request abandoned: %w", zk.ErrConnectionClosed)

// retry runs op through await under the retry policy, retrying
// connection-level failures.
func retry[T any](c *Client, ctx context.Context, op func() (T, error)) (T, error) {
	r := newRetrier(c.opts.retry)
	for {
		v, err := await(c, ctx, op, nil)
		if err == nil || !retryable(err) {
			return v, closedErr(err)
		}
		if ok, werr := r.next(ctx, c.closing); !ok {
			if werr != nil {
				return v, werr
			}
			return v, err
		}
		// Like Curator's RetryLoop, give the connection a chance to come
		// back before the next attempt.
		if werr := c.awaitConnected(ctx, 0, c.opts.connectTimeout); werr != nil && !errors.Is(werr, context.DeadlineExceeded) {
			return v, werr
		}
	}
}

// closedErr maps go-zookeeper's closing error to ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, zk.ErrClosing) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// stat returns the Stat of the node at p, or nil if it does not exist.
// (go-zookeeper's Exists returns a zero Stat for a missing node.)
func (c *Client) stat(ctx context.Context, p string) (*zk.Stat, error) {
	return retry(c, ctx, func() (*zk.Stat, error) {
		ok, st, err := c.zc.Exists(ctx, p)
		if err == nil && !ok {
			st = nil
		}
		return st, err
	})
}

// protectedPrefix starts every protected node name: "_c_<uuid>-".
const (
	protectedPrefix    = "_c_"
	protectedPrefixLen = len(protectedPrefix) + 36 + 1
)

// createProtected creates a node named "_c_<uuid>-<base of p>" beside p, as
// Curator's protected mode does, creating missing parents as CONTAINER
// nodes. With a guard (a full path, or ""), the create and a check that the
// guard exists form one transaction; a missing guard fails it with an error
// wrapping ErrLockLost, since guards are the nodes of holds.
//
// After a connection loss it finds the node it may already have created by
// its prefix; a node found that belongs to an earlier session is deleted
// and the create starts over (CURATOR-498). If the create finally fails,
// or ctx ends while it is in flight, a node it may have left behind is
// found and deleted in the background.
func (c *Client) createProtected(ctx context.Context, p string, data []byte, flags int32, guard string) (string, error) {
	return c.createIn(ctx, LayoutCurator, p, data, flags, guard)
}

// createKazoo creates an EPHEMERAL_SEQUENTIAL node named
// "<uuid hex><base of p>" beside p, as kazoo's locks do, with
// createProtected's care: the uuid finds it after a connection loss, and
// missing parents are made as persistent nodes, as kazoo makes them (a
// container reaped under a kazoo process would fail its next create).
func (c *Client) createKazoo(ctx context.Context, p string, data []byte) (string, error) {
	return c.createIn(ctx, LayoutKazoo, p, data, zk.FlagEphemeral|zk.FlagSequence, "")
}

// createIn is a protected create in layout l's form.
func (c *Client) createIn(ctx context.Context, l Layout, p string, data []byte, flags int32, guard string) (string, error) {
	pc, err := c.protected(l, p, data, flags, guard)
	if err != nil {
		return "", err
	}
	return pc.run(ctx)
}

// createInKept is createIn under a parent that only its maker may make
// again (a kazoo Semaphore's pool, whose data is its size): a missing
// parent fails the create with an error wrapping zk.ErrNoNode.
func (c *Client) createInKept(ctx context.Context, l Layout, p string, data []byte, flags int32, guard string) (string, error) {
	pc, err := c.protected(l, p, data, flags, guard)
	if err != nil {
		return "", err
	}
	pc.missingParentTries = missingParentTries // none left to spend
	return pc.run(ctx)
}

// protected prepares a protected create of p in layout l's form.
func (c *Client) protected(l Layout, p string, data []byte, flags int32, guard string) (*protectedCreate, error) {
	parent, base := path.Split(p)
	parent = strings.TrimSuffix(parent, "/")
	if parent == "" {
		parent = "/"
	}
	acl, err := c.aclFor(p)
	if err != nil {
		return nil, err
	}
	return &protectedCreate{c: c, layout: l, parent: parent, base: base, data: data, flags: flags, guard: guard, acl: acl}, nil
}

// aclFor returns the ACL of a node the library creates at p. An empty ACL
// from the WithACL function is refused before ZooKeeper refuses it.
func (c *Client) aclFor(p string) ([]zk.ACL, error) {
	acl := c.opts.acl(p)
	if len(acl) == 0 {
		return nil, errorf(ErrInvalidArgument, "ACL provider returned no ACL for %s", p)
	}
	return acl, nil
}

// sendingKey carries, in the context of a create (or a delete), a
// function to call with the node's path right before the request is
// handed to the connection: a read that must be served after the create
// waits for it (see readBehind), and the caller of a delete that goes on
// without it (see deleteGivenUp).
type sendingKey struct{}

// whenQueued calls ctx's sending function for a request on p as soon as
// its request is queued (on zklock's own session), or now, and returns the
// context to send it under.
func whenQueued(ctx context.Context, c *Client, p string) context.Context {
	if c.zc.Native() {
		if f, ok := ctx.Value(sendingKey{}).(func(string)); ok {
			return zksession.WithQueued(ctx, func() { f(p) })
		}
		return ctx
	}
	sending(ctx, p)
	return ctx
}

// sending calls ctx's sending function, if it has one, for a create of p.
func sending(ctx context.Context, p string) {
	if f, ok := ctx.Value(sendingKey{}).(func(string)); ok {
		f(p)
	}
}

// protectedCreate is one protected create in progress.
type protectedCreate struct {
	c                  *Client
	layout             Layout // of the name's prefix, and of the parents made
	parent, base       string
	data               []byte
	flags              int32
	guard              string
	acl                []zk.ACL
	prefix             string // "_c_<uuid>-" (Curator) or "<uuid hex>" (kazoo) of the current attempt
	unknown            bool   // a create with prefix may have succeeded unseen
	missingParentTries int
}

// newPrefix returns a new prefix for the next attempt's name.
func (pc *protectedCreate) newPrefix() string {
	if pc.layout == LayoutKazoo {
		return strings.ReplaceAll(newUUID(), "-", "") // Python's uuid4().hex
	}
	return protectedPrefix + newUUID() + "-"
}

func (pc *protectedCreate) run(ctx context.Context) (created string, err error) {
	c := pc.c
	pc.prefix = pc.newPrefix()
	r := newRetrier(c.opts.retry)
	defer func() {
		if err != nil && pc.unknown {
			c.findAndDelete(pc.parent, pc.prefix)
		}
	}()
	for {
		if pc.unknown {
			if found, err := pc.find(ctx); err != nil || found != "" {
				return found, err
			}
		}
		name := path.Join(pc.parent, pc.prefix+pc.base)
		created, err := await(c, ctx, func() (string, error) {
			return pc.create(whenQueued(ctx, c, name), name)
		}, pc.abandoned(pc.prefix))
		switch {
		case err == nil:
			return created, nil
		case errors.Is(err, zk.ErrNoNode) && pc.missingParentTries < missingParentTries:
			// A parent is missing, or a container parent was reaped
			// between mkdirsAs and the create: make it and try at once.
			pc.missingParentTries++
			if err := c.mkdirsAs(ctx, pc.parent, pc.layout != LayoutKazoo); err != nil {
				return "", err
			}
			continue
		case !retryable(err):
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return "", err // the abandoned create cleans up after itself
			}
			if errors.Is(err, zk.ErrInvalidACL) {
				return "", errorf(ErrInvalidArgument, "create %s: ACL %v: %w", name, pc.acl, err)
			}
			return "", fmt.Errorf("create %s: %w", name, closedErr(err))
		}
		pc.unknown = true
		c.log.Debug("zklock: create outcome unknown", "path", name, "err", err)
		if ok, werr := r.next(ctx, c.closing); !ok {
			return "", cmp.Or(werr, fmt.Errorf("create %s: %w", name, err))
		}
	}
}

// find looks for the node of an attempt whose outcome is unknown. A node
// of an earlier session is deleted, and the next attempt takes a new
// prefix.
func (pc *protectedCreate) find(ctx context.Context) (string, error) {
	c := pc.c
	found, owner, err := c.findProtected(ctx, pc.parent, pc.prefix)
	if err != nil || found == "" {
		pc.unknown = err != nil
		return "", err
	}
	if pc.flags&zk.FlagEphemeral == 0 || owner == c.zc.SessionID() {
		return found, nil
	}
	c.deleteNode(found) // an earlier session's node, dying
	pc.prefix = pc.newPrefix()
	pc.unknown = false
	return "", nil
}

// create sends one create, in a transaction with the guard check if there
// is a guard.
func (pc *protectedCreate) create(ctx context.Context, name string) (string, error) {
	zc := pc.c.zc
	if pc.guard == "" {
		return zc.Create(ctx, name, pc.data, pc.flags, pc.acl)
	}
	res, err := zc.Multi(ctx,
		&zk.CheckVersionRequest{Path: pc.guard, Version: -1},
		&zk.CreateRequest{Path: name, Data: pc.data, Acl: pc.acl, Flags: pc.flags},
	)
	if len(res) == 2 {
		switch {
		case errors.Is(res[0].Error, zk.ErrNoNode):
			return "", fmt.Errorf("%w: node %s is gone", ErrLockLost, pc.guard)
		case res[1].Error != nil:
			return "", res[1].Error
		case err == nil:
			return res[1].String, nil
		}
	}
	return "", err
}

// abandoned cleans up after an attempt with prefix whose caller stopped
// waiting: a node it created is deleted, in the background.
func (pc *protectedCreate) abandoned(prefix string) func(string, error) {
	return func(created string, err error) {
		switch {
		case err == nil:
			pc.c.deleteNode(created)
		case retryable(err):
			pc.c.findAndDelete(pc.parent, prefix)
		}
	}
}

// findProtected lists parent for a child that starts with prefix. It
// returns the child's path and ephemeral owner, or "" if there is none.
func (c *Client) findProtected(ctx context.Context, parent, prefix string) (string, int64, error) {
	children, err := retry(c, ctx, func() ([]string, error) { return c.childrenSynced(ctx, parent) })
	if errors.Is(err, zk.ErrNoNode) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	p := withPrefix(parent, children, prefix)
	if p == "" {
		return "", 0, nil
	}
	st, err := c.stat(ctx, p)
	if err != nil || st == nil {
		return "", 0, err
	}
	return p, st.EphemeralOwner, nil
}

// childrenSynced lists parent after a sync: a create whose outcome is
// unknown may have reached the leader while our server lags, and the
// listing must not miss it.
func (c *Client) childrenSynced(ctx context.Context, parent string) ([]string, error) {
	if _, err := c.zc.Sync(ctx, parent); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	children, _, err := c.zc.Children(ctx, parent)
	return children, err
}

// withPrefix returns the path of the child of parent whose name starts
// with prefix, or "".
func withPrefix(parent string, children []string, prefix string) string {
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			return path.Join(parent, ch)
		}
	}
	return ""
}

// findAndDelete deletes, in the background, the child of parent that starts
// with prefix, if it exists: the node of a create whose outcome is unknown.
func (c *Client) findAndDelete(parent, prefix string) {
	c.cleanup(func() {
		c.untilDone(func() (bool, error) {
			children, err := c.childrenSynced(context.Background(), parent)
			if errors.Is(err, zk.ErrNoNode) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			p := withPrefix(parent, children, prefix)
			if p == "" {
				c.log.Debug("zklock: abandoned create left no node", "parent", parent, "prefix", prefix)
				return true, nil
			}
			done, err := c.deleteOnce(context.Background(), p)
			c.log.Debug("zklock: abandoned create found and deleted", "path", p, "err", err)
			return done, err
		})
	})
}

// missingParentTries bounds how often a create finds its parent gone
// and makes it again. ZooKeeper's container reaper deletes an empty
// container that has had children, at any moment, ancestors included; a
// container made anew is safe from it until it has had a child. So a
// create that lost its parent to the reaper succeeds on the next try,
// unless an ancestor is reaped too, or a caller deletes the path again
// and again.
const missingParentTries = 10

// mkdirsAs creates parent and its missing ancestors as CONTAINER nodes
// (Curator's layout), or persistent ones unless container (kazoo's),
// deepest first: one create when only parent is missing, as after a reap.
// A create that finds its own parent gone (never made, or reaped meanwhile)
// makes that parent first and tries again, missingParentTries times in
// all for the whole path beyond one per missing ancestor.
func (c *Client) mkdirsAs(ctx context.Context, parent string, container bool) error {
	budget := strings.Count(parent, "/") + missingParentTries
	return c.mkdir(ctx, parent, container, &budget)
}

// mkdir is mkdirsAs of p, spending one of budget's tries on each create
// that finds its parent gone; persistent nodes instead of containers
// unless container.
func (c *Client) mkdir(ctx context.Context, p string, container bool, budget *int) error {
	if p == "/" {
		return nil
	}
	acl, err := c.aclFor(p)
	if err != nil {
		return err
	}
	for {
		_, err = retry(c, ctx, func() (string, error) {
			if container {
				return c.zc.CreateContainer(ctx, p, []byte{}, zk.FlagContainer, acl)
			}
			return c.zc.Create(ctx, p, []byte{}, 0, acl) // empty, not null: kazoo reads a null as None
		})
		switch {
		case err == nil || errors.Is(err, zk.ErrNodeExists):
			return nil
		case !errors.Is(err, zk.ErrNoNode) || *budget <= 0:
			return fmt.Errorf("create %s: %w", p, err)
		}
		*budget--
		if err := c.mkdir(ctx, path.Dir(p), container, budget); err != nil {
			return err
		}
	}
}

// deleteNode deletes a node the Client created, guaranteed: while the
// connection is up it deletes at once; if that fails on the network, or the
// connection is down, the delete goes on in the background until it
// succeeds, the node is gone, or the Client closes. It returns the error of
// the attempt made at once, nil when it deleted the node or handed the
// delete to the background, and zk.ErrNoNode when the node was already gone.
func (c *Client) deleteNode(p string) error {
	_, err := c.deleteNodeGone(context.Background(), p, story{})
	return err
}

// deleteLockNode is deleteNode for n, an engine's node, which its
// Client's holdWatch then no longer follows, even if a watch is set on it
// late.
func (c *Client) deleteLockNode(n *lockNode) error {
	c.holds.drop(n)
	return c.deleteNode(n.path)
}

// deleteGivenUp is deleteLockNode for a caller whose context is ctx. When
// ctx has ended, on zklock's own session, the caller waits only until the
// delete is queued on the session, and the delete goes on in the
// background: its caller's time is up, and its request needs no caller to
// reach the server. Queued before the caller returns, it goes out before
// whatever the caller sends next on that connection, which ZooKeeper
// serves after it: a listing there no longer shows the node. (A delete
// still queued when the connection drops is retried in the background,
// after the caller's next requests.)
func (c *Client) deleteGivenUp(ctx context.Context, n *lockNode) {
	if ctx.Err() == nil {
		c.deleteLockNode(n)
		return
	}
	c.deleteQueued(n)
}

// deleteQueued deletes n, a node whose delete no caller waits for, such as
// a Semaphore's internal lock once its leases are made: it returns once
// the delete is queued on zklock's own session, whose later requests
// ZooKeeper serves after it, and the delete goes on in the background.
// So the caller's next request, or another process told of it by a
// later request's reply, no longer finds n. That holds while the
// connection is down too: the session keeps the delete queued, with no
// deadline, and sends it first after the reconnect. A delete the
// connection loses on its way is queued again as the loss is reported,
// before the reconnect, ahead of requests retried after it. Only what
// still fails then goes to the background queue (see deleteNode). On a
// wrapped go-zookeeper connection, which does not say when a request is
// queued, it returns once the delete is done, or gone to the background.
func (c *Client) deleteQueued(n *lockNode) {
	if !c.zc.Native() {
		c.deleteLockNode(n)
		return
	}
	c.holds.drop(n)
	queued := make(chan struct{})
	var once sync.Once
	mark := func() { once.Do(func() { close(queued) }) }
	if !c.goFunc(func() {
		defer mark() // not sent: nothing to wait for
		if !c.endsWithSession(n.path, nil) && !c.deleteInSession(zksession.WithQueued(context.Background(), mark), n.path) {
			_, _ = c.deleteNodeGone(context.Background(), n.path, story{})
		}
	}) {
		c.cleanup(func() { c.deleteNode(n.path) })
		return
	}
	<-queued
}

// deleteInSession deletes p on zklock's own session with no deadline of
// its own: a request the session keeps queued while its connection is
// down, and queues again, a few times, when a connection is lost under
// it, as long as the session lives. It reports whether p is gone.
func (c *Client) deleteInSession(ctx context.Context, p string) bool {
	sid := c.zc.SessionID()
	for range 3 {
		done, err := c.deleteOnce(ctx, p)
		if done {
			return true
		}
		if !errors.Is(err, zk.ErrConnectionClosed) || c.zc.SessionID() != sid {
			return false
		}
	}
	return false
}

// deleteNodeGone is deleteNode, also reporting whether p was gone when it
// returned: deleted, or found gone; not when the delete failed or goes on
// in the background. A delete that goes on in the background is reported
// as an event of st, a hold's story, or of none (st's zero value). Its
// first request is sent under values's values, not its end: a sending
// function there learns when it is queued (see whenQueued).
func (c *Client) deleteNodeGone(values context.Context, p string, st story) (bool, error) {
	if c.endsWithSession(p, nil) {
		return false, nil
	}
	c.mu.Lock()
	s, err := c.state, c.notConnectedLocked() // why a delete cannot be sent now
	c.mu.Unlock()
	if s == StateConnected || s == StateReconnected || s == StateClosed {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(values), c.deleteWait())
		var done bool
		done, err = await(c, ctx, func() (bool, error) { return c.deleteOnce(whenQueued(ctx, c, p), p) }, nil)
		cancel()
		if done {
			return true, err
		}
		// Close may have begun while the delete was on its way, and closed
		// the connection under it (zk.ErrConnectionClosed, zk.ErrClosing).
		if c.endsWithSession(p, err) {
			return false, nil
		}
		if !retryable(err) && !errors.Is(err, context.DeadlineExceeded) {
			c.log.Error("zklock: delete failed; the node stays", "path", p, "err", err)
			return false, err
		}
	} else if c.endsWithSession(p, err) {
		return false, nil
	}
	// The first of a burst at Warn, the others at Debug: a connection that
	// drops under a thousand holds makes a thousand.
	if c.bgDeletes.Add(1) == 1 {
		c.log.Warn("zklock: delete continues in the background (those that follow it while it does are logged at Debug)", "path", p, "err", err)
	} else {
		c.log.Debug("zklock: delete continues in the background", "path", p, "err", err)
	}
	if st.c == nil {
		st = story{c: c} // a node of no hold: no ID, recipe or path
	}
	st.emit(Event{Kind: EventDeleteRetried, Node: c.relPath(p), Err: err})
	c.cleanup(func() {
		defer c.bgDeletes.Add(-1)
		c.untilDone(func() (bool, error) { return c.deleteOnce(context.Background(), p) })
	})
	return false, nil
}

// deleteBound is the longest a delete's caller (a Release, a wait that
// gives up) waits for its answer on zklock's own session before the
// delete goes on in the background.
const deleteBound = time.Second

// deleteWait is how long a delete's caller waits for its answer: a third
// of the session timeout (within which a live connection answers or is
// declared lost), and at most deleteBound on zklock's own session, whose
// requests need no caller to finish: a silent connection does not hold a
// Release for seconds.
func (c *Client) deleteWait() time.Duration {
	d := c.sessionTimeout() / 3
	if c.zc.Native() {
		d = min(d, deleteBound)
	}
	return d
}

// endsWithSession reports whether the node at p is left to the end of
// the session, and says so at Debug with err, the delete's error if one
// was sent: once Close has begun on a connection the Client owns, which
// ends the session (or, if the connection is down, lets it expire), and
// with it the node. Nothing is sent or goes on in the background then.
func (c *Client) endsWithSession(p string, err error) bool {
	if !c.ownsConn || c.usable() == nil {
		return false
	}
	c.log.Debug("zklock: closing: the node ends with the session", "path", p, "err", err)
	return true
}

// deleteOnce sends one delete of p, for untilDone: done once p is gone.
// Gone may mean that an earlier, unacknowledged attempt deleted it, and
// that delete may be undone too: either way p is remembered for the
// recheck after a reconnect.
func (c *Client) deleteOnce(ctx context.Context, p string) (bool, error) {
	err := c.zc.Delete(ctx, p, -1)
	done := err == nil || errors.Is(err, zk.ErrNoNode)
	if done {
		c.deletes.add(p)
	}
	return done, err
}

// untilDone runs op until it reports done, fails with an error that is not
// connection-level, or the node it works on is gone with its session: the
// session was replaced, or its connection closed. Between attempts it
// waits for the connection state to change, or a back-off of at most a
// second.
//
// Closing the Client stops it between attempts when the Client owns the
// connection: Close ends the session, and the nodes with it. A wrapped
// connection outlives the Client, and so would the nodes: there it goes on
// after Close until the pending work is done or the session can no longer
// be alive (see Client.closeBound), and Close waits for it.
func (c *Client) untilDone(op func() (bool, error)) {
	sid := c.zc.SessionID()
	wait := 50 * time.Millisecond
	for {
		changed := c.stateChanged()
		done, err := op()
		if c.untilDoneEnds(done, err, sid) {
			return
		}
		t := time.NewTimer(wait)
		closing := c.closing
		if !c.ownsConn {
			closing = nil // only the bound checked above ends it
		}
		select {
		case <-closing:
			t.Stop()
			return
		case <-changed:
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, time.Second)
	}
}

// untilDoneEnds reports whether untilDone, started in session sid, stops
// after an attempt that returned done and err.
func (c *Client) untilDoneEnds(done bool, err error, sid int64) bool {
	switch {
	case done:
		return true
	case errors.Is(err, zk.ErrClosing):
		c.log.Debug("zklock: connection closed; the session and its nodes end with it")
		return true
	case err != nil && !retryable(err):
		c.log.Error("zklock: background clean-up gave up", "err", err)
		return true
	case sid != 0 && c.zc.SessionID() != sid:
		c.log.Debug("zklock: session replaced; its nodes are gone with it")
		return true
	case c.pastCloseBound():
		c.log.Warn("zklock: closed; the connection stayed down until the session must have expired", "err", err)
		return true
	}
	return false
}

// newUUID returns a random (version 4) UUID in its 36-character form, as
// java.util.UUID.randomUUID().toString() does.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux; see crypto/rand
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte // 8-4-4-4-12 hex digits; one allocation, where Sprintf made six
	hex.Encode(s[0:8], b[0:4])
	hex.Encode(s[9:13], b[4:6])
	hex.Encode(s[14:18], b[6:8])
	hex.Encode(s[19:23], b[8:10])
	hex.Encode(s[24:36], b[10:16])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
}

// isProtected reports whether name has the protection prefix, the test
// Curator's ProtectedUtils.isProtectedZNode makes, or is a kazoo lock
// node's "<uuid hex><kind><seq>": names never used twice.
func isProtected(name string) bool {
	_, _, ok := parseProtected(name)
	return ok || kazooProtected(name)
}

// parseProtected splits a protected name "_c_<uuid>-<rest>" into the uuid
// and the rest (the lock name and sequence), as Curator's
// ProtectedUtils.extractProtectedId and normalize do. It reports false,
// with rest the whole name, for a name without the prefix or with nothing
// after it.
func parseProtected(name string) (id, rest string, ok bool) {
	if len(name) <= protectedPrefixLen || !strings.HasPrefix(name, protectedPrefix) || name[protectedPrefixLen-1] != '-' {
		return "", name, false
	}
	id = name[len(protectedPrefix) : protectedPrefixLen-1]
	if !validUUID(id) {
		return "", name, false
	}
	return id, name[protectedPrefixLen:], true
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

// opsMemory is the part of a Client that its ZooKeeper operations keep
// between calls: the watches its waiters share (watchSet, in this file)
// and the deletes to check again after a reconnect (recentDeletes,
// recheck.go). Each is written by its own methods, under its own lock;
// watches is made by init.
type opsMemory struct {
	watches watchSet
	deletes recentDeletes // checked again after a reconnect
}

func (m *opsMemory) init() {
	m.watches.m, m.watches.sweepAt = make(map[string]*sharedWatch), 64
}

// watchSet shares one ZooKeeper watch per node among all local waiters,
// so that waits on one node cost one watch, and counts the waits that use
// each. On zklock's own session, a watch whose last wait gave up before it
// fired is removed (removeWatches); go-zookeeper
// cannot remove a watch, so there a wait that gives up leaves its watch
// registered until the node changes, and sharing bounds those leftovers
// by the number of distinct watched nodes instead of the number of waits.
// (See Client.unwatchNode.)
type watchSet struct {
	mu      sync.Mutex
	m       map[string]*sharedWatch // guarded by mu; unfired watches by path
	sweepAt int                     // guarded by mu; size that triggers a sweep
}

// sharedWatch is one node's watch in a watchSet.
type sharedWatch struct {
	ch   <-chan zk.Event
	t    *zksession.Tentative // removes it (zklock's own session)
	uses int                  // waits that use it now; guarded by watchSet.mu
}

// fired reports whether a watch channel has delivered its event. go-zk sends
// one event and closes the channel, so every waiter still wakes.
func fired(ch <-chan zk.Event) bool {
	_, ok := firedWith(ch)
	return ok
}

// firedWith is fired, also returning the event it consumed (a zero Event
// if another receiver had it).
func firedWith(ch <-chan zk.Event) (zk.Event, bool) {
	select {
	case ev := <-ch:
		return ev, true
	default:
		return zk.Event{}, false
	}
}

// watchNode returns a channel that fires at the next change to the node at
// p (data change or deletion), or zk.ErrNoNode if it does not exist. The
// caller uses the watch until it gives it back with unwatchNode, once.
func (c *Client) watchNode(ctx context.Context, p string) (<-chan zk.Event, error) {
	ws := &c.watches
	ws.mu.Lock()
	if sw, ok := ws.m[p]; ok {
		ev, done := firedWith(sw.ch)
		if !done {
			sw.uses++
			ws.mu.Unlock()
			return sw.ch, nil
		}
		delete(ws.m, p)
		if ev.Type == zk.EventNodeDeleted {
			// Its watch saw it deleted: it is gone, no need to ask.
			ws.mu.Unlock()
			return nil, zk.ErrNoNode
		}
	}
	ws.mu.Unlock()
	wctx, t := c.tentative(ctx)
	type got struct{ ch <-chan zk.Event }
	keep := func(g got, err error) { // a late watch, of no wait
		if err == nil {
			ws.put(c, p, &sharedWatch{ch: g.ch, t: t})
		}
	}
	g, err := await(c, wctx, func() (got, error) {
		_, _, ch, err := c.zc.GetW(wctx, p)
		return got{ch}, err
	}, keep)
	if err != nil {
		dropWatches(t) // a watch its abandoned request may still set
		return nil, closedErr(err)
	}
	return ws.put(c, p, &sharedWatch{ch: g.ch, t: t, uses: 1}).ch, nil
}

// tentative returns a copy of ctx under which the watches a call sets are
// recorded in t, to be removed later (see zksession.Tentative), on
// zklock's own session; on go-zookeeper, which cannot remove a watch, ctx
// itself and nil.
func (c *Client) tentative(ctx context.Context) (context.Context, *zksession.Tentative) {
	if !c.zc.Native() {
		return ctx, nil
	}
	t := new(zksession.Tentative)
	return zksession.WithTentative(ctx, t), t
}

// dropWatches removes the watches t recorded (nil: none), without waiting
// for the server's answer.
func dropWatches(t *zksession.Tentative) {
	if t != nil {
		t.Drop()
	}
}

// unwatchNode gives back a use of the watch of the node at p that
// watchNode returned as ch. abandon says the wait gave up without it: if
// it has not fired and no other wait uses it, it is removed, from the
// server too, on zklock's own session (without waiting for the answer).
// Otherwise it stays for a later wait to share, as a watch of
// go-zookeeper, which cannot remove one, does.
func (c *Client) unwatchNode(p string, ch <-chan zk.Event, abandon bool) {
	ws := &c.watches
	ws.mu.Lock()
	sw, ok := ws.m[p]
	if !ok || sw.ch != ch {
		ws.mu.Unlock()
		return // fired and swept, or replaced by a watch of another wait
	}
	sw.uses--
	drop := abandon && sw.uses == 0 && sw.t != nil
	if drop {
		delete(ws.m, p)
	}
	ws.mu.Unlock()
	if drop {
		sw.t.Drop()
	}
}

// put records sw as p's watch and returns the one its caller uses: sw,
// or p's watch that a concurrent call recorded first, still unfired,
// which sw's uses then join (sw, a second watch on the node, is removed
// on zklock's own session: the session keeps the server's watch for the
// first). A watch that no wait uses is removed at once on zklock's own
// session (nil is returned). Fired watches are swept out now and then.
func (ws *watchSet) put(c *Client, p string, sw *sharedWatch) *sharedWatch {
	if sw.uses == 0 && sw.t != nil {
		sw.t.Drop()
		return nil
	}
	ws.mu.Lock()
	if old, ok := ws.m[p]; ok && old != sw {
		if _, done := firedWith(old.ch); !done {
			old.uses += sw.uses
			ws.mu.Unlock()
			dropWatches(sw.t)
			return old
		}
	}
	ws.m[p] = sw
	if len(ws.m) >= ws.sweepAt {
		for k, v := range ws.m {
			if fired(v.ch) {
				delete(ws.m, k)
			}
		}
		ws.sweepAt = 2*len(ws.m) + 64
	}
	ws.mu.Unlock()
	return sw
}
