package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// HolderError is the error of an acquire that failed while someone held
// the lock: a Try that found it busy (Err wraps ErrLocked), or a wait that
// its context ended (Err is the context's error). It names the holder, so
// that a timeout in a log says who was in the way; errors.As finds it in
// the error the acquire returns, and errors.Is sees through it to Err.
//
// The holder is the first node of the lock's queue (for an Election, the
// leader), as the acquire last saw it, read once more: one request (for a
// Semaphore, a listing of its leases and a read of the oldest). A wait
// whose context has a deadline reads it before the deadline, so as to
// return by the deadline even on a connection gone silent: 250 ms before
// it (in the second half of a shorter wait), and again if the queue's
// first node changes meanwhile; an acquire granted before then sends no
// read. Held counts until the acquire fails. A busy Try reads the holder
// when it fails, within its context's deadline. On zklock's own session
// nothing is read once the context has ended: a wait cancelled before
// any early read (one with no deadline) names no holder, and returns at
// once. (On a go-zookeeper connection, NewClient's, the read runs after
// the context's end, bounded by 2 s or a third of the session timeout.)
// An acquire whose holder could not be read in time (gone meanwhile, the
// connection down or silent) returns its error without a HolderError; one
// whose context ended while the Client was not connected reads nothing,
// and its error wraps ErrNotConnected and says for how long instead.
type HolderError struct {
	Path    string        // the lock's path, relative to the Client's namespace
	Node    string        // the holder's node, relative to the namespace
	Data    []byte        // the node's data: the owner, as its Client's WithNodeData or WithLockData set it (a Curator peer's host address by default)
	Held    time.Duration // how long the node has stood, by the server's clock of its creation
	Session int64         // the session that owns the node
	// ThisClient: the holder's session is the very Client's that failed
	// to acquire: most likely a hold whose Release was forgotten.
	ThisClient bool
	// ThisProcess: the holder belongs to another Client of this process.
	ThisProcess bool
	// Leases and MaxLeases, for a Semaphore: the leases out when the
	// holder was read, and the semaphore's size; Node is then the oldest
	// lease (in kazoo's layout, whose leases have no order, the first in
	// name order). Both are 0 for other locks, a SemaphoreMutex's included.
	Leases, MaxLeases int
	Err               error // ErrLocked, or the acquire's context's error
}

// Error says what failed and who holds the lock. It shows at most
// [holderShown] bytes of Data, then the data's size, and of a Node longer
// than 256 bytes its start and its name: the fields keep them whole.
func (e *HolderError) Error() string {
	what := msgPrefix + "lock held"
	if e.Err != nil {
		what = e.Err.Error()
	}
	who := e.owner()
	switch {
	case e.ThisClient:
		who = "this Client (" + who + ")"
	case e.ThisProcess:
		who = "another Client of this process (" + who + ")"
	}
	held := "; held by " + who
	if e.MaxLeases > 0 {
		held = fmt.Sprintf("; %d of %d leases held, the oldest by %s", e.Leases, e.MaxLeases, who)
		if errors.Is(e.Err, ErrLocked) && e.Leases >= e.MaxLeases {
			what, held = msgPrefix+"no lease free", fmt.Sprintf(": %d of %d held, the oldest by %s", e.Leases, e.MaxLeases, who)
		}
	}
	msg := fmt.Sprintf("%s%s for %v, node %s", what, held, e.Held.Round(time.Millisecond), shortPath(e.Node))
	if e.ThisClient {
		msg += ": a missing Release?"
	}
	return msg
}

// shortPath returns p, or for a path longer than 256 bytes its start and
// its end (the node's name), with its length.
func shortPath(p string) string {
	if len(p) <= 256 {
		return p
	}
	return fmt.Sprintf("%s…%s (%d bytes)", p[:64], p[len(p)-160:], len(p))
}

// holderShown bounds the bytes of a holder's node data that
// [HolderError.Error] shows, so that an error stays one readable log line
// whatever the data (ZooKeeper allows up to 1 MB).
const holderShown = 128

// owner returns the node's data as text, quoted unless it is printable,
// cut to holderShown bytes (on a character's boundary) and then followed
// by its size.
func (e *HolderError) owner() string {
	if len(e.Data) == 0 {
		return "an owner with no node data"
	}
	data, more := e.Data, ""
	if len(data) > holderShown {
		n := holderShown
		for n > holderShown-utf8.UTFMax && !utf8.RuneStart(data[n]) {
			n--
		}
		data, more = data[:n], fmt.Sprintf("… (%d bytes)", len(e.Data))
	}
	s := string(data)
	if utf8.ValidString(s) && strconv.Quote(s) == `"`+s+`"` {
		return s + more
	}
	return strconv.Quote(s) + more
}

// Unwrap returns Err.
func (e *HolderError) Unwrap() error { return e.Err }

// holderRead bounds the read of a holder's node on the failure path.
const holderRead = 2 * time.Second

// holderLead is how long before an acquire's deadline its early read of
// the holder begins (half the time left, if that is less): a round trip,
// with room for a loaded machine.
const holderLead = 250 * time.Millisecond

// holderSource says where an acquire reads its lock's holder: the first
// node of its queue, as its holderProbe last saw it, or for a Semaphore
// the oldest of its leases, which it lists.
type holderSource struct {
	path      string         // the lock's path, relative to the namespace
	leases    *lockInternals // the engine over a Semaphore's leases, which lists and sorts them; nil for a lock with a queue
	maxLeases int            // the Semaphore's size, for HolderError.Leases and MaxLeases; 0 for none (a SemaphoreMutex)
}

// holderProbe names the holder of the lock an acquire waits for, in the
// HolderError of its failure. The engine tells it the first node of each
// listing it decides on (see); the read happens once the acquire fails,
// or for an acquire with a deadline, before the deadline: holderLead
// before it (half the time left, if that is less), and again each time
// the engine sees another first node after that, until the acquire
// returns. So a wait that its deadline ends names the holder without a
// read past the deadline, which a connection gone silent would make it
// wait for; and an acquire granted before costs a timer, no request.
type holderProbe struct {
	c     *Client
	src   holderSource
	ctx   context.Context // the acquire's, which ends when it returns: the early reads run under it
	timer *time.Timer     // begins the early read; nil for none

	mu      sync.Mutex     // guards the fields below
	first   string         // the full path of the queue's first node, as the engine last saw it
	due     bool           // the early read's time has come
	stopped bool           // the acquire is over: no read begins
	last    *holderReading // the latest early read; nil for none
}

// holderReading is one early read of a holder.
type holderReading struct {
	of    string        // the first node it reads; "" for a Semaphore's
	done  chan struct{} // closed once it is over
	named *HolderError  // its outcome, nil for none (its Err unset); written before done is closed
	at    time.Time     // when named was read (its Held counts until then); written before done is closed
}

// probeHolder gives a the probe that names the holder of the lock it
// acquires, on c, from src; with early, and if ctx has a deadline, it
// reads the holder before the deadline. a.stop stops it.
func (a *acquisition) probeHolder(ctx context.Context, c *Client, src holderSource, early bool) *holderProbe {
	p := &holderProbe{c: c, src: src, ctx: a.ctx}
	a.holder = p
	if dl, ok := ctx.Deadline(); ok && early {
		left := time.Until(dl)
		p.timer = time.AfterFunc(left-min(holderLead, left/2), p.fire)
	}
	return p
}

// see records first, the full path of the first node of a listing the
// engine decided on (the holder), and reads it if the early read's time
// has come and it is another node. p may be nil.
func (p *holderProbe) see(first string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if first == p.first {
		return
	}
	p.first = first
	if p.due {
		p.readLocked()
	}
}

// fire begins the early read, as the timer asks.
func (p *holderProbe) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.due = true
	p.readLocked()
}

// readLocked begins an early read of the holder on a goroutine of the
// Client's, unless the acquire is over or knows of no holder to read.
// p.mu must be held.
func (p *holderProbe) readLocked() {
	if p.stopped || p.src.leases == nil && p.first == "" {
		return
	}
	r := &holderReading{of: p.first, done: make(chan struct{})}
	if p.c.goFunc(func() {
		defer close(r.done)
		r.named, r.at = p.c.readHolder(p.ctx, p.src, r.of), time.Now()
	}) {
		p.last = r
	}
}

// stop ends p when the acquire returns: no early read begins after, and
// one under way ends with the acquire's context. p may be nil.
func (p *holderProbe) stop() {
	if p == nil {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// nameHolder returns err, the failure of the acquire under ctx, as a
// *HolderError naming the lock's holder if err is a busy Try's or a
// wait's that ctx ended, and the holder could be read: by the latest
// early read, or else now. A read now never runs past ctx's deadline on
// zklock's own session (see Client.holderContext).
func (p *holderProbe) nameHolder(ctx context.Context, err error) error {
	c := p.c
	if !busy(ctx, err) || c.usable() != nil {
		return err
	}
	he := p.early()
	if he == nil {
		rctx, cancel, ok := c.holderContext(ctx)
		if !ok {
			return err
		}
		defer cancel()
		p.mu.Lock()
		first := p.first
		p.mu.Unlock()
		if he = c.readHolder(rctx, p.src, first); he == nil {
			return err
		}
	}
	he.Err = err
	return he
}

// early returns what the latest early read named, once it is over, its
// Held counted until now, and lets no other begin; nil if none began or
// it named no one. The acquire has failed: a read under way ends with its
// context, at once if that has ended.
func (p *holderProbe) early() *HolderError {
	p.mu.Lock()
	p.stopped = true
	r := p.last
	p.mu.Unlock()
	if r == nil {
		return nil
	}
	<-r.done
	if r.named != nil {
		r.named.Held += time.Since(r.at)
	}
	return r.named
}

// readHolder reads the holder of a lock from src: the node first (a full
// path), or for a Semaphore the oldest of its leases, with the count of
// leases out. It returns nil if there is none to read, or it cannot be
// read under ctx (gone meanwhile, the connection down).
func (c *Client) readHolder(ctx context.Context, src holderSource, first string) *HolderError {
	var children []string
	if src.leases != nil {
		var err error
		if children, err = src.leases.sortedChildren(ctx); err != nil {
			return nil
		}
		first = firstChild(src.leases.basePath, children)
	}
	if first == "" {
		return nil
	}
	var stat *zk.Stat
	data, err := await(c, ctx, func() ([]byte, error) {
		d, s, err := c.zc.Get(ctx, first)
		stat = s
		return d, err
	}, nil)
	if err != nil || stat == nil {
		return nil
	}
	he := &HolderError{Path: src.path, Node: c.relPath(first), Data: data, Session: stat.EphemeralOwner,
		Held: time.Since(time.UnixMilli(stat.Ctime))}
	he.ThisClient, he.ThisProcess = sessionHere(c, stat.EphemeralOwner)
	if src.maxLeases > 0 {
		// The first maxLeases lease nodes are the leases out; any more
		// are acquirers' that wait for one.
		he.Leases, he.MaxLeases = min(len(children), src.maxLeases), src.maxLeases
	}
	return he
}

// busy reports whether err, an acquire's with ctx, is a busy Try's, or a
// wait's that ctx ended while the Client was connected (one that ended
// while it was not says so instead: see Client.offline; the holder could
// not be read then either).
func busy(ctx context.Context, err error) bool {
	if errors.Is(err, ErrNotConnected) {
		return false
	}
	return errors.Is(err, ErrLocked) || ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// holderContext bounds a read that names a holder once an acquire under
// ctx has failed: ctx's values, not its end (it may have ended already),
// for at most holderRead or a third of the session timeout. On zklock's
// own session the read never runs once ctx has ended (ok is false): a
// call returns at once when its context ends, a connection gone silent
// included, so a wait cancelled before any early read (one with no
// deadline) names no holder. A go-zookeeper connection, which keeps no
// deadline on a connection gone silent anyway, still reads after it.
func (c *Client) holderContext(ctx context.Context) (_ context.Context, _ context.CancelFunc, ok bool) {
	d := min(holderRead, c.sessionTimeout()/3)
	if c.zc.Native() {
		if ctx.Err() != nil {
			return nil, nil, false
		}
		if dl, has := ctx.Deadline(); has {
			if d = min(d, time.Until(dl)); d <= 0 {
				return nil, nil, false
			}
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	return rctx, cancel, true
}

// firstChild returns the full path of the first of children, sorted, under
// parent, or "".
func firstChild(parent string, children []string) string {
	if len(children) == 0 {
		return ""
	}
	return path.Join(parent, children[0])
}
