package layout

import (
	"strconv"
	"strings"
)

// kazoo's Semaphore (kazoo 2.x, kazoo/recipe/lock.py) keeps its leases in
// a pool node at the semaphore's path, whose data is the semaphore's
// max_leases in decimal: a lease is an EPHEMERAL node "<uuid hex>" (no
// sequence) below the pool, with its holder's identifier as data.
// Acquirers take turns on a kazoo Lock at a sibling of the pool, the
// pool's path and KazooSemaphoreLockSuffix; the Lock's holder makes its
// lease if the pool has room, and waits for a lease to go otherwise.
const KazooSemaphoreLockSuffix = "-__lock__"

// kazooLeaseLen is the length of a lease's name: uuid4().hex.
const kazooLeaseLen = 32

// IsKazooLease reports whether name is a kazoo Semaphore's lease's: 32
// lowercase hex digits, as uuid4().hex makes them.
func IsKazooLease(name string) bool {
	if len(name) != kazooLeaseLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// KazooSemaphoreLock returns the path of the kazoo Lock on which the
// acquirers of the kazoo Semaphore at path queue: path and
// KazooSemaphoreLockSuffix, a sibling of the pool.
func KazooSemaphoreLock(path string) string {
	return path + KazooSemaphoreLockSuffix
}

// KazooMaxLeases reads a kazoo Semaphore's pool data as kazoo does, with
// Python's int() (underscores between digits aside): a decimal number,
// signed or not, with white space around it. ok is false for data that is
// no number, which kazoo ignores (the node's data may serve another
// purpose).
func KazooMaxLeases(data []byte) (n int, ok bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return n, err == nil
}
