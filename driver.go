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
//
// The engine's fast paths rest on facts of the predicate that it cannot
// see for itself. A Driver that implements [ShortcutDriver] states which
// of them hold, and gets the fast paths they allow; any other Driver gets
// none, and the engine lists the children at every decision. A type that
// embeds [StandardDriver] inherits none: the built-in drivers have no
// Shortcuts method (their recipes tell the engine what they allow), so a
// type that overrides GetsTheLock or SortKey cannot inherit a fast path
// that its predicate does not allow.
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

// ShortcutDriver is a [Driver], given through [WithDriver], that allows
// the engine's fast paths. The engine asks Shortcuts, with the lock's
// maxLeases, each time it decides, and takes only the paths it allows;
// the answer must depend on maxLeases alone.
type ShortcutDriver interface {
	Driver
	Shortcuts(maxLeases int) Shortcuts
}

// Shortcuts are the fast paths a [ShortcutDriver] allows, each safe only
// for a predicate with the facts it names. Order means SortKey's order.
// A wrong declaration can grant two holders at once, or one that no
// listing would have granted.
type Shortcuts struct {
	// GrantOnDelete: when a listing shows that a waiting node would hold
	// but for the node it watches, that node's deletion grants it, without
	// listing again. It rests on two facts. A node that holds still holds when
	// nodes before it go: if GetsTheLock grants node among children, it
	// grants it among any of their subsets that keep node. And no node can
	// appear before an existing one: a new node sorts after every node
	// that stands (as ZooKeeper's sequence numbers, which only grow), so
	// the nodes before n can only go.
	GrantOnDelete bool
	// LookAhead: a waiter with more than one node in its way also watches
	// the node it would wait for once its watched node is gone, and lists
	// again when that one goes, so that the release of its watched node
	// then grants at once. Used only with GrantOnDelete. It adds no grant,
	// only listings; it pays when one node holds at a time and each waits
	// for the one right before it, so that the node before the watched one
	// going means the watched one most likely holds.
	LookAhead bool
	// Solo: an acquire of a [Mutex] that keeps taking its lock alone is
	// granted from its create's reply, without a listing, when
	// ZooKeeper's numbering proves that its node is the only child of the
	// lock's node. It rests on two facts. A node alone holds:
	// GetsTheLock([]string{node}, node, maxLeases) grants it. And
	// CreateNode makes, in one create, one sequential node
	// (zk.FlagSequence) directly under the parent of the path it is given,
	// whose name ends in the ten digits ZooKeeper appends, and no other
	// node there.
	Solo bool
}

// StandardDriver is Curator's StandardLockInternalsDriver: an
// EPHEMERAL_SEQUENTIAL protected node, ordered by the text after the last
// occurrence of the lock name, holding the lock while fewer than maxLeases
// nodes sort before it, and otherwise watching the node maxLeases places
// ahead of it. Children that do not contain the lock name are ordered by
// their whole name, as Curator orders them; keep lock paths free of other
// nodes.
//
// StandardDriver allows the engine every fast path (see [Shortcuts]),
// look-ahead while one node holds at a time: a Mutex's default, and a
// StandardDriver given through [WithDriver], take them. It has no
// Shortcuts method, so a type that embeds it takes none unless it
// implements [ShortcutDriver] itself.
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

// sequenceAfter returns the digits that end child when lockName comes
// right before them and does not end in a digit: lockName's last
// occurrence then, since any later one would end among the digits. It is
// SortKey's answer for a sequential node's name, without a search.
func sequenceAfter(child, lockName string) (string, bool) {
	if lockName == "" || isDigit(lockName[len(lockName)-1]) {
		return "", false
	}
	j := len(child)
	for j > 0 && isDigit(child[j-1]) {
		j--
	}
	if j == len(child) || !strings.HasSuffix(child[:j], lockName) {
		return "", false
	}
	return child[j:], true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// standardFast is what StandardDriver allows the engine, for the recipes
// that choose it: grant on delete and Solo, and look-ahead when one node
// holds at a time (maxLeases 1), since a node waits for the node
// maxLeases places ahead. It is no method of StandardDriver's, which a
// type that embeds it would inherit (see Driver).
func standardFast(maxLeases int) Shortcuts {
	return Shortcuts{GrantOnDelete: true, LookAhead: maxLeases == 1, Solo: true}
}

// SortKey returns the text after the last occurrence of lockName in child,
// or all of child if lockName does not occur.
func (StandardDriver) SortKey(child, lockName string) string {
	if key, ok := sequenceAfter(child, lockName); ok {
		return key
	}
	if i := strings.LastIndex(child, lockName); i >= 0 {
		return child[i+len(lockName):]
	}
	return child
}
