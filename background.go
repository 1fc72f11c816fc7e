package zklock

import (
	"sync"
	"sync/atomic"
)

// backgroundWorkers bounds the goroutines of a Client's background queue.
// They send their requests over the one connection at once, so that many
// deletes (of a thousand holds lost together, say) travel in a few round
// trips, not one each; more would only queue in go-zookeeper.
const backgroundWorkers = 64

// backgroundWork is the part of a Client that runs work left to the
// background: the queue (made by init, never replaced), and
// the count of deletes under way there, which zkops.go writes as each
// begins and ends.
type backgroundWork struct {
	background *backgroundQueue // work left to the background, on a few goroutines
	bgDeletes  atomic.Int64     // deletes going on in the background
}

func (w *backgroundWork) init(c *Client) { w.background = &backgroundQueue{c: c} }

// backgroundQueue runs a Client's background work (see Client.cleanup:
// freeing lost holds, deletes that could not be done at once) on at most
// backgroundWorkers goroutines, however much is queued: a mass loss costs
// a queue entry per hold, not a goroutine. Close waits for what runs; once
// Close has begun, work is run on the caller's goroutine instead for a
// wrapped connection, whose nodes outlive the Client, and dropped for a
// connection of the Client's own, which ends its session and its nodes
// with it.
type backgroundQueue struct {
	c *Client

	mu      sync.Mutex
	work    []func() // guarded by mu
	running int      // workers running; guarded by mu
}

// add queues f.
func (q *backgroundQueue) add(f func()) {
	q.mu.Lock()
	q.work = append(q.work, f)
	start := q.running < backgroundWorkers
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start && !q.c.goFunc(q.run) {
		q.mu.Lock()
		q.running--
		work := q.work
		q.work = nil
		q.mu.Unlock()
		if !q.c.ownsConn {
			for _, f := range work {
				f()
			}
		}
	}
}

// run is a worker: it runs queued work until there is none.
func (q *backgroundQueue) run() {
	for {
		q.mu.Lock()
		if len(q.work) == 0 {
			q.running--
			q.work = nil // let a drained backlog's array go
			q.mu.Unlock()
			return
		}
		f := q.work[0]
		q.work[0] = nil
		q.work = q.work[1:]
		q.mu.Unlock()
		f()
	}
}
