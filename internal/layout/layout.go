// Package layout holds the rules of Curator's znode layouts that both the
// zklock library and its command-line tool (cmd/zklock) apply, so that the
// two never disagree on who holds a lock.
package layout

import "strings"

// Node names of the two sides of a read/write lock; Curator's, and of
// equal length on purpose.
const (
	ReadLockName  = "__READ__"
	WriteLockName = "__WRIT__"
)

// RevokeMessage is the data Curator's Revoker writes into a lock node to
// ask its holder to release, replacing the holder's own data.
const RevokeMessage = "__REVOKE__"

// ReaderGetsTheLock is Curator's read-lock predicate. children are a read/write
// lock's children sorted by sequence, readers and writers alike, and node
// is (a prefix of) a reader's name. The reader holds the lock while no
// write node sorts before it; otherwise it waits for the first write node,
// whose name watch returns. found is false if node is not among children.
func ReaderGetsTheLock(children []string, node string) (acquired bool, watch string, found bool) {
	firstWrite, ours := -1, -1
	for i, ch := range children {
		if strings.Contains(ch, WriteLockName) {
			if firstWrite < 0 {
				firstWrite = i
			}
		} else if strings.HasPrefix(ch, node) {
			ours = i
			break
		}
	}
	switch {
	case ours < 0:
		return false, "", false
	case firstWrite < 0 || ours < firstWrite:
		return true, "", true
	}
	return false, children[firstWrite], true
}
