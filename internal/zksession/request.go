package zksession

import (
	"context"
	"encoding/binary"
	"sync/atomic"

	"github.com/zklock/zklock/internal/zkwire"
)

// The states of a request's completion: whoever moves it out of
// reqWaiting first (the reader with a reply, a failure, or its caller
// giving up) is the only one to complete it.
const (
	reqWaiting int32 = iota
	reqClaimed
	reqAbandoned
)

// A request is one request from its call to its completion: queued, then
// (once written) in the FIFO of requests in flight.
type request struct {
	op    zkwire.OpCode
	path  string
	frame []byte           // the whole frame; its xid, at frame[4:8], is set when written
	xid   int32            // a special xid set at creation, or the one assigned at write
	resp  zkwire.Decodable // the reply's body, decoded by the reader; nil for none
	wtype zkwire.WatcherType
	watch *Watch              // registered on the reply if the server set it (wtype != 0)
	mode  zkwire.AddWatchMode // for OpAddWatch, recorded on an OK reply
	// registered is set, by the reader before done closes, when watch was.
	registered bool
	state      atomic.Int32
	done       chan struct{} // closed once err (and resp) are final
	err        error
	sent       int64 // when it was written, ns since the session's epoch; set by takeQueued
}

// frameRoom is what a request's frame is given beyond its path's length:
// the length, the header, a create's flags, data of a few dozen bytes and
// the open ACL's scheme and id.
const frameRoom = 96

// newRequest encodes a request; a frame over maxLen, or an invalid
// multi, is refused here, before anything is queued.
func newRequest(op zkwire.OpCode, path string, xid int32, body zkwire.Encodable, resp zkwire.Decodable, maxLen int) (*request, error) {
	buf := make([]byte, 0, frameRoom+len(path)) // one allocation, not a frame grown while encoded
	frame, err := zkwire.AppendRequest(buf, maxLen, zkwire.RequestHeader{Xid: xid, Type: op}, body)
	if err != nil {
		return nil, &Error{Op: op, Path: path, Err: err}
	}
	return &request{op: op, path: path, frame: frame, xid: xid, resp: resp, done: make(chan struct{})}, nil
}

// setXid gives the request its xid, as it is written.
func (r *request) setXid(xid int32) {
	r.xid = xid
	binary.BigEndian.PutUint32(r.frame[4:8], uint32(xid))
}

// complete ends the request with err, if nobody has yet.
func (r *request) complete(err error) bool {
	if !r.state.CompareAndSwap(reqWaiting, reqClaimed) {
		return false
	}
	r.err = err
	close(r.done)
	return true
}

// wait waits for r or for ctx. When ctx ends first, the request is
// abandoned: a reply that comes is read and dropped. When the reader has
// already claimed it, the reply is being decoded: wait for that.
func (r *request) wait(ctx context.Context) error {
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqWaiting, reqAbandoned) {
			return &Error{Op: r.op, Path: r.path, Err: ctx.Err()}
		}
		<-r.done
		return r.err
	}
}

// nextXid returns the xid after x: ordinary xids are positive, from 1
// to MaxInt32 and round again, as the Java client's.
func nextXid(x int32) int32 {
	if x <= 0 || x == 1<<31-1 {
		return 1
	}
	return x + 1
}

// call queues r and waits for its completion or ctx. A request with a
// watch is counted in flight from now on.
func (s *Session) call(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return &Error{Op: r.op, Path: r.path, Err: err}
	}
	s.mu.Lock()
	if s.end != nil {
		s.mu.Unlock()
		return sessionError(r.op, r.path, s.end)
	}
	if r.wtype != 0 {
		s.watches.sent(r)
	}
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	if f, ok := ctx.Value(queuedKey{}).(func()); ok {
		f()
	}
	s.kick()
	return r.wait(ctx)
}

type queuedKey struct{}

// WithQueued returns a copy of ctx under which a call, once its request
// is queued, calls f before it waits: a request another goroutine queues
// after f has been called goes on the wire after this one, and ZooKeeper
// serves it after this one. f is not called for a call that fails before
// its request is queued (a context already done, an ended session).
func WithQueued(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, queuedKey{}, f)
}

// kick wakes the writer, without blocking.
func (s *Session) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// takeQueued moves what is queued into buf and, for ordinary requests
// and SetWatches, into the FIFO in flight, giving ordinary requests
// their xids. Requests abandoned before they were written are dropped.
// s.mu must be held.
func (s *Session) takeQueued(buf []byte, now int64) []byte {
	for i, r := range s.queue {
		s.queue[i] = nil
		if r.state.Load() == reqAbandoned {
			s.watches.settle(r, 0, false)
			continue
		}
		if r.xid == 0 {
			s.xid = nextXid(s.xid)
			r.setXid(s.xid)
		}
		if r.xid != zkwire.XidAuth {
			r.sent = now
			s.pending = append(s.pending, r)
		}
		buf = append(buf, r.frame...)
	}
	s.queue = s.queue[:0]
	return buf
}

// failAll fails every request queued or in flight with the error
// mk(request) gives, each exactly once.
func (s *Session) failAll(mk func(r *request) error) {
	s.mu.Lock()
	reqs := append(s.pending, s.queue...)
	s.pending, s.queue = nil, nil
	s.mu.Unlock()
	for _, r := range reqs {
		s.watches.settle(r, 0, false)
		r.complete(mk(r))
	}
}
