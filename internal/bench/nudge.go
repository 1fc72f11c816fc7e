package main

import (
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Debian's ZooKeeper 3.8.0 has ZOOKEEPER-4537 (fixed in 3.8.1): a race
// between its SyncThread and CommitProcessor can leave a committed write
// unanswered until the server receives another request. With a single
// busy client (floor, uncontended) that is the client's next ping, up to
// a third of the session timeout later: stalls of seconds, a few times a
// minute, which would land on whichever library happens to run. The tool
// therefore sends a cheap read (exists /) every so often from its
// controller session during every run, for every library alike, and
// subtracts those requests from the srvr counters.

// defaultNudge is how often the nudger reads; it bounds such a stall.
const defaultNudge = 20 * time.Millisecond

// nudger reads from the server at a steady pace until stopped.
type nudger struct {
	count atomic.Int64 // requests sent so far
	stop  chan struct{}
	done  chan struct{}
}

// startNudger starts reading with c every interval.
func startNudger(c *zk.Conn, interval time.Duration) *nudger {
	n := &nudger{stop: make(chan struct{}), done: make(chan struct{})}
	go n.loop(c, interval)
	return n
}

// loop sends one exists every interval until stop is closed.
func (n *nudger) loop(c *zk.Conn, interval time.Duration) {
	defer close(n.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			_, _, _ = c.Exists("/")
			n.count.Add(1)
		}
	}
}

// sent returns how many requests the nudger has sent; 0 for a nil nudger.
func (n *nudger) sent() int64 {
	if n == nil {
		return 0
	}
	return n.count.Load()
}

// close stops the nudger and waits for it; a nil nudger is a no-op.
func (n *nudger) close() {
	if n == nil {
		return
	}
	close(n.stop)
	<-n.done
}
