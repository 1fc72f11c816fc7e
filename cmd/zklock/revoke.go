package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/layout"
)

// opTimeout bounds the work of revoke, list, leader and break -holder.
const opTimeout = 30 * time.Second

const revokeUsage = `Usage: zklock revoke [flags] PATH NODE

Asks the holder of NODE, a node of the lock at PATH, to release it, as
Apache Curator's Revoker does: it writes "__REVOKE__" into the node, in
place of the node's data, its owner. revoke prints the owner and session
it replaced ('zklock inspect' shows the owner of a revoked node as
"(revoked)").
Revocation is cooperative: holders that made their lock revocable (zklock's
Mutex.MakeRevocable, Curator's makeRevocable) are told, and decide.
NODE is a node name as 'zklock inspect' shows it, a unique suffix of one
(such as its sequence number), or the node's full path. Semaphore leases
cannot be revoked: revoke refuses them (exit 1).

A kazoo node (Python's kazoo: ..__lock__<seq>, ..__rlock__<seq>) gets the
request all the same, and revoke says so: a kazoo process ignores it
(kazoo has no revocation), while a zklock holder in kazoo's layout that
called MakeRevocable honours it. kazoo's contenders() then lists
"__REVOKE__" as that holder's identifier.

Whether a holder is revocable cannot be seen in ZooKeeper, so revoke says
only that it asked. With -wait D it waits up to D for the node to go, and
says whether the holder released (exit 0) or not (exit 1: the holder is
not revocable, or did not decide to release).
`

// revokeFlags are revoke's command line.
type revokeFlags struct {
	*common
	wait time.Duration
}

func newRevokeFlags() *revokeFlags {
	f := &revokeFlags{common: newCommon("revoke", revokeUsage)}
	f.fs.DurationVar(&f.wait, "wait", 0, "wait this long for the holder to release (0: do not wait)")
	return f
}

// runRevoke is the revoke command.
func runRevoke(args []string, stdout, stderr io.Writer) int {
	f := newRevokeFlags()
	return f.exitFor(f.revoke(args, stdout), stdout, stderr)
}

func (f *revokeFlags) revoke(args []string, stdout io.Writer) error {
	lock, node, err := f.parseNode(args, argNode, false)
	if err != nil {
		return err
	}
	client, err := f.connect()
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	nodePath, err := findNode(ctx, client, f.common, lock, node)
	if err != nil {
		return err
	}
	replaced, err := f.replaced(ctx, client, nodePath)
	if err != nil {
		return err
	}
	if err := zklock.Revoke(ctx, client, nodePath); err != nil {
		return opError("revoke", nodePath, err)
	}
	fmt.Fprintf(stdout, "revocation requested: %s (%s)\n", nodePath, replaced)
	if isKazooContender(path.Base(nodePath)) {
		fmt.Fprintln(stdout, kazooRevokeNote)
	}
	if f.wait <= 0 {
		fmt.Fprintln(stdout, "the holder releases only if it is revocable (-wait D tells)")
		return nil
	}
	return f.awaitRelease(nodePath, stdout)
}

// kazooRevokeNote is what revoke says of a kazoo contender's node.
const kazooRevokeNote = "this is a kazoo node: a kazoo process ignores revocation requests (kazoo has no revocation); " +
	"a zklock holder that called MakeRevocable honours it"

// replaced reads the node at p before revoke overwrites its data, and
// says whose data that is: its owner and session. The revocation request
// replaces the owner, so that neither inspect nor anyone else can read it
// afterwards; a request made by another meanwhile replaces the same data.
func (f *revokeFlags) replaced(ctx context.Context, c *zklock.Client, p string) (string, error) {
	data, stat, err := c.Get(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return "", noNode("node %s is gone (released meanwhile?)", p)
	}
	if err != nil {
		return "", opError("read", p, err)
	}
	owner := ownerText(data)
	if isRevoked(owner) {
		return fmt.Sprintf("session 0x%x; already revoked: its owner is no longer recorded", stat.EphemeralOwner), nil
	}
	return fmt.Sprintf("owner %s, session 0x%x; its node data now reads %s",
		owner, stat.EphemeralOwner, layout.RevokeMessage), nil
}

// awaitRelease waits up to -wait for the node at p to be deleted. Its
// watch is set on a connection of its own (see common.watchConn).
func (f *revokeFlags) awaitRelease(p string, stdout io.Writer) error {
	timeout := time.After(f.wait)
	conn, err := f.watchConn()
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		exists, _, ch, err := conn.ExistsW(f.full(p))
		if err != nil {
			return opError("watch", p, err)
		}
		if !exists {
			fmt.Fprintf(stdout, "released: %s\n", p)
			return nil
		}
		select {
		case <-ch: // deleted, or written: look again
		case <-timeout:
			return fmt.Errorf("%s still held after %v: its holder is not revocable, or did not release", p, f.wait)
		}
	}
}

// findNode resolves node (a name, a unique suffix of a name, or a full
// path) to the path of an existing child of lock. A semaphore's nodes are
// refused: its leases are not revocable (neither zklock's Semaphore, nor
// Curator's InterProcessSemaphoreV2, nor kazoo's Semaphore listens for
// revocation). A kazoo contender beside a semaphore's nodes (a mix-up of
// layouts) is a lock node.
func findNode(ctx context.Context, c *zklock.Client, f *common, lock, node string) (string, error) {
	l, err := (&inspector{c: c, common: f, path: lock}).list(ctx)
	switch {
	case err != nil:
		return "", err
	case !l.exists:
		return "", noNode("lock path %s does not exist", lock)
	}
	refused := fmt.Errorf("node %s under %s: %s is a semaphore: semaphore leases cannot be revoked", node, lock, lock)
	if l.sem != nil {
		kz := slices.DeleteFunc(slices.Clone(l.children), func(n string) bool { return !isKazooContender(n) })
		if p, err := matchNode(lock, node, kz); err == nil {
			return p, nil
		}
		return "", refused
	}
	p, err := matchNode(lock, node, l.children)
	if err == nil && l.kazooPool() && layout.IsKazooLease(path.Base(p)) {
		return "", refused
	}
	return p, err
}

// matchNode picks node among rels, the paths of a lock's nodes relative to
// the lock path. node is one of them, its full path, its last element, or
// a unique suffix of one (such as a sequence number).
func matchNode(lock, node string, rels []string) (string, error) {
	full := strings.HasPrefix(node, "/")
	name := node
	if full {
		dir := strings.TrimSuffix(lock, "/") + "/"
		if !strings.HasPrefix(node, dir) {
			return "", fmt.Errorf("node %s is not a child of lock path %s", node, lock)
		}
		name = strings.TrimPrefix(node, dir)
	}
	var found []string
	for _, rel := range rels {
		if rel == name || (!full && path.Base(rel) == name) {
			return path.Join(lock, rel), nil
		}
		if !full && strings.HasSuffix(rel, name) {
			found = append(found, rel)
		}
	}
	switch {
	case len(found) == 1:
		return path.Join(lock, found[0]), nil
	case len(found) > 1:
		return "", fmt.Errorf("node %q under %s is ambiguous: %s", node, lock, strings.Join(found, ", "))
	}
	return "", noNode("node %s not found under %s (see 'zklock inspect %s')", node, lock, lock)
}
