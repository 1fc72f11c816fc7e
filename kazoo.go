package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
)

// Layout is the way a recipe lays its nodes out in ZooKeeper, which
// decides the processes of which other libraries share its locks: a lock
// excludes the processes that use the same layout on the same path, in
// any language, and no others. The package doc lists the nodes of each
// ("Interoperability with Curator", "Interoperability with kazoo").
type Layout int

const (
	// LayoutCurator is Apache Curator's layout (Java), the default.
	LayoutCurator Layout = iota
	// LayoutKazoo is kazoo's layout (Python, kazoo 2.x): a Mutex is a
	// kazoo Lock, a ReadWriteLock kazoo's ReadLock and WriteLock, an
	// Election or a Selector a kazoo Election, a Semaphore kazoo's
	// Semaphore (with its max_leases rule: see [MaxLeasesError]), and a
	// SemaphoreMutex a kazoo Semaphore of one lease. kazoo has no
	// revocation: MakeRevocable and Revoke work between zklock processes
	// only, and a kazoo holder ignores them. NewMultiLockPaths takes no
	// options: build a MultiLock of kazoo Mutexes with NewMultiLock.
	// Both layouts order contenders by their sequence as text, so that
	// both lose their order once a lock path's parent has had 2^31
	// children created (ZooKeeper's counter then turns negative, and a
	// "-" sorts first): delete and remake such a path before then.
	LayoutKazoo
)

// String returns the layout's name: "curator" or "kazoo".
func (l Layout) String() string {
	switch l {
	case LayoutCurator:
		return "curator"
	case LayoutKazoo:
		return "kazoo"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// WithLayout sets the layout of the lock's nodes (default LayoutCurator).
// It cannot be combined with [WithDriver]: a Driver makes its own nodes.
func WithLayout(l Layout) LockOption {
	return func(o *lockOptions) {
		if (l < LayoutCurator || l > LayoutKazoo) && o.err == nil {
			o.err = errorf(ErrInvalidArgument, "unknown layout %v", l)
		}
		o.layout = l
	}
}

// ErrLayoutMismatch is returned by an acquire whose lock's path holds the
// nodes of another layout beside its own (a Curator process and a kazoo
// process configured for one path): the two libraries would not see each
// other's nodes as contenders, so zklock refuses to take part rather than
// guess an order. Its error names both layouts, the path and a node of
// the other layout. The acquire leaves no node behind. Leader,
// Participants and Observe of an Election or a Selector refuse a mixed
// path with it too. A Semaphore, whose layouts keep their leases in
// different nodes, checks for the other layout's leases on its first
// acquire (see [Semaphore]).
var ErrLayoutMismatch = errors.New("zklock: lock nodes of two layouts on one path")

// kazooText refuses, in kazoo's layout, node data that is not UTF-8,
// which kazoo's reader (contenders(), lease_holders()) decodes as text.
func (o lockOptions) kazooText(kind, p, what, reader string, data []byte) error {
	if o.layout != LayoutKazoo || utf8.Valid(data) {
		return nil
	}
	return errorf(ErrInvalidArgument, "%s %s: kazoo's layout: %s data of %d bytes is not UTF-8, which kazoo's %s reads it as",
		kind, quotePath(p), what, len(data), reader)
}

// layoutDriver is implemented by the built-in drivers: layout is the
// layout of their nodes, checkLayout refuses a listing of the lock at
// base that shows another layout's nodes, contenders keeps, in place, the
// children that the layout counts as contenders, and probe names a node
// that sorts after every existing node of a lock of theirs named
// lockName, to stand for a node created now.
type layoutDriver interface {
	layout() Layout
	checkLayout(base string, children []string) error
	contenders(children []string) []string
	probe(lockName string) string
}

// layoutOf returns the layout of d's nodes: Curator's for a Driver that
// does not say (its nodes are its own; a node it places beside them
// takes Curator's protection prefix).
func layoutOf(d Driver) Layout {
	if ld, ok := d.(layoutDriver); ok {
		return ld.layout()
	}
	return LayoutCurator
}

// checkLayout refuses children of the lock at base if d's layout says
// they mix layouts; a custom Driver's listings are its own affair.
func checkLayout(d Driver, base string, children []string) error {
	if ld, ok := d.(layoutDriver); ok {
		return ld.checkLayout(base, children)
	}
	return nil
}

func (StandardDriver) layout() Layout { return LayoutCurator }
func (kazooDriver) layout() Layout    { return LayoutKazoo }

// checkLayout implements layoutDriver for Curator's layout: a kazoo
// contender under the lock's path is another layout's.
func (StandardDriver) checkLayout(base string, children []string) error {
	for _, ch := range children {
		if _, _, ok := layout.ParseKazoo(ch); ok {
			return layoutMismatch(base, LayoutCurator, LayoutKazoo, ch)
		}
	}
	return nil
}

func layoutMismatch(base string, ours, theirs Layout, node string) error {
	return fmt.Errorf("%w: %s holds %s's node %s beside this %s lock's nodes; give each lock one layout",
		ErrLayoutMismatch, base, theirs, node, ours)
}

// kazooDriver is kazoo's layout: protected EPHEMERAL_SEQUENTIAL nodes
// "<uuid hex><kind><seq10>" of one kind, excluded by the contenders of the
// blocking kinds before them (see layout.KazooGetsTheLock).
type kazooDriver struct {
	kind     string // layout.KazooLockName or layout.KazooReadName
	blockers []string
}

var (
	kazooLock  = kazooDriver{layout.KazooLockName, layout.KazooBlockers(false)}
	kazooWrite = kazooDriver{layout.KazooLockName, layout.KazooBlockers(true)}
	kazooRead  = kazooDriver{layout.KazooReadName, layout.KazooBlockers(false)}
)

// The fast paths of kazoo's drivers (see Shortcuts). A kind with one
// blocking kind (a Lock's contenders, or a ReadLock's writers) has grant
// on delete, and a Lock, where each contender waits for the one before
// it, look-ahead too. A WriteLock, blocked by two kinds of which a
// downgrade's read node can appear before it, has none. No Solo: the
// solo path has been proved and tested on Curator's layout only.
var (
	kazooLockFast  = Shortcuts{GrantOnDelete: true, LookAhead: true}
	kazooWriteFast = Shortcuts{}
	kazooReadFast  = Shortcuts{GrantOnDelete: true}
)

// CreateNode creates "<uuid hex><kind><seq10>" beside path's last segment
// (the kind), making missing parents as persistent nodes, as kazoo does.
func (kazooDriver) CreateNode(ctx context.Context, c *Client, path string, data []byte) (string, error) {
	return c.createKazoo(ctx, path, data)
}

// GetsTheLock implements [Driver].
func (d kazooDriver) GetsTheLock(children []string, node string, _ int) (PredicateResult, error) {
	acquired, watch, found := layout.KazooGetsTheLock(children, node, d.blockers...)
	if !found {
		return PredicateResult{}, wrapf(zk.ErrNoNode, "sequential node %s not found", node)
	}
	return PredicateResult{Acquired: acquired, Watch: watch}, nil
}

// SortKey orders kazoo's contenders by their sequence, as text, as kazoo
// does; other children by their whole name.
func (kazooDriver) SortKey(child, _ string) string {
	if _, seq, ok := layout.ParseKazoo(child); ok {
		return seq
	}
	return child
}

// checkLayout implements layoutDriver: a node with Curator's protection
// prefix (Curator's, zklock's Curator layout's, go-zookeeper's zk.Lock's)
// is another layout's.
func (kazooDriver) checkLayout(base string, children []string) error {
	for _, ch := range children {
		if _, _, ok := parseProtected(ch); ok {
			return layoutMismatch(base, LayoutKazoo, LayoutCurator, ch)
		}
	}
	return nil
}

// kazooProtected reports whether name is a kazoo contender's node with its
// creator's prefix, "<32 hex digits><kind><seq>", or a kazoo Semaphore's
// lease, "<32 hex digits>": such a name, like a Curator-protected one, is
// never used twice.
func kazooProtected(name string) bool {
	if _, _, contender := layout.ParseKazoo(name); contender && len(name) >= 32 {
		return layout.IsKazooLease(name[:32]) // the contender's uuid
	}
	return layout.IsKazooLease(name)
}

// contenders returns the children that d's layout counts as contenders,
// in place: every child for a Driver that does not say (see
// layoutDriver).
func contenders(d Driver, children []string) []string {
	if ld, ok := d.(layoutDriver); ok {
		return ld.contenders(children)
	}
	return children
}

// probeName returns a name that sorts after every existing node of a lock
// of d's named lockName, to stand for a node created now: for a Driver
// that does not say (see layoutDriver), Curator's.
func probeName(d Driver, lockName string) string {
	if ld, ok := d.(layoutDriver); ok {
		return ld.probe(lockName)
	}
	return (StandardDriver{}).probe(lockName)
}

// contenders implements layoutDriver for Curator's layout: every child.
func (StandardDriver) contenders(children []string) []string { return children }

// probe implements layoutDriver for Curator's layout: the lock name and
// U+FFFF, the largest UTF-16 code unit.
func (StandardDriver) probe(lockName string) string {
	return lockName + strings.Repeat("\uffff", 16)
}

// contenders implements layoutDriver: the contenders of d's kind and of
// the kinds that block it, as kazoo's contenders() lists them.
func (d kazooDriver) contenders(children []string) []string {
	return slices.DeleteFunc(children, func(ch string) bool {
		kind, _, ok := layout.ParseKazoo(ch)
		return !ok || kind != d.kind && !slices.Contains(d.blockers, kind)
	})
}

// probe implements layoutDriver: the largest sequence of d's kind.
func (d kazooDriver) probe(string) string { return d.kind + "9999999999" }
