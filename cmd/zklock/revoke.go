package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

// opTimeout bounds revoke's work, and inspect's single read.
const opTimeout = 30 * time.Second

const revokeUsage = `Usage: zklock revoke [flags] PATH NODE

Asks the holder of NODE, a node of the lock at PATH, to release it, as
Apache Curator's Revoker does: it writes "__REVOKE__" into the node.
Revocation is cooperative: holders that made their lock revocable (zklock's
Mutex.MakeRevocable, Curator's makeRevocable) are told, and decide.
NODE is a node name as 'zklock inspect' shows it, a unique suffix of one
(such as its sequence number), or the node's full path. Semaphore leases
cannot be revoked: revoke refuses them (exit 1).
`

func newRevokeFlags() *common { return newCommon("revoke", revokeUsage) }

// runRevoke is the revoke command.
func runRevoke(args []string, stdout, stderr io.Writer) int {
	f := newRevokeFlags()
	return f.exitFor(revoke(f, args, stdout), stdout, stderr)
}

func revoke(f *common, args []string, stdout io.Writer) error {
	pos, rest, err := f.parse(args, 2)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, rest[0])
	}
	lock, node := pos[0], pos[1]
	if err := checkPath(lock); err != nil {
		return err
	}
	if node == "" || (strings.HasPrefix(node, "/") && checkPath(node) != nil) {
		return fmt.Errorf("%w: node %q: want a node name or a full path", errUsage, node)
	}
	client, err := f.connect()
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	nodePath, err := findNode(client, f, lock, node)
	if err != nil {
		return err
	}
	if err := zklock.Revoke(ctx, client, nodePath); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revocation requested: %s\n", nodePath)
	return nil
}

// findNode resolves node (a name, a unique suffix of a name, or a full
// path) to the path of an existing child of lock. A semaphore's nodes are
// refused: its leases are not revocable (neither zklock's Semaphore nor
// Curator's InterProcessSemaphoreV2 listens for revocation).
func findNode(c *zklock.Client, f *common, lock, node string) (string, error) {
	conn := c.Conn()
	children, _, err := conn.Children(f.full(lock))
	if errors.Is(err, zk.ErrNoNode) {
		return "", fmt.Errorf("lock path %s does not exist", lock)
	}
	if err != nil {
		return "", opError("list", lock, err)
	}
	if detect(children) == recipeSemaphore {
		return "", fmt.Errorf("node %s under %s: %s is a semaphore: semaphore leases cannot be revoked", node, lock, lock)
	}
	name := node
	if strings.HasPrefix(node, "/") {
		if path.Dir(node) != lock {
			return "", fmt.Errorf("node %s is not a child of lock path %s", node, lock)
		}
		name = path.Base(node)
	}
	var found []string
	for _, ch := range children {
		if ch == name {
			return path.Join(lock, ch), nil
		}
		if strings.HasSuffix(ch, name) {
			found = append(found, ch)
		}
	}
	switch {
	case len(found) == 1 && !strings.HasPrefix(node, "/"):
		return path.Join(lock, found[0]), nil
	case len(found) > 1 && !strings.HasPrefix(node, "/"):
		return "", fmt.Errorf("node %q under %s is ambiguous: %s", node, lock, strings.Join(found, ", "))
	}
	return "", fmt.Errorf("node %s not found under %s (see 'zklock inspect %s')", node, lock, lock)
}
