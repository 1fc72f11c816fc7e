package zklock

import (
	"context"
	"errors"
	"path"
	"sync"
	"time"
)

// recentDeletes remembers the lock nodes this Client deleted lately, so
// that it can check them again after a reconnect. ZooKeeper 3.8.0 to 3.8.4
// and 3.9.0 to 3.9.1 can acknowledge a delete that a change of leader then
// undoes (ZOOKEEPER-4646, -4643, -4785): the chaos suite saw a leader
// answer a delete just as it was cut off from the others, and the node was
// back on every server after the election. Left
// alone, such a node would block the lock's queue for as long as the
// session lives.
type recentDeletes struct {
	mu   sync.Mutex
	ring [recentDeletesMax]deletedNode
	next int // where the next entry goes
}

// recentDeletesMax bounds what is remembered; older deletes are forgotten.
const recentDeletesMax = 256

type deletedNode struct {
	path string
	at   time.Time
}

// add remembers that p was deleted now. Only protected nodes count: their
// names are never used twice, so one seen again is the same node.
func (r *recentDeletes) add(p string) {
	if !isProtected(path.Base(p)) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring[r.next] = deletedNode{p, time.Now()}
	r.next = (r.next + 1) % len(r.ring)
}

// since returns the paths deleted after t.
func (r *recentDeletes) since(t time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.ring {
		if d.path != "" && d.at.After(t) {
			out = append(out, d.path)
		}
	}
	return out
}

// recheckDeletes runs after a reconnect with the same session: every node
// deleted since t that still exists with our session as its owner is
// deleted again. t reaches back a session timeout before the suspension,
// the longest a leader that lost its quorum may have gone on answering.
func (c *Client) recheckDeletes(t time.Time) {
	for _, p := range c.deletes.since(t) {
		c.untilDone(func() (bool, error) {
			ok, st, err := c.zc.Exists(context.Background(), p)
			switch {
			case err != nil:
				return false, err
			case !ok || st.EphemeralOwner != c.zc.SessionID():
				return true, nil
			}
			c.log.Warn("zklock: a delete ZooKeeper had acknowledged was undone; deleting the node again", "path", p)
			c.emit(Event{Kind: EventDeleteRetried, Node: c.relPath(p), Err: errDeleteUndone})
			return c.deleteOnce(context.Background(), p)
		})
	}
}

// errDeleteUndone is the Err of the event reporting a delete done again.
var errDeleteUndone = errors.New("zklock: an acknowledged delete was undone by the ensemble")
