package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/layout"
)

// Recipes, as inspect names them.
const (
	recipeMutex     = "mutex"
	recipeLatch     = "latch"
	recipeSelector  = "selector" // a mutex layout read as a Selector's, on request
	recipeRWLock    = "rwlock"
	recipeSemaphore = "semaphore"
	recipeNone      = "none"
	recipeUnknown   = "unknown"

	// kazoo's (Python) recipes, in kazoo's layout.
	recipeKazooLock      = "kazoo-lock"      // a Lock's, a WriteLock's alone, an Election's
	recipeKazooRWLock    = "kazoo-rwlock"    // ReadLock's and WriteLock's
	recipeKazooSemaphore = "kazoo-semaphore" // a Semaphore's pool and its lock
	recipeKazooElection  = "kazoo-election"  // a kazoo-lock read as an Election's, on request

	// A path that holds the nodes of two recipes, of two layouts as a
	// rule (see readings).
	recipeMixed = "mixed"
)

// Layouts of a node.
const (
	layoutCurator = "curator" // Apache Curator's, zklock's default
	layoutKazoo   = "kazoo"
)

// Roles of a participant.
const (
	roleHolder  = "holder"
	roleWaiter  = "waiter"
	roleUnknown = "unknown"
)

// queueView is what inspect shows of a lock; its JSON form is documented
// in the package documentation and must stay stable.
type queueView struct {
	Path    string   `json:"path"`
	Recipe  string   `json:"recipe"`
	Exists  bool     `json:"exists"`
	Holders int      `json:"holders"`
	Waiters int      `json:"waiters"`
	Others  []string `json:"others,omitempty"` // children that are not lock nodes
	Leader  *string  `json:"leader,omitempty"` // a latch's leader's id, when it has one
	// Readings are the recipes of a mixed path, one per reading, in the
	// order of Nodes.
	Readings []string `json:"readings,omitempty"`
	// MaxLeases is a kazoo Semaphore's max_leases, its pool's data, if
	// that is a number.
	MaxLeases *int       `json:"max_leases,omitempty"`
	Nodes     []nodeView `json:"nodes"`
}

// nodeView is one participant of a lock.
type nodeView struct {
	Position int       `json:"position"`
	Queue    string    `json:"queue"`
	Layout   string    `json:"layout,omitempty"` // curator | kazoo; omitted for a node of no known layout
	Kind     string    `json:"kind"`
	Role     string    `json:"role"`
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Session  string    `json:"session"`
	Owner    string    `json:"owner"`
	Revoked  bool      `json:"revoked,omitempty"` // the node's data is a revocation request
	Created  time.Time `json:"created"`
	AgeMS    int64     `json:"age_ms"`
	Token    int64     `json:"token"`

	session int64 // ephemeralOwner
}

// inspector reads the queue of one lock.
type inspector struct {
	c        *zklock.Client
	common   *common
	path     string // as given, relative to the namespace
	selector bool   // read reads a mutex layout as a Selector's: see asSelector

	// watch, with -watch, is the connection that read sets its watches on
	// (see common.watchConn); nil otherwise. Every read is the Client's.
	watch *zk.Conn
}

// A Semaphore's two nodes below its path, in Curator's
// InterProcessSemaphoreV2 layout: its leases node, whose children are
// lease nodes (..lease-<seq>), and its internal lock's path, whose
// children are a mutex's lock nodes (..lock-<seq>), one per acquirer.
const (
	leasesNode = "leases"
	locksNode  = "locks"
	leaseMark  = "lease-"
	lockMark   = "lock-"
)

// listing is what a read of a lock path finds: whether it exists, its
// children, and, for a Semaphore's path, the children of its leases and
// locks nodes.
type listing struct {
	exists   bool
	children []string
	sem      *semNodes // nil unless the path is a Semaphore's
	dirs     [2]dir    // the leases and locks nodes, as listed, if children holds a leases node
	// kazoo is the listing of the kazoo Lock PATH-__lock__, beside the
	// path, if children holds a kazoo Semaphore's lease's name (see
	// kazooPool); pool says the path is a kazoo Semaphore's pool.
	kazoo *dir
	pool  bool
}

// semNodes are the children of a Semaphore's leases and locks nodes.
type semNodes struct {
	leases, locks []string
}

// dir is a node's children, as listed, and whether it exists.
type dir struct {
	exists   bool
	children []string
}

// semaphoreLayout reports whether leases and locks, a path's children of
// those names, are a Semaphore's, from what they hold: the leases node
// holds a lease node; or it is empty and a locks node holds nothing but a
// mutex's lock nodes (an idle semaphore, or one whose acquirers queue
// before any lease is made). A node named leases or locks that holds
// anything else, or a locks node without a leases node beside it, is a
// path segment like any other: a mutex named leases, the parent of
// ordinary lock paths.
func semaphoreLayout(leases, locks dir) bool {
	switch {
	case !leases.exists:
		return false
	case slices.ContainsFunc(leases.children, func(n string) bool { return isLockNode(n, leaseMark) }):
		return true
	case len(leases.children) > 0 || !locks.exists:
		return false
	}
	return !slices.ContainsFunc(locks.children, func(n string) bool { return !isLockNode(n, lockMark) })
}

// list lists the lock path's children on the Client, and if it has a
// leases node the children of its leases and locks nodes, to tell whether
// it is a Semaphore's (see semaphoreLayout). If the leases or locks node
// cannot be listed, list returns the error with the path's listing, read
// as no Semaphore's.
func (in *inspector) list(ctx context.Context) (*listing, error) {
	l, _, err := listWith(in.path, func(p string) ([]string, bool, <-chan zk.Event, error) {
		children, exists, err := in.children(ctx, p)
		return children, exists, nil, err
	}, func(p string) bool {
		data, _, err := in.c.Get(ctx, p)
		_, ok := layout.KazooMaxLeases(data)
		return err == nil && ok
	})
	return l, err
}

// lister lists the children of the node at p (relative to the
// namespace), says whether it exists, and may set a watch that fires at
// their next change (or at p's creation).
type lister func(p string) (children []string, exists bool, watch <-chan zk.Event, err error)

// listWith is list with ls, and also returns the watches ls set. sized,
// if not nil, reports whether a node's data is a kazoo pool's max_leases
// (see kazooPool).
func listWith(lock string, ls lister, sized func(p string) bool) (*listing, []<-chan zk.Event, error) {
	children, exists, ch, err := ls(lock)
	if err != nil {
		return nil, nil, err
	}
	if lock == "/" { // ZooKeeper's own subtree holds no lock, and the library refuses to read it
		children = slices.DeleteFunc(children, func(ch string) bool { return ch == "zookeeper" })
	}
	l := &listing{exists: exists, children: slices.Sorted(slices.Values(children))}
	chans := []<-chan zk.Event{ch}
	if slices.ContainsFunc(children, layout.IsKazooLease) {
		names, ok, ch, err := ls(layout.KazooSemaphoreLock(lock))
		l.kazoo = &dir{ok, slices.Sorted(slices.Values(names))}
		l.pool = ok || sized != nil && sized(lock)
		if err != nil {
			return l, nil, err // its leases read as such if its data says it is a pool
		}
		chans = append(chans, ch)
	}
	if !slices.Contains(children, leasesNode) {
		return l, chans, nil
	}
	for i, sub := range []string{leasesNode, locksNode} {
		names, ok, ch, err := ls(path.Join(lock, sub))
		if err != nil {
			l.dirs = [2]dir{}
			return l, nil, err
		}
		l.dirs[i] = dir{ok, slices.Sorted(slices.Values(names))}
		chans = append(chans, ch)
	}
	if semaphoreLayout(l.dirs[0], l.dirs[1]) {
		l.sem = &semNodes{leases: l.dirs[0].children, locks: l.dirs[1].children}
	}
	return l, chans, nil
}

// same reports whether l and o list the same nodes.
func (l *listing) same(o *listing) bool {
	eq := func(a, b dir) bool { return a.exists == b.exists && slices.Equal(a.children, b.children) }
	kazoo := func(d *dir) dir {
		if d == nil {
			return dir{}
		}
		return *d
	}
	return eq(dir{l.exists, l.children}, dir{o.exists, o.children}) && eq(l.dirs[0], o.dirs[0]) && eq(l.dirs[1], o.dirs[1]) &&
		eq(kazoo(l.kazoo), kazoo(o.kazoo))
}

// detect names the recipe of Curator's layout whose nodes children, a
// lock path's, are; semaphore says that the path is a Semaphore's (see
// list). kazoo's nodes are read apart (see readings).
func detect(children []string, semaphore bool) string {
	has := func(sub string) bool {
		return slices.ContainsFunc(children, func(ch string) bool { return strings.Contains(ch, sub) })
	}
	switch {
	case semaphore:
		return recipeSemaphore
	case len(children) == 0:
		return recipeNone
	case has(layout.ReadLockName) || has(layout.WriteLockName):
		return recipeRWLock
	case has(lockMark):
		return recipeMutex
	case has("latch-"):
		return recipeLatch
	}
	return recipeUnknown
}

// isLock reports whether recipe is one of a lock (list's recipes).
func isLock(recipe string) bool {
	switch recipe {
	case recipeMutex, recipeLatch, recipeRWLock, recipeSemaphore,
		recipeKazooLock, recipeKazooRWLock, recipeKazooSemaphore, recipeMixed:
		return true
	}
	return false
}

// beside returns the nodes l lists that are not named as the nodes of
// the locks it reads (see readings), as paths relative to the lock path:
// where a walk goes on below a lock that could not be read.
func (l *listing) beside() []string {
	rs, out := readings(l)
	out = slices.Clone(out)
	for _, r := range rs {
		switch r.recipe {
		case recipeSemaphore:
			out = append(out, l.semBeside(r.names)...)
		case recipeMutex, recipeLatch, recipeRWLock:
			marks := map[string][]string{recipeMutex: {lockMark}, recipeLatch: {"latch-"},
				recipeRWLock: {layout.ReadLockName, layout.WriteLockName}}[r.recipe]
			out = append(out, slices.DeleteFunc(slices.Clone(r.names), func(n string) bool { return isLockNode(n, marks...) })...)
		}
	}
	return out
}

// semBeside is beside for a Semaphore's reading of names, the path's
// children: those beside its leases and locks nodes, and inside them.
func (l *listing) semBeside(names []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == leasesNode || n == locksNode })
	for _, sub := range []struct {
		dir, mark string
		names     []string
	}{{leasesNode, leaseMark, l.sem.leases}, {locksNode, lockMark, l.sem.locks}} {
		for _, n := range sub.names {
			if !isLockNode(n, sub.mark) {
				out = append(out, sub.dir+"/"+n)
			}
		}
	}
	return out
}

// mayBeMutex returns the locks node of a Semaphore without a lease, for
// the walk of list to read as a lock path of its own as well: a Mutex
// named locks, beside an empty node named leases, looks just like a
// Semaphore whose acquirers queue before any lease is made, and the
// incident tool must not hide a held lock behind a Semaphore that holds
// nothing. Any other listing gives nothing.
func (l *listing) mayBeMutex() []string {
	if l.sem == nil || len(l.sem.leases) > 0 || len(l.sem.locks) == 0 {
		return nil
	}
	return []string{locksNode}
}

// view reads the lock's queue once, from l, the lock path as listed by
// the caller (so that a watch set on it misses no later change): a node
// read each, and for a semaphore a listing of its leases and of its
// acquirers. A path with the nodes of two recipes is read in each (see
// readings), Curator's first.
func (in *inspector) view(ctx context.Context, l *listing) (*queueView, error) {
	v := &queueView{Path: in.path, Recipe: recipeNone, Exists: l.exists, Nodes: []nodeView{}}
	if !l.exists {
		return v, nil
	}
	rs, rest := readings(l)
	v.Recipe = recipeOf(rs)
	v.Others = append(v.Others, rest...)
	for _, r := range rs {
		if len(rs) > 1 {
			v.Readings = append(v.Readings, r.recipe)
		}
		if err := in.readAs(ctx, v, l, r); err != nil {
			return nil, err
		}
	}
	if v.Recipe == recipeLatch {
		setLeader(v)
	}
	v.count()
	return v, nil
}

// readAs adds to v the nodes of the reading r of the lock path l lists.
func (in *inspector) readAs(ctx context.Context, v *queueView, l *listing, r reading) error {
	switch r.recipe {
	case recipeMutex:
		return in.firstHolds(ctx, v, r.names, lockMark, "lock")
	case recipeLatch:
		return in.firstHolds(ctx, v, r.names, "latch-", "latch")
	case recipeRWLock:
		return in.rwlock(ctx, v, r.names)
	case recipeSemaphore:
		return in.semaphore(ctx, v, r.names)
	case recipeUnknown:
		return in.unknown(ctx, v, r.names)
	case recipeKazooLock, recipeKazooRWLock:
		return in.kazoo(ctx, v, r.names, r.recipe == recipeKazooRWLock)
	case recipeKazooSemaphore:
		return in.kazooSemaphore(ctx, v, r.names, l.kazoo.children)
	}
	return nil
}

// count counts v's holders and waiters. A semaphore's waiters are its
// acquirers, queued on its internal lock: a lease node still being granted
// belongs to the first of them, and is not counted again.
func (v *queueView) count() {
	for _, n := range v.Nodes {
		switch {
		case n.Role == roleHolder:
			v.Holders++
		case n.Role == roleWaiter && n.Kind != "lease":
			v.Waiters++
		}
	}
}

// lockNodes splits names into the lock nodes of a recipe, whose names
// contain one of marks and end with a sequence number, and the others
// (such as the container of another lock below this one). The lock nodes
// are in queue order: by order.SortKey, with marks[0] as the lock name.
func lockNodes(names []string, order zklock.Driver, marks ...string) (nodes, others []string) {
	for _, name := range names {
		if isLockNode(name, marks...) {
			nodes = append(nodes, name)
		} else {
			others = append(others, name)
		}
	}
	// The library compares sort keys as Java's String.compareTo does;
	// lock nodes' keys are sequence numbers, ASCII, which byte order sorts
	// alike.
	slices.SortStableFunc(nodes, func(a, b string) int {
		return strings.Compare(order.SortKey(a, marks[0]), order.SortKey(b, marks[0]))
	})
	return nodes, others
}

// seqLen is the length of a sequential node's sequence number.
const seqLen = 10

// isLockNode reports whether name is a lock node's: it contains one of
// marks and ends with a sequence number.
func isLockNode(name string, marks ...string) bool {
	return len(name) > seqLen && strings.Trim(name[len(name)-seqLen:], "0123456789") == "" &&
		slices.ContainsFunc(marks, func(m string) bool { return strings.Contains(name, m) })
}

// firstHolds fills v with the queue of a recipe whose first node holds,
// from the lock path's children: a Mutex's (and a Selector's, its layout;
// nodes ..lock-<seq>), or a leader latch's (zklock's Election, Curator's
// LeaderLatch; nodes ..latch-<seq>), whose holder is the leader and whose
// owners are participant ids. The first node that still exists when read
// holds, as the library decides once it sees the nodes ahead gone.
func (in *inspector) firstHolds(ctx context.Context, v *queueView, children []string, mark, kind string) error {
	names, others := lockNodes(children, zklock.StandardDriver{}, mark)
	v.Others = append(v.Others, others...)
	start := len(v.Nodes) // the nodes of another reading before these
	for _, name := range names {
		if err := in.add(ctx, v, "lock", kind, name, roleOf(len(v.Nodes) == start)); err != nil {
			return err
		}
	}
	return nil
}

// setLeader sets v's leader: the id (owner) of its holder, if it has one.
func setLeader(v *queueView) {
	if len(v.Nodes) > 0 && v.Nodes[0].Role == roleHolder {
		id := v.Nodes[0].Owner
		v.Leader = &id
	}
}

// asSelector reads v, a lock's queue, as an election's: a mutex layout is
// a Selector's (Curator's LeaderSelector: a mutex on the election's path),
// whose holder leads, and a kazoo Lock's a kazoo Election's; a latch has
// its leader already; a free or missing lock has none. Other recipes
// have no leader, and a mixed path's holders do not exclude each other:
// an error.
func asSelector(v *queueView) error {
	switch v.Recipe {
	case recipeMutex:
		v.Recipe = recipeSelector
		setLeader(v)
	case recipeKazooLock:
		v.Recipe = recipeKazooElection
		setLeader(v)
	case recipeLatch, recipeNone:
	case recipeMixed:
		what, readings := v.mixed()
		return fmt.Errorf("%s holds the nodes of %s (%s), whose holders do not exclude each other: no one leader (see 'zklock inspect %s')",
			v.Path, what, readings, v.Path)
	default:
		what := "a " + v.Recipe
		if v.Recipe == recipeUnknown {
			what = "of no layout zklock knows"
		}
		return fmt.Errorf("%s is %s, not an election: only a latch (Election, LeaderLatch), a Selector (LeaderSelector, a mutex's layout) or a kazoo Election (a kazoo Lock's layout) has a leader",
			v.Path, what)
	}
	return nil
}

// rwOrder sorts a read/write lock's readers and writers together by
// sequence, as both of its sides do.
type rwOrder struct{ zklock.StandardDriver }

// SortKey is the text after the last "__READ__", then after the last
// "__WRIT__".
func (rwOrder) SortKey(child, _ string) string {
	d := zklock.StandardDriver{}
	return d.SortKey(d.SortKey(child, layout.ReadLockName), layout.WriteLockName)
}

// rwlock fills v with a ReadWriteLock's queue, from the lock path's
// children: the first node holds if it is a writer, and readers hold while
// no writer is ahead of them.
func (in *inspector) rwlock(ctx context.Context, v *queueView, children []string) error {
	names, others := lockNodes(children, rwOrder{}, layout.ReadLockName, layout.WriteLockName)
	v.Others = append(v.Others, others...)
	for _, name := range names {
		kind, held := "read", false
		if strings.Contains(name, layout.WriteLockName) {
			res, _ := zklock.StandardDriver{}.GetsTheLock(names, name, 1)
			kind, held = "write", res.Acquired
		} else {
			held, _, _ = layout.ReaderGetsTheLock(names, name)
		}
		if err := in.add(ctx, v, "lock", kind, name, roleOf(held)); err != nil {
			return err
		}
	}
	markDowngrades(v)
	return nil
}

// markDowngrades marks as holders the readers that took the place of
// their own session's held write node (a downgrade: same sequence), which
// the reader predicate, sorting them behind that writer, would not.
func markDowngrades(v *queueView) {
	var order rwOrder
	for i, n := range v.Nodes {
		if n.Kind != "read" || n.Role == roleHolder {
			continue
		}
		seq := order.SortKey(n.Name, "")
		for _, w := range v.Nodes {
			if w.Kind == "write" && w.Role == roleHolder && w.session == n.session && order.SortKey(w.Name, "") == seq {
				v.Nodes[i].Role = roleHolder
			}
		}
	}
}

// semaphore fills v with a Semaphore's leases and its acquirers, queued on
// its internal lock, from the path's children. Its number of leases is
// not stored, so every lease holds, except those its internal lock's
// holder created after taking it: that acquirer is still waiting for them
// to be granted. The path's other children (another lock's path below it)
// are not lock nodes. v holds no node yet (Curator's reading comes first).
func (in *inspector) semaphore(ctx context.Context, v *queueView, children []string) error {
	for _, ch := range children {
		if ch != leasesNode && ch != locksNode {
			v.Others = append(v.Others, ch)
		}
	}
	s, err := zklock.NewSemaphore(in.c, in.path, 1)
	if err != nil {
		return err
	}
	leases, err := s.Participants(ctx)
	if err != nil {
		return err
	}
	m, err := zklock.NewMutex(in.c, path.Join(in.path, locksNode))
	if err != nil {
		return err
	}
	acquirers, err := participants(ctx, m)
	if err != nil {
		return err
	}
	for _, name := range acquirers {
		if err := in.add(ctx, v, locksNode, "acquirer", name, roleWaiter); err != nil {
			return err
		}
	}
	var first *nodeView
	if len(v.Nodes) > 0 {
		first = &v.Nodes[0]
	}
	var lv queueView
	for _, name := range leases {
		if err := in.add(ctx, &lv, leasesNode, "lease", name, roleHolder); err != nil {
			return err
		}
	}
	for i, l := range lv.Nodes {
		if first != nil && l.session == first.session && l.Token > first.Token {
			lv.Nodes[i].Role = roleWaiter
		}
	}
	v.Nodes = append(lv.Nodes, v.Nodes...)
	v.Others = append(v.Others, lv.Others...)
	return nil
}

// unknown fills v with children of a layout no recipe makes.
func (in *inspector) unknown(ctx context.Context, v *queueView, children []string) error {
	for _, name := range children {
		if err := in.add(ctx, v, "lock", "unknown", name, roleUnknown); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// participants returns the names of m's nodes in the library's queue
// order.
func participants(ctx context.Context, m *zklock.Mutex) ([]string, error) {
	paths, err := m.Participants(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = path.Base(p)
	}
	return names, nil
}

// roleOf is the role of a node that holds or not.
func roleOf(held bool) string {
	if held {
		return roleHolder
	}
	return roleWaiter
}

// add reads the node name of queue (a child of the lock, or of its
// leases or locks node), of Curator's layout, and appends it to v, as
// addNode does.
func (in *inspector) add(ctx context.Context, v *queueView, queue, kind, name, role string) error {
	dir := in.path
	if queue != "lock" {
		dir = path.Join(in.path, queue)
	}
	lay := layoutCurator
	if kind == "unknown" {
		lay = ""
	}
	return in.addNode(ctx, v, nodeSpec{dir: dir, queue: queue, kind: kind, name: name, role: role, layout: lay})
}

// nodeSpec is a node for addNode to read: its directory and name, and
// what the reading of its lock says of it.
type nodeSpec struct {
	dir, name, queue, kind, role, layout string
	// persistent says that a node that is not ephemeral takes part (a
	// kazoo contender made with acquire(ephemeral=False)).
	persistent bool
}

// addNode reads the node n and appends it to v, at the next position of
// its queue and layout. A node gone meanwhile is left out; a node that is
// not ephemeral is not a participant (lock nodes are ephemeral, unless
// n.persistent): it goes to v.Others.
func (in *inspector) addNode(ctx context.Context, v *queueView, n nodeSpec) error {
	p := path.Join(n.dir, n.name)
	data, stat, err := in.c.Get(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return opError("read", p, err)
	}
	if stat.EphemeralOwner == 0 && !n.persistent {
		v.Others = append(v.Others, strings.TrimPrefix(p, in.path+"/"))
		return nil
	}
	created := time.UnixMilli(stat.Ctime).UTC()
	pos := 0
	for _, o := range v.Nodes {
		if o.Queue == n.queue && o.Layout == n.layout {
			pos++
		}
	}
	owner := ownerText(data)
	v.Nodes = append(v.Nodes, nodeView{
		Position: pos, Queue: n.queue, Layout: n.layout, Kind: n.kind, Role: n.role, Name: n.name, Path: p,
		Session: fmt.Sprintf("0x%x", stat.EphemeralOwner), Owner: owner, Revoked: isRevoked(owner),
		Created: created, AgeMS: time.Since(created).Milliseconds(), Token: stat.Czxid,
		session: stat.EphemeralOwner,
	})
	return nil
}

// isRevoked reports whether owner, a node's data as ownerText gives it,
// is a revocation request ('zklock revoke', Curator's Revoker), which
// replaced the owner's own data.
func isRevoked(owner string) bool {
	return owner == layout.RevokeMessage
}

// shownOwner is an owner, as ownerText gives it, for people: "(revoked)"
// for a revocation request, which is all the node's data now says.
func shownOwner(owner string) string {
	if isRevoked(owner) {
		return "(revoked)"
	}
	return owner
}

// ownerText shows node data as text, or as hex if it is not printable.
func ownerText(data []byte) string {
	s := string(data)
	printable := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
	if printable {
		return s
	}
	return "0x" + hex.EncodeToString(data)
}
