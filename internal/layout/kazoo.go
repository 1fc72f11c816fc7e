package layout

// kazoo's lock layout (kazoo 2.x, kazoo/recipe/lock.py), which the Python
// services that share a lock with zklock use: each contender creates an
// EPHEMERAL_SEQUENTIAL node "<uuid hex><kind><sequence>" under the lock's
// path, with its identifier as data. Lock, WriteLock and Election
// contenders are of kind "__lock__", ReadLock's of kind "__rlock__".
const (
	KazooLockName = "__lock__"
	KazooReadName = "__rlock__"
)

// kazooSeqLen is the length of a sequence without its sign.
const kazooSeqLen = 10

// ParseKazoo finds in name what kazoo's contender pattern,
// "(?:__lock__|__rlock__)(-?\d{10})$" searched in the name, finds: the
// contender's kind (KazooLockName or KazooReadName) and its sequence as
// text, which kazoo orders as text (a sequence past 2^31 is negative and
// sorts first, as in kazoo). ok is false for a name that is no kazoo
// contender.
func ParseKazoo(name string) (kind, seq string, ok bool) {
	if len(name) < kazooSeqLen {
		return "", "", false
	}
	end := len(name) - kazooSeqLen
	for i := end; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return "", "", false
		}
	}
	if end > 0 && name[end-1] == '-' {
		end--
	}
	head := name[:end]
	for _, k := range [...]string{KazooLockName, KazooReadName} {
		if len(head) >= len(k) && head[len(head)-len(k):] == k {
			return k, name[end:], true
		}
	}
	return "", "", false
}

// KazooGetsTheLock is kazoo's predicate, as ZooKeeper's lock recipes
// define it. children are the lock's children in any order; node is our
// contender's name, and blockers the kinds of contender that exclude it:
// KazooLockName alone for a Lock, an Election or a ReadLock, both kinds
// for a WriteLock. Children of no kind in blockers are ignored, as kazoo
// ignores them. The node holds the lock while no blocker's sequence sorts
// before its own; otherwise it waits for the last blocker before it,
// whose name watch returns. found is false if node is not among children
// or is no kazoo contender.
//
// kazoo 2.8's ReadLock takes the last writer of all as its predecessor,
// even one queued after it, which can deadlock with that writer (kazoo
// issue 649, fixed in a later release); this predicate is the recipe's.
func KazooGetsTheLock(children []string, node string, blockers ...string) (acquired bool, watch string, found bool) {
	_, ours, ok := ParseKazoo(node)
	if !ok {
		return false, "", false
	}
	var best string
	for _, ch := range children {
		if ch == node {
			found = true
			continue
		}
		kind, seq, ok := ParseKazoo(ch)
		if !ok || !isKind(kind, blockers) || seq >= ours {
			continue
		}
		if watch == "" || seq > best {
			watch, best = ch, seq
		}
	}
	if !found {
		return false, "", false
	}
	return watch == "", watch, true
}

// KazooBlockers returns the kinds of contender that exclude a kazoo
// contender (KazooGetsTheLock's blockers): both kinds for a WriteLock's
// (write), KazooLockName alone for a Lock's, an Election's or a
// ReadLock's.
func KazooBlockers(write bool) []string {
	if write {
		return []string{KazooLockName, KazooReadName}
	}
	return []string{KazooLockName}
}

func isKind(kind string, kinds []string) bool {
	for _, k := range kinds {
		if k == kind {
			return true
		}
	}
	return false
}
