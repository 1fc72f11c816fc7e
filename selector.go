package zklock

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// Selector is leader election in the layout of Curator's LeaderSelector,
// which is an InterProcessMutex on the election's path: a Go Selector, a
// Java LeaderSelector and a Java InterProcessMutex on the same path take
// part in one election. The leader is the holder of the lock, and leads
// while its function runs.
//
// A participant's node is "_c_<uuid>-lock-<seq10>" and holds its id, or,
// with an empty id, the Client's node data ([WithNodeData]; by default the
// host's IP address, as Curator's LeaderSelector without setId).
//
// A Selector is safe for concurrent use; each Lead or Run is a participant
// of its own. Leadership ends as a [Mutex] hold ends: when the function
// returns, and when the hold is lost (under StandardPolicy a suspension,
// under SessionPolicy the session's loss, under both the node's deletion
// or the Client's Close); the function's context is then cancelled with
// the cause, and it must stop leading. Unlike Curator's LeaderSelector,
// there is no thread to interrupt and no requeue flag to lose: [Selector.Run]
// queues again after every term, for as long as its context lasts
// (Curator's autoRequeue), and [Selector.Lead] leads once.
type Selector struct {
	// Written once by NewSelector, read-only after.
	m  *Mutex
	id string

	terms atomic.Int32 // terms that stand, taken through this Selector
}

// NewSelector returns a Selector on path, relative to the Client's
// namespace, for the participant id, which becomes the data of the
// participant's node (an empty id: the Client's node data). It takes the
// options NewElection takes: [WithMaxHold] bounds each term, and
// [WithLayout] makes it a kazoo Election. It does no
// I/O. Its errors are [NewElection]'s.
func NewSelector(c *Client, path, id string, opts ...LockOption) (*Selector, error) {
	li, err := electionEngine(c, "selector", path, id, "lock-", opts)
	if err != nil {
		return nil, err
	}
	o := lockOptions{maxHold: li.maxHold, driver: li.driver, fast: li.fast, layout: layoutOf(li.driver)}
	if id != "" {
		o.data = []byte(id)
	}
	m, err := newMutex(c, path, li.lockName, "", 1, o)
	if err != nil {
		return nil, err
	}
	m.kind = RecipeSelector
	s := &Selector{m: m, id: id}
	// Its terms are holds of the lock, which a Mutex of the same Client and
	// path sees; IsLeader counts this Selector's own.
	m.live = alsoCount{m.live, &s.terms}
	return s, nil
}

// Lead waits until the participant leads, runs fn, and resigns when fn
// returns: one term, as [Mutex.Do]. fn's context ends as soon as ctx ends
// or the leadership is lost, with that cause (see [Hold.Bind]). Lead
// returns the error of the wait (wrapping ctx.Err(), ErrClosed or the
// ZooKeeper error; no node is left behind), or else fn's error joined with
// the resignation's, which wraps ErrLockLost if the leadership was lost.
// If fn panics, Lead resigns and the panic goes on. A nil fn gives
// ErrInvalidArgument. Inside fn, [Selector.Term] with fn's context
// returns the term's Hold, to fence the leader's writes ([Hold.Token],
// [Hold.Multi]).
func (s *Selector) Lead(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := valid(ctx, s, "lead"); err != nil {
		return err
	}
	if fn == nil {
		return wrapf(ErrInvalidArgument, "lead %s: nil function", s.m.path)
	}
	hd, err := s.m.Lock(ctx)
	if err != nil {
		return err
	}
	return s.term(ctx, hd, fn)
}

// termKey is the context key under which Lead and Run give fn its term's
// Hold (see Selector.Term).
type termKey struct{ s *Selector }

// term runs fn for the term hd, with hd reachable through Term.
func (s *Selector) term(ctx context.Context, hd *Hold, fn func(ctx context.Context) error) error {
	return hd.run(context.WithValue(ctx, termKey{s}, hd), fn)
}

// Term returns the Hold of the term that ctx carries: ctx is the context
// that [Selector.Lead] or [Selector.Run] gave its function, or one derived
// from it. The leader fences its writes with it, as any holder does:
// [Hold.Token] is the term's fencing token, which grows from each term to
// the next, [Hold.Multi] writes only while the term stands, and
// [Hold.CheckOp] guards a transaction of your own. Lead and Run release
// the Hold when the function returns; a Release through it resigns at
// once (the function should then return, and its term ends as if it had).
// Term returns an error wrapping ErrNotHeld if ctx carries no term of s,
// and the Hold of an ended term reports its end (see [Hold.Err]).
func (s *Selector) Term(ctx context.Context) (*Hold, error) {
	if err := valid(ctx, s, "term"); err != nil {
		return nil, err
	}
	hd, ok := ctx.Value(termKey{s}).(*Hold)
	if !ok {
		return nil, errorf(ErrNotHeld, "term %s: the context carries no term of this Selector: use the context that Lead or Run gave the function", s.m.path)
	}
	return hd, nil
}

// Run leads again and again: it waits for the leadership, runs fn while it
// leads, resigns when fn returns, and queues again at the end of the
// queue, until ctx ends or the Client closes. A term ends when fn returns
// nil (fn gives the leadership up, as Curator's takeLeadership returning)
// or when the leadership is lost (fn's context is then cancelled with a
// cause wrapping ErrLockLost, and whatever fn returns is taken for that
// loss); Run then queues again at once. A term also ends when fn returns
// an error while the leadership stands (Curator's takeLeadership
// throwing), or when the resignation fails: Run logs the error on the
// Client's logger at Error level, with the path, resigns, waits for the
// connection and a back-off (the retry policy's first wait), so that a
// function that fails at once does not spin, and queues again. A wait that
// fails on the network, or a node that vanishes, is retried the same way,
// without limit: Run is meant to keep a participant in the election for
// the life of the process.
//
// Run returns an error wrapping ctx.Err() once ctx ends (and
// ErrNotConnected if the Client is not connected then), ErrClosed once the
// Client is closed, or the error of a wait that failed other than on the
// network, which waiting again would not cure (one wrapping zk.ErrNoAuth,
// say); it never returns fn's error, and never nil. If fn panics, Run
// resigns and the panic goes on. A nil fn gives ErrInvalidArgument.
// Inside fn, [Selector.Term] with fn's context returns the term's Hold,
// to fence the term's writes.
func (s *Selector) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := valid(ctx, s, "run"); err != nil {
		return err
	}
	if fn == nil {
		return wrapf(ErrInvalidArgument, "run %s: nil function", s.m.path)
	}
	for {
		hd, err := s.m.Lock(ctx)
		if err == nil {
			err = s.term(ctx, hd, fn)
			if err == nil || errors.Is(hd.Err(), ErrLockLost) {
				continue // a term ended: queue again
			}
		}
		if ctx.Err() != nil {
			return opErr(ctx, "run", s.m.path, s.m.c.offline(ctx, ctx.Err()))
		}
		switch {
		case hd == nil && !requeues(err): // a wait that cannot succeed
			return err
		case hd != nil && errors.Is(hd.Err(), ErrLockLost): // only under the norequeue mutant
			return err
		case hd != nil: // fn failed, or the resignation did, while the leadership stood
			if cerr := s.m.c.usable(); cerr != nil {
				return wrapf(cerr, "run %s", s.m.path)
			}
			s.m.c.log.Error("zklock: leader's function failed; queueing again", "path", s.m.path, "err", err)
		}
		if err := s.pause(ctx); err != nil {
			return err
		}
	}
}

// requeues reports whether Run queues again after a wait that failed with
// err: a failure of the network, or a node that vanished too often.
func requeues(err error) bool {
	return retryable(err) || errors.Is(err, zk.ErrNoNode) || errors.Is(err, ErrLockLost) || errors.Is(err, ErrNotConnected)
}

// pause waits, before Run queues again after a failed wait or a failed
// term, for the connection and then for a back-off.
func (s *Selector) pause(ctx context.Context) error {
	c := s.m.c
	if err := c.awaitConnected(ctx, 0, 0); err != nil {
		return opErr(ctx, "run", s.m.path, c.offline(ctx, err))
	}
	select {
	case <-backOff(c):
		return nil
	case <-ctx.Done():
		return opErr(ctx, "run", s.m.path, c.offline(ctx, ctx.Err()))
	case <-c.closing:
		return wrapf(ErrClosed, "run %s", s.m.path)
	}
}

// Leader returns the id of the current leader (the data of the first node
// that exists when read), or an error wrapping ErrNoLeader when no one
// takes part; see [Election.Leader].
func (s *Selector) Leader(ctx context.Context) (string, error) {
	if err := usable(ctx, s, "leader"); err != nil {
		return "", err
	}
	return leaderOf(ctx, &s.m.li, s.m.path)
}

// Participants returns the participants in queue order, the leader first;
// see [Election.Participants].
func (s *Selector) Participants(ctx context.Context) ([]Participant, error) {
	if err := usable(ctx, s, "participants"); err != nil {
		return nil, err
	}
	return participantsOf(ctx, &s.m.li, s.m.path)
}

// IsLeader reports whether a term run through s stands: a local fact,
// with no ZooKeeper read.
func (s *Selector) IsLeader() bool {
	return s != nil && s.terms.Load() > 0
}

// Path returns the election's path, relative to the namespace.
func (s *Selector) Path() string {
	if s == nil || s.m == nil {
		return ""
	}
	return s.m.path
}

// ID returns the participant id given to NewSelector.
func (s *Selector) ID() string {
	if s == nil {
		return ""
	}
	return s.id
}

// site implements recipe. Lead, Term and Run check it as valid, no more:
// on a closed Client their acquire fails, and tells it (see acquiring).
func (s *Selector) site() (*Client, string, string) {
	const notMade = "Selector not made by NewSelector"
	if s == nil || s.m == nil {
		return nil, "", notMade
	}
	return s.m.c, s.m.path, notMade
}
