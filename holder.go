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
// leader), as the acquire last saw it, read once more when the acquire
// failed: one request, on the failure path only (for a Semaphore, a
// listing of its leases and a read of the oldest). An acquire whose holder could not be read then (gone meanwhile,
// the connection down) returns its error without a HolderError; one whose
// context ended while the Client was not connected reads nothing, and its
// error wraps ErrNotConnected and says for how long instead.
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
	// acquire failed, and the semaphore's size; Node is then the oldest
	// lease. Both are 0 for other locks, a SemaphoreMutex's included.
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

// nameHolder returns err as a *HolderError naming the holder of the lock
// at p (relative to the namespace) from its node first (a full path) if
// err is a busy Try's or a wait's that ctx ended, and the node can be
// read now; else err.
func (c *Client) nameHolder(ctx context.Context, err error, p, first string) error {
	if !busy(ctx, err) || first == "" || c.usable() != nil {
		return err
	}
	rctx, cancel := c.holderContext(ctx)
	defer cancel()
	var stat *zk.Stat
	data, rerr := await(c, rctx, func() ([]byte, error) {
		d, s, err := c.zc.Get(rctx, first)
		stat = s
		return d, err
	}, nil)
	if rerr != nil || stat == nil {
		return err
	}
	e := &HolderError{Path: p, Node: c.relPath(first), Data: data, Session: stat.EphemeralOwner, Err: err,
		Held: time.Since(time.UnixMilli(stat.Ctime))}
	e.ThisClient, e.ThisProcess = sessionHere(c, stat.EphemeralOwner)
	return e
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

// holderGrace bounds the reads that name a holder, past the end of the
// caller's context, on zklock's own session: a connection gone silent
// costs the caller that much at most (the holder is then not named).
const holderGrace = 250 * time.Millisecond

// holderContext bounds the reads that name a holder: ctx's values, not its
// end (it may have ended already).
func (c *Client) holderContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := min(holderRead, c.sessionTimeout()/3)
	if ctx.Err() != nil && c.zc.Native() {
		d = min(d, holderGrace)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// firstChild returns the full path of the first of children, sorted, under
// parent, or "".
func firstChild(parent string, children []string) string {
	if len(children) == 0 {
		return ""
	}
	return path.Join(parent, children[0])
}

// clients are the Clients of this process that are not closed, to tell
// whether a lock's holder is one of them.
var clients = struct {
	mu sync.Mutex
	m  map[*Client]struct{}
}{m: make(map[*Client]struct{})}

// registered adds c to clients, or removes it (on Close).
func registered(c *Client, live bool) {
	clients.mu.Lock()
	defer clients.mu.Unlock()
	if live {
		clients.m[c] = struct{}{}
	} else {
		delete(clients.m, c)
	}
}

// sessionHere reports whether session is c's own, or another Client's of
// this process.
func sessionHere(c *Client, session int64) (client, process bool) {
	if session == 0 {
		return false, false
	}
	if c.snapshot().session == session {
		return true, false
	}
	clients.mu.Lock()
	others := make([]*Client, 0, len(clients.m))
	for o := range clients.m {
		others = append(others, o)
	}
	clients.mu.Unlock()
	for _, o := range others {
		if o != c && o.snapshot().session == session {
			return false, true
		}
	}
	return false, false
}
