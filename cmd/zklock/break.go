package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

const breakUsage = `Usage: zklock break [flags] PATH NODE
       zklock break [flags] -holder PATH

Deletes NODE, a node of the lock at PATH, to break a stuck lock: its
holder's hold ends as if its session had expired (a zklock holder's hold
context is cancelled with ErrLockLost; a Curator holder is not told until
it looks), and the next in the queue gets the lock. Unlike 'zklock revoke',
it does not ask the holder: use it when the holder cannot release (a hung
process whose session stays alive).

NODE is named as for revoke: a node name as 'zklock inspect' shows it, a
unique suffix of one (such as its sequence number), or its full path; a
semaphore's nodes as leases/NAME or locks/NAME; a kazoo semaphore's
leases by their names (its acquirers are the lock PATH-__lock__'s nodes).
Only lock nodes (ephemeral nodes) are deleted, and kazoo's lock nodes
made persistent (kazoo's acquire(ephemeral=False): no session's end
deletes them).

With -holder, NODE is not given: break deletes the node of the lock's
holder, found as 'zklock inspect' finds it: a mutex's holder (a
Selector's leader), a latch's leader, a read/write lock's writer or its
one reader, and the same in kazoo's layout. Where several hold (a
semaphore's leases, a read/write lock's readers, the holders of a path
with two layouts' nodes) -holder cannot choose: break refuses (exit 2)
and wants NODE. A lock without a holder exits 4.

break shows the node (session, owner, age, token) and asks for
confirmation (y/N) when stdin is a terminal. With -force it does not ask;
without -force it refuses when stdin is not a terminal (exit 2). An answer
other than y or yes deletes nothing (exit 1).
`

// breakFlags are break's command line.
type breakFlags struct {
	*common
	force  bool
	holder bool // delete the holder's node: no NODE
}

// argBreakNode is break's NODE, which -holder replaces.
const argBreakNode = "NODE (the node to delete: its name as 'zklock inspect' shows it, or its sequence number; or -holder)"

func newBreakFlags() *breakFlags {
	f := &breakFlags{common: newCommon("break", breakUsage)}
	f.fs.BoolVar(&f.force, "force", false, "delete without asking for confirmation")
	f.fs.BoolVar(&f.holder, "holder", false, "delete the node of the lock's holder, found as inspect finds it, instead of NODE")
	return f
}

// runBreak is the break command.
func runBreak(args []string, stdout, stderr io.Writer) int {
	f := newBreakFlags()
	return f.exitFor(f.breakNode(args, os.Stdin, stdout, stderr), stdout, stderr)
}

func (f *breakFlags) breakNode(args []string, stdin *os.File, stdout, stderr io.Writer) error {
	lock, node, err := f.parseBreak(args)
	if err != nil {
		return err
	}
	if !f.force && !isTerminal(stdin) {
		return fmt.Errorf("%w: stdin is not a terminal, so break cannot ask for confirmation: pass -force", errUsage)
	}
	client, err := f.connect()
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	nodePath, err := f.findNode(ctx, client, lock, node)
	if err != nil {
		return err
	}
	stat, desc, err := f.describe(ctx, client, nodePath)
	if err != nil {
		return err
	}
	if !f.force {
		fmt.Fprintf(stderr, "delete %s? [y/N] ", desc)
		if !confirmed(stdin) {
			return fmt.Errorf("not confirmed: %s not deleted", nodePath)
		}
	}
	// A bound of its own: the confirmation may have taken long.
	dctx, dcancel := context.WithTimeout(context.Background(), opTimeout)
	defer dcancel()
	if err := client.Delete(dctx, nodePath, stat.Version); err != nil {
		return deleteError(nodePath, err)
	}
	fmt.Fprintf(stdout, "deleted %s\n", desc)
	return nil
}

// parseNode parses PATH NODE, as revoke and break take them: NODE is
// named and described by what (as argNode), and may be missing (node is
// then "") if optional.
func (c *common) parseNode(args []string, what string, optional bool) (lock, node string, err error) {
	required := 2
	if optional {
		required = 1
	}
	pos, rest, err := c.parseSome(args, required, argPath, what)
	if err != nil {
		return "", "", err
	}
	if len(rest) > 0 {
		return "", "", fmt.Errorf("%w: unexpected argument %q", errUsage, rest[0])
	}
	lock = pos[0]
	if err := checkPath(lock); err != nil {
		return "", "", err
	}
	if len(pos) < 2 {
		return lock, "", nil
	}
	node = pos[1]
	if node == "" || (strings.HasPrefix(node, "/") && checkPath(node) != nil) {
		return "", "", fmt.Errorf("%w: node %q: want a node name or a full path", errUsage, node)
	}
	return lock, node, nil
}

// parseBreak parses PATH NODE, or PATH alone with -holder.
func (f *breakFlags) parseBreak(args []string) (lock, node string, err error) {
	lock, node, err = f.parseNode(args, argBreakNode, true)
	switch {
	case err != nil:
		return "", "", err
	case f.holder && node != "":
		return "", "", fmt.Errorf("%w: -holder finds the node to delete: give PATH alone, not NODE %q", errUsage, node)
	case !f.holder && node == "":
		return "", "", fmt.Errorf("%w: missing %s", errUsage, argBreakNode)
	}
	return lock, node, nil
}

// findNode returns the path of the node to delete: node, resolved by
// findLockNode, or with -holder the holder's node.
func (f *breakFlags) findNode(ctx context.Context, c *zklock.Client, lock, node string) (string, error) {
	if !f.holder {
		return findLockNode(ctx, c, f.common, lock, node)
	}
	in := &inspector{c: c, common: f.common, path: lock}
	v, _, err := in.read(ctx)
	if err != nil {
		return "", err
	}
	var holders, paths []string
	for _, n := range v.Nodes {
		if n.Role == roleHolder {
			holders, paths = append(holders, relName(lock, n)), append(paths, n.Path)
		}
	}
	switch {
	case !v.Exists:
		return "", noNode("lock path %s does not exist", lock)
	case len(holders) == 0:
		return "", noNode("%s has no holder: nothing to break", lock)
	case v.Recipe == recipeSemaphore || v.Recipe == recipeKazooSemaphore:
		as := map[string]string{recipeSemaphore: "as leases/NAME", recipeKazooSemaphore: "by its name"}[v.Recipe]
		return "", fmt.Errorf("%w: %s is a %s, whose %s all hold (%s): -holder cannot choose; name the lease to break, %s",
			errUsage, lock, v.Recipe, plural(len(holders), "lease"), some(holders), as)
	case len(holders) > 1:
		return "", fmt.Errorf("%w: %s has %s (%s): -holder cannot choose; name the node to break",
			errUsage, lock, plural(len(holders), "holder"), some(holders))
	}
	return paths[0], nil
}

// some lists the first few of names, and says how many more there are.
func some(names []string) string {
	const few = 3
	if len(names) <= few {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:few], ", "), len(names)-few)
}

// findLockNode resolves node to the path of a node of the lock: a child
// of the lock path, or for a semaphore a child of its leases or locks node
// (or a kazoo contender beside them, a mix-up of layouts).
func findLockNode(ctx context.Context, c *zklock.Client, f *common, lock, node string) (string, error) {
	l, err := (&inspector{c: c, common: f, path: lock}).list(ctx)
	switch {
	case err != nil:
		return "", err
	case !l.exists:
		return "", noNode("lock path %s does not exist", lock)
	case l.sem == nil:
		return matchNode(lock, node, l.children)
	}
	rels := slices.DeleteFunc(slices.Clone(l.children), func(n string) bool { return !isKazooContender(n) })
	for _, name := range l.sem.leases {
		rels = append(rels, leasesNode+"/"+name)
	}
	for _, name := range l.sem.locks {
		rels = append(rels, locksNode+"/"+name)
	}
	return matchNode(lock, node, rels)
}

// describe reads the node at p and describes it for people: its path,
// session, owner, age and token. A node that is not ephemeral is refused,
// unless it is a kazoo contender's (kazoo's acquire(ephemeral=False)
// makes a lock node that no session's end deletes).
func (f *breakFlags) describe(ctx context.Context, c *zklock.Client, p string) (*zk.Stat, string, error) {
	data, stat, err := c.Get(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, "", noNode("node %s is gone (released meanwhile?)", p)
	}
	if err != nil {
		return nil, "", opError("read", p, err)
	}
	session := fmt.Sprintf("session 0x%x", stat.EphemeralOwner)
	switch {
	case stat.EphemeralOwner == 0 && isKazooContender(path.Base(p)):
		session = "not ephemeral"
	case stat.EphemeralOwner == 0:
		return nil, "", fmt.Errorf("%s is not a lock node (not ephemeral): break deletes lock nodes only", p)
	}
	held := time.Since(time.UnixMilli(stat.Ctime))
	desc := fmt.Sprintf("%s (%s, owner %s, age %s, token %d)",
		p, session, shownOwner(ownerText(data)), age(held), stat.Czxid)
	return stat, desc, nil
}

// confirmed reads a line from stdin and reports whether it says y or yes.
func confirmed(stdin io.Reader) bool {
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

// deleteError reports that deleting the node at p failed.
func deleteError(p string, err error) error {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return noNode("node %s is gone (released meanwhile?)", p)
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("node %s changed meanwhile (a revocation request?): not deleted; run break again", p)
	}
	return opError("delete", p, err)
}
