package zklock

import (
	"context"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Driver decides who holds a lock, as Curator's LockInternalsDriver does.
// The engine creates a node with CreateNode, lists the lock's children,
// sorts them by SortKey, and asks GetsTheLock whether the node holds the
// lock or which node it must wait for.
//
// The engine lists the children each time it decides (when a node is
// queued, and each time the node it watches changes), and passes the
// driver only the children that sort no later than node: sequence numbers
// only grow, so later children cannot matter to a predicate based on
// sequence order, and GetsTheLock must decide from the children before
// node. Implementations must be safe for concurrent use.
type Driver interface {
	// CreateNode creates the lock node for path, the full ZooKeeper path of
	// the lock's base path joined with the lock name (for example
	// "/ns/locks/job/lock-"), and returns the full path it created. The
	// node must be EPHEMERAL, of the Client's session: a node that outlived
	// its holder would block the lock for ever, and Close leaves a
	// Connect Client's nodes to its session's end. It must delete anything
	// it created before returning an error.
	CreateNode(ctx context.Context, c *Client, path string, data []byte) (string, error)
	// GetsTheLock reports whether node, one of children sorted by SortKey,
	// holds the lock, and if not, the name of the child to watch. It returns
	// an error wrapping zk.ErrNoNode if node is not among children.
	GetsTheLock(children []string, node string, maxLeases int) (PredicateResult, error)
	// SortKey returns the key by which child is ordered among the lock's
	// children.
	SortKey(child, lockName string) string
}

// PredicateResult is a Driver's verdict on one node.
type PredicateResult struct {
	Acquired bool   // the node holds the lock
	Watch    string // the child to wait for, when not Acquired
}

// StandardDriver is Curator's StandardLockInternalsDriver: an
// EPHEMERAL_SEQUENTIAL protected node, ordered by the text after the last
// occurrence of the lock name, holding the lock while fewer than maxLeases
// nodes sort before it, and otherwise watching the node maxLeases places
// ahead of it. Children that do not contain the lock name are ordered by
// their whole name, as Curator orders them; keep lock paths free of other
// nodes.
type StandardDriver struct{}

// CreateNode creates a protected EPHEMERAL_SEQUENTIAL node
// "_c_<uuid>-<lock name><sequence>", creating missing parents as CONTAINER
// nodes.
func (StandardDriver) CreateNode(ctx context.Context, c *Client, path string, data []byte) (string, error) {
	return c.createProtected(ctx, path, data, zk.FlagEphemeral|zk.FlagSequence, "")
}

// GetsTheLock implements [Driver].
func (StandardDriver) GetsTheLock(children []string, node string, maxLeases int) (PredicateResult, error) {
	if maxLeases < 1 {
		return PredicateResult{}, wrapf(ErrInvalidArgument, "maxLeases %d must be positive", maxLeases)
	}
	i := slices.Index(children, node)
	if i < 0 {
		return PredicateResult{}, wrapf(zk.ErrNoNode, "sequential node %s not found", node)
	}
	if i < maxLeases {
		return PredicateResult{Acquired: true}, nil
	}
	return PredicateResult{Watch: children[i-maxLeases]}, nil
}

// SortKey returns the text after the last occurrence of lockName in child,
// or all of child if lockName does not occur.
func (StandardDriver) SortKey(child, lockName string) string {
	if i := strings.LastIndex(child, lockName); i >= 0 {
		return child[i+len(lockName):]
	}
	return child
}
