package zklock

import (
	"context"
	"math"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
)

// Node names of the two sides of a ReadWriteLock; Curator's, and of equal
// length on purpose.
const (
	readLockName  = layout.ReadLockName
	writeLockName = layout.WriteLockName
)

// ReadWriteLock is a re-entrant read/write lock, wire-compatible with
// Curator's InterProcessReadWriteLock: readers share, a writer excludes
// everyone, and both queue first come, first served, so neither side
// starves.
//
// Both sides are [Mutex] values and follow its rules: safe for concurrent
// use, holds carried by the context Acquire returns, re-entrant per
// context (the two sides count separately), holds lost as described for
// Mutex. A context that holds the write lock (through this ReadWriteLock or
// another of the same Client and path) gets the read lock at once
// (downgrade): its read node takes the write node's sequence, so writers
// already queued stay behind it after the write lock is released. The read
// node is created only while the write node exists; if the write hold is
// lost meanwhile, the read Acquire returns an error wrapping ErrLockLost. A context
// that holds only the read lock and asks for the write lock gets
// ErrLockUpgrade at once, where Curator would deadlock.
type ReadWriteLock struct {
	read  *Mutex
	write *Mutex
	names rwNames // its layout's
}

// NewReadWriteLock returns a ReadWriteLock on path, relative to the
// Client's namespace. Of the lock options it takes [WithLockData], the
// data of both read and write nodes, [WithMaxHold], a bound on each
// hold of either side, and [WithLayout] (kazoo's ReadLock and WriteLock
// instead of Curator's); [WithDriver] is refused with ErrInvalidArgument,
// because the read/write predicates are the lock's definition. It does no
// I/O.
func NewReadWriteLock(c *Client, path string, opts ...LockOption) (*ReadWriteLock, error) {
	o, err := parseLockOptions("read/write lock", path, opts, false)
	if err != nil {
		return nil, err
	}
	rw := &ReadWriteLock{names: curatorRW}
	write, read := Driver(rwDriver{}), Driver(readDriver{})
	writeFast, readFast := rwWriteFast, rwReadFast
	if o.layout == LayoutKazoo {
		rw.names, write, read = kazooRW, kazooWrite, kazooRead
		writeFast, readFast = kazooWriteFast, kazooReadFast
	}
	o.driver, o.fast = write, writeFast
	if rw.write, err = newMutex(c, path, rw.names.write, rw.names.writeVariant, 1, o); err != nil {
		return nil, err
	}
	o.driver, o.fast = read, readFast
	if rw.read, err = newMutex(c, path, rw.names.read, "", math.MaxInt32, o); err != nil {
		return nil, err
	}
	rw.write.kind, rw.read.kind = RecipeWrite, RecipeRead
	rw.write.rules = sideRules{admit: rw.admitWriter, owns: isNode(rw.names.write)}
	rw.read.rules = sideRules{admit: rw.admitReader, owns: isNode(rw.names.read)}
	return rw, nil
}

// rwNames are the node names of a read/write lock's two sides in one
// layout.
type rwNames struct {
	write, read  string
	writeVariant string // the write side's lockID variant
}

var (
	curatorRW = rwNames{writeLockName, readLockName, ""}
	// kazoo's WriteLock names its nodes as its Lock does, and counts the
	// readers a Lock ignores: a Mutex's hold is no write hold.
	kazooRW = rwNames{layout.KazooLockName, layout.KazooReadName, "write"}
)

// ReadLock returns the shared side of the lock, or nil for a
// ReadWriteLock not made by NewReadWriteLock.
func (rw *ReadWriteLock) ReadLock() *Mutex {
	if rw == nil {
		return nil
	}
	return rw.read
}

// WriteLock returns the exclusive side of the lock, or nil for a
// ReadWriteLock not made by NewReadWriteLock.
func (rw *ReadWriteLock) WriteLock() *Mutex {
	if rw == nil {
		return nil
	}
	return rw.write
}

// admitWriter refuses a writer that holds only the read lock (through any
// ReadWriteLock of this Client and path): it would wait for itself.
func (rw *ReadWriteLock) admitWriter(ctx context.Context) (*placement, error) {
	if rw.read.IsOwnedBy(ctx) {
		return nil, ErrLockUpgrade
	}
	return nil, nil
}

// admitReader lets a context that holds the write lock take the read lock
// at once (a downgrade): its read node takes the write node's sequence, so
// writers queued behind stay behind. The node is created only while the
// write node still exists.
func (rw *ReadWriteLock) admitReader(ctx context.Context) (*placement, error) {
	wh := holdIn(ctx, rw.write) // through any ReadWriteLock of this Client and path
	if !wh.isLive() {
		return nil, nil
	}
	// The write side's sort key is its node's sequence, in either layout.
	return &placement{name: rw.names.read + rw.write.li.driver.SortKey(wh.node.name, rw.names.write), guard: wh.node.path}, nil
}

// isNode returns a test for the nodes of one side, by its lock name.
func isNode(lockName string) func(string) bool {
	return func(child string) bool { return strings.Contains(child, lockName) }
}

// rwSortKey is the sequence of a read or write node: the text after the
// last "__READ__", and then after the last "__WRIT__".
func rwSortKey(child string) string {
	d := StandardDriver{}
	return d.SortKey(d.SortKey(child, readLockName), writeLockName)
}

// rwDriver is the write side: Curator's sorting driver, standard predicate
// over readers and writers alike, so a writer waits for everything ahead.
type rwDriver struct{ StandardDriver }

// SortKey orders read and write nodes together by sequence.
func (rwDriver) SortKey(child, _ string) string { return rwSortKey(child) }

// readDriver is the read side: a reader holds the lock while no write node
// sorts before it, and otherwise waits for the first write node.
type readDriver struct{ StandardDriver }

// SortKey orders read and write nodes together by sequence.
func (readDriver) SortKey(child, _ string) string { return rwSortKey(child) }

// The fast paths of Curator's two sides (see Shortcuts). A writer: Solo
// only, since a downgrade creates a read node with the sequence of the
// write node it replaces, before the writers that wait behind it (a node
// can appear before an existing one), so a writer lists at every
// decision. A reader: grant on delete and Solo, since a reader that holds
// still holds when nodes before it go, and only read nodes appear before
// existing ones (a downgrade's), which block no reader; no look-ahead, as
// a reader waits for the first writer, not for the node before it.
var (
	rwWriteFast = Shortcuts{Solo: true}
	rwReadFast  = Shortcuts{GrantOnDelete: true, Solo: true}
)

// GetsTheLock implements [Driver] for readers, with the predicate that
// the command-line tool applies too (internal/layout).
func (readDriver) GetsTheLock(children []string, node string, _ int) (PredicateResult, error) {
	acquired, watch, found := layout.ReaderGetsTheLock(children, node)
	if !found {
		return PredicateResult{}, wrapf(zk.ErrNoNode, "sequential node %s not found", node)
	}
	return PredicateResult{Acquired: acquired, Watch: watch}, nil
}
