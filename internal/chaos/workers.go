package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

// held is one hold, whatever the recipe.
type held struct {
	token   int64
	multi   func(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) // Hold.Multi: a transaction guarded by the hold's node
	check   *zk.CheckVersionRequest                                           // a check of the hold's node, for a transaction of another session's
	done    <-chan struct{}                                                   // closed when the hold ends (lost or released)
	ended   <-chan time.Time                                                  // receives, once, when done was seen closed
	release func() error
	cause   func() error // why the hold ended; nil as leases had before (the checker's tests replay it)
}

// recipe is how a worker takes one kind of hold.
type recipe struct {
	kind     kind
	resource string // the node its guarded writes go to
	acquire  func(ctx context.Context) (held, error)
}

// holdRecipe takes holds through lock: Mutex.Lock (also on a side of a
// ReadWriteLock), or Election.Campaign, whose leadership is a Hold too.
func holdRecipe(k kind, lock func(context.Context) (*zklock.Hold, error), resource string) recipe {
	return recipe{kind: k, resource: resource, acquire: func(ctx context.Context) (held, error) {
		h, err := lock(ctx)
		if err != nil {
			return held{}, err
		}
		return heldOf(h)
	}}
}

// heldOf turns a Hold into a held. If its token or check cannot be read
// (the hold ended already), it releases it and returns the errors.
func heldOf(h *zklock.Hold) (held, error) {
	hctx := h.Context()
	ended := make(chan time.Time, 1)
	context.AfterFunc(hctx, func() { ended <- time.Now() })
	token, err := h.Token()
	if err != nil {
		return held{}, errors.Join(err, h.Release())
	}
	op, err := h.CheckOp()
	if err != nil {
		return held{}, errors.Join(err, h.Release())
	}
	return held{token: token, multi: h.Multi, check: op, done: h.Done(), ended: ended, release: h.Release,
		cause: func() error { return context.Cause(hctx) }}, nil
}

// leaseRecipe takes leases of s, through their Holds as every other
// kind: a lease that ended before its token was learnt (Lease.Token would
// say 0) is an acquire that failed, not a section with no token.
func leaseRecipe(s *zklock.Semaphore, resource string) recipe {
	return recipe{kind: kindLease, resource: resource, acquire: func(ctx context.Context) (held, error) {
		l, err := s.Acquire(ctx)
		if err != nil {
			return held{}, err
		}
		return heldOf(l.Hold())
	}}
}

// counters are the run's tallies, per kind of section.
type counters struct {
	acquired     [numKinds]atomic.Int64
	long         [numKinds]atomic.Int64 // long sections: one to two session timeouts
	lost         [numKinds]atomic.Int64 // holds lost, all of them signalled (else a violation)
	acquireErrs  [numKinds]atomic.Int64 // acquires that failed or timed out
	staleBlocked atomic.Int64           // guarded writes with a stale token that ZooKeeper rejected
	writeErrs    atomic.Int64           // guarded writes that failed on the connection
	lateWrites   atomic.Int64           // writes after Release accepted before its background delete landed
	slowWrites   atomic.Int64           // guarded writes that took longer than a session timeout
	maxHoldEnded atomic.Int64           // holds their maximum hold time ended (lost, signalled)
}

// worker takes one recipe's holds on one session, again and again.
type worker struct {
	who     string
	r       recipe
	sess    *session // the worker's session
	stale   *zk.Conn // the connection a released hold's stale writes go through: an operator's
	occ     *occupancy
	j       *journal
	st      *counters
	rnd     *rand.Rand // owned by this worker
	maxHold time.Duration
	timeout time.Duration // the session timeout
	long    int           // one section in long is long (0: none)
	patient time.Duration // acquire time limit
	notice  time.Duration // how long a hold whose node is gone may take to learn it
	idle    int           // after one section in idle, stay idle up to 20 short sections (0: never)
	bound   time.Duration // each acquire's maximum hold time (zklock.ContextWithMaxHold); 0: none
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.once(ctx)
		if w.idle > 0 && w.rnd.IntN(w.idle) == 0 {
			pause(ctx, time.Duration(w.rnd.Int64N(int64(20*w.maxHold))))
		}
	}
}

// once takes the lock, works under it, and releases. The section it
// records is the time the worker believed it held the lock: from the grant
// until it chose to release, or until the hold's context ended, whichever
// came first (see section.until).
func (w *worker) once(ctx context.Context) {
	actx, cancel := context.WithTimeout(ctx, w.patient)
	if w.bound > 0 {
		actx = zklock.ContextWithMaxHold(actx, w.bound)
	}
	w.occ.waiting.Add(1)
	h, err := w.r.acquire(actx)
	if err == nil {
		w.occ.holding[w.r.kind].Add(1) // before waiting drops: the session never looks idle between
	}
	w.occ.waiting.Add(-1)
	cancel()
	if err != nil {
		w.st.acquireErrs[w.r.kind].Add(1)
		pause(ctx, 20*time.Millisecond)
		return
	}
	w.st.acquired[w.r.kind].Add(1)
	s := section{kind: w.r.kind, who: w.who, token: h.token, via: w.sess.server(), start: time.Now()}
	if w.long > 0 && w.rnd.IntN(w.long) == 0 {
		s.long = true
		w.st.long[w.r.kind].Add(1)
		w.work(h, w.timeout+time.Duration(w.rnd.Int64N(int64(w.timeout))))
	} else {
		w.slice(h, time.Duration(w.rnd.Int64N(int64(w.maxHold)))) // the work under the lock
		w.guardedWrite(h)
	}
	s.end = time.Now()
	err = h.release()
	w.occ.holding[w.r.kind].Add(-1)
	endedAt := <-h.ended
	w.settle(&s, h, err, endedAt)
	w.j.add(s)
	w.staleWrite(h)
}

// work is a long section: local work in slices for d, a guarded write
// after each, until d is over or the hold's context ends. A failed write
// does not end it: the worker believes it holds the lock until told
// otherwise, as a careless user would.
func (w *worker) work(h held, d time.Duration) {
	end := time.Now().Add(d)
	w.occ.longUntil.Store(end.UnixNano())
	defer w.occ.longUntil.Store(0)
	for left := time.Until(end); left > 0; left = time.Until(end) {
		if !w.slice(h, min(left, 100*time.Millisecond)) {
			return
		}
		w.guardedWrite(h)
	}
}

// slice is d of local work. It reports false, at once, if the hold's
// context ends meanwhile.
func (w *worker) slice(h held, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.done:
		return false
	case <-t.C:
		return true
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// settle records how the hold ended, and checks that a lost hold was told.
// A hold whose context ended with ErrLockLost was lost when it ended,
// whatever Release said (ErrClosed, once the run closes its Clients).
func (w *worker) settle(s *section, h held, relErr error, endedAt time.Time) {
	lostByCause := h.cause != nil && errors.Is(h.cause(), zklock.ErrLockLost)
	switch {
	case errors.Is(relErr, zklock.ErrLockLost) || lostByCause:
		s.lost = endedAt
		w.st.lost[w.r.kind].Add(1)
		if h.cause != nil && errors.Is(h.cause(), zklock.ErrMaxHold) {
			w.st.maxHoldEnded.Add(1)
		}
		if h.cause != nil && !lostByCause {
			w.j.problem(violUnsignalled+": %s %s: Release reported the loss, but the hold's context ended with %v", s.kind, w.who, h.cause())
		}
	case relErr != nil && !errors.Is(relErr, zklock.ErrClosed):
		w.j.problem("%s %s: Release: %v", s.kind, w.who, relErr)
	}
}

// guardedWrite writes the token to the resource, guarded by the hold's
// node (Hold.Multi). ZooKeeper refuses it once the node is gone, and
// Multi says ErrLockLost; the hold must then be told of its loss within
// the notice time. So too when the write fails because the session
// expired, which took the node with it. A hold that knew of its loss
// already refuses the write itself, which is not counted as ZooKeeper's
// refusal.
func (w *worker) guardedWrite(h held) {
	knewLost := isClosed(h.done)
	res, err := w.fencedSet(h)
	switch {
	case err == nil && len(res) == 1 && res[0].Stat != nil:
		w.j.wrote(fencedWrite{kind: w.r.kind, zxid: res[0].Stat.Mzxid, token: h.token, who: w.who})
		return
	case errors.Is(err, zklock.ErrLockLost):
		if !knewLost {
			w.st.staleBlocked.Add(1)
		}
	case errors.Is(err, zk.ErrSessionExpired):
		w.st.writeErrs.Add(1)
	default:
		w.st.writeErrs.Add(1)
		return
	}
	select {
	case <-h.done:
	case <-time.After(w.notice):
		w.j.problem(violUnsignalled+": %s %s: its node is gone but the hold was not told within %v (%v)", w.r.kind, w.who, w.notice, err)
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// staleWrite replays the hold's guarded write after the release, as any
// process with the hold's check and an old token could: through the
// stale connection (an operator's session), in a transaction behind the
// check of the hold's node. It is refused once the node is gone. A
// Release that met a broken connection leaves the delete to the
// background and returns: until the delete lands the node stands, nobody
// else can hold, and the write is accepted. It then joins the checked
// writes, which must still be in token order.
func (w *worker) staleWrite(h held) {
	data := []byte(strconv.FormatInt(h.token, 10))
	res, err := w.stale.Multi(h.check, &zk.SetDataRequest{Path: w.r.resource, Data: data, Version: -1})
	for _, r := range res {
		if r.Error != nil {
			err = r.Error
			break
		}
	}
	switch {
	case err == nil && len(res) == 2 && res[1].Stat != nil:
		w.st.lateWrites.Add(1)
		w.j.wrote(fencedWrite{kind: w.r.kind, zxid: res[1].Stat.Mzxid, token: h.token, who: w.who + " (after Release)"})
	case errors.Is(err, zk.ErrNoNode):
		w.st.staleBlocked.Add(1)
	default:
		w.st.writeErrs.Add(1)
	}
}

// fencedSet writes h's token to the resource in one transaction guarded
// by h's node (Hold.Multi), on the worker's session. A write that takes
// longer than a session timeout is counted and logged: the worker
// believes it holds all that time.
func (w *worker) fencedSet(h held) ([]zk.MultiResponse, error) {
	data := []byte(strconv.FormatInt(h.token, 10))
	ctx, cancel := context.WithTimeout(context.Background(), w.patient)
	defer cancel()
	start := time.Now()
	res, err := h.multi(ctx, &zk.SetDataRequest{Path: w.r.resource, Data: data, Version: -1})
	if d := time.Since(start); d > w.timeout {
		w.st.slowWrites.Add(1)
		w.j.note("%s: a guarded write took %v (%v)", w.who, d.Round(time.Millisecond), err)
	}
	return res, err
}

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (k kind) label(i int) string { return fmt.Sprintf("s%02d/%s", i, k) }
