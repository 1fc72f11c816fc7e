package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

const breakUsage = `Usage: zklock break [flags] PATH NODE

Deletes NODE, a node of the lock at PATH, to break a stuck lock: its
holder's hold ends as if its session had expired (a zklock holder's hold
context is cancelled with ErrLockLost; a Curator holder is not told until
it looks), and the next in the queue gets the lock. Unlike 'zklock revoke',
it does not ask the holder: use it when the holder cannot release (a hung
process whose session stays alive).

NODE is named as for revoke: a node name as 'zklock inspect' shows it, a
unique suffix of one (such as its sequence number), or its full path; a
semaphore's nodes as leases/NAME or locks/NAME. Only lock nodes (ephemeral
nodes) are deleted.

break shows the node (session, owner, age, token) and asks for
confirmation (y/N) when stdin is a terminal. With -force it does not ask;
without -force it refuses when stdin is not a terminal (exit 2). An answer
other than y or yes deletes nothing (exit 1).
`

// breakFlags are break's command line.
type breakFlags struct {
	*common
	force bool
}

func newBreakFlags() *breakFlags {
	f := &breakFlags{common: newCommon("break", breakUsage)}
	f.fs.BoolVar(&f.force, "force", false, "delete without asking for confirmation")
	return f
}

// runBreak is the break command.
func runBreak(args []string, stdout, stderr io.Writer) int {
	f := newBreakFlags()
	return f.exitFor(f.breakNode(args, os.Stdin, stdout, stderr), stdout, stderr)
}

func (f *breakFlags) breakNode(args []string, stdin *os.File, stdout, stderr io.Writer) error {
	lock, node, err := f.parseNode(args)
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
	nodePath, err := findLockNode(client, f.common, lock, node)
	if err != nil {
		return err
	}
	stat, desc, err := f.describe(client, nodePath)
	if err != nil {
		return err
	}
	if !f.force {
		fmt.Fprintf(stderr, "delete %s? [y/N] ", desc)
		if !confirmed(stdin) {
			return fmt.Errorf("not confirmed: %s not deleted", nodePath)
		}
	}
	if err := client.Conn().Delete(f.full(nodePath), stat.Version); err != nil {
		return deleteError(nodePath, err)
	}
	fmt.Fprintf(stdout, "deleted %s\n", desc)
	return nil
}

// parseNode parses PATH NODE, as revoke and break take them.
func (c *common) parseNode(args []string) (lock, node string, err error) {
	pos, rest, err := c.parse(args, argPath, argNode)
	if err != nil {
		return "", "", err
	}
	if len(rest) > 0 {
		return "", "", fmt.Errorf("%w: unexpected argument %q", errUsage, rest[0])
	}
	lock, node = pos[0], pos[1]
	if err := checkPath(lock); err != nil {
		return "", "", err
	}
	if node == "" || (strings.HasPrefix(node, "/") && checkPath(node) != nil) {
		return "", "", fmt.Errorf("%w: node %q: want a node name or a full path", errUsage, node)
	}
	return lock, node, nil
}

// findLockNode resolves node to the path of a node of the lock: a child
// of the lock path, or for a semaphore a child of its leases or locks node.
func findLockNode(c *zklock.Client, f *common, lock, node string) (string, error) {
	conn := c.Conn()
	children, _, err := conn.Children(f.full(lock))
	if errors.Is(err, zk.ErrNoNode) {
		return "", noNode("lock path %s does not exist", lock)
	}
	if err != nil {
		return "", opError("list", lock, err)
	}
	if detect(children) != recipeSemaphore {
		return matchNode(lock, node, children)
	}
	var rels []string
	for _, sub := range []string{"leases", "locks"} {
		dir := path.Join(lock, sub)
		names, _, err := conn.Children(f.full(dir))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return "", opError("list", dir, err)
		}
		for _, name := range names {
			rels = append(rels, sub+"/"+name)
		}
	}
	return matchNode(lock, node, rels)
}

// describe reads the node at p and describes it for people: its path,
// session, owner, age and token. A node that is not ephemeral is refused.
func (f *breakFlags) describe(c *zklock.Client, p string) (*zk.Stat, string, error) {
	data, stat, err := c.Conn().Get(f.full(p))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, "", noNode("node %s is gone (released meanwhile?)", p)
	}
	if err != nil {
		return nil, "", opError("read", p, err)
	}
	if stat.EphemeralOwner == 0 {
		return nil, "", fmt.Errorf("%s is not a lock node (not ephemeral): break deletes lock nodes only", p)
	}
	held := time.Since(time.UnixMilli(stat.Ctime))
	desc := fmt.Sprintf("%s (session 0x%x, owner %s, age %s, token %d)",
		p, stat.EphemeralOwner, shownOwner(ownerText(data)), age(held), stat.Czxid)
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
