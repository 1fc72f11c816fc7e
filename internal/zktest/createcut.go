package zktest

import (
	"encoding/binary"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// cutReplyTimeout bounds how long a proxy that forwarded a create to cut
// on (see Proxy.CutOnCreate) waits for the server's reply before cutting
// anyway.
const cutReplyTimeout = 2 * time.Second

// maxFrame bounds the frame length a frameScanner accepts: ZooKeeper's
// jute.maxbuffer is 1MB by default, so a longer frame means the stream is
// not ZooKeeper's.
const maxFrame = 64 << 20

// The header sizes frameScanner reads: a request header is xid and
// opcode; of a reply header (xid, zxid, err) only the xid matters here.
const (
	requestHeaderLen = 8
	replyHeaderLen   = 4
)

// createOpcodes are the opcodes of requests that create nodes: create,
// multi, create2, createContainer and createTTL.
var createOpcodes = []int32{1, 14, 15, 19, 21}

// CutOnCreate arms a one-shot cut for the middle of a create: the next
// request that can create a node (create, create2, createContainer,
// createTTL or multi) on any connection of p is forwarded to the server,
// which executes it, but its reply never reaches the client. The proxy
// delivers the server's earlier frames, discards the reply and anything
// after it, and, once the reply has come or after two seconds, closes
// that connection in both directions, as Cut does. The client thus sees
// its connection close without knowing whether the create happened, as
// after a network failure at the worst moment; it is not told that the
// node exists.
//
// The returned channel is closed once the connection carrying the
// create has been closed. Calling CutOnCreate again before then returns
// the same channel; after it, it arms a new cut. An armed proxy whose
// clients create nothing before Close never closes the channel. Pause
// and Cut work as usual on an armed proxy.
func (p *Proxy) CutOnCreate() <-chan struct{} {
	return p.CutOnRequest(cutReplyTimeout, createOpcodes...)
}

// CutOnRequest arms a one-shot cut like CutOnCreate's for the next request
// whose opcode is one of ops (ZooKeeper's OpCode numbers: 1 create, 2
// delete, 3 exists, 4 getData, 8 getChildren, 9 sync, 12 getChildren2,
// 14 multi...), and cuts the connection once its reply has come or wait
// after it was forwarded, whichever comes first: a short wait, such as a
// tenth of a second, cuts a request the server cannot answer at once (a
// write through a follower that lags, say) before its outcome is known
// anywhere. CutOnCreate is CutOnRequest with a wait of two seconds and
// the opcodes that create. Calling CutOnRequest again with the same wait
// and opcodes before the cut is claimed returns the same channel;
// otherwise it arms a new cut in place of the one armed (whose channel
// then never closes).
func (p *Proxy) CutOnRequest(wait time.Duration, ops ...int32) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == nil || p.armed.claimed.Load() || !p.armed.same(wait, ops) {
		p.armed = newCutTrigger(wait, ops)
	}
	return p.armed.done
}

// CutOnCreate arms the cut of Proxy.CutOnCreate on every proxy of f at
// once: the first create through any of them is cut, and the others are
// then disarmed. The channel is closed once that create's connection has
// been closed. Calling it again before then returns the same channel. A
// proxy of f armed by its own Proxy.CutOnCreate is re-armed for f's cut
// (its own channel then never closes).
func (f *Faults) CutOnCreate() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	var t *cutTrigger
	for _, p := range f.proxies {
		if t = p.armedTrigger(); t != nil {
			break
		}
	}
	if t == nil || !t.same(cutReplyTimeout, createOpcodes) {
		t = newCutTrigger(cutReplyTimeout, createOpcodes)
	}
	for _, p := range f.proxies {
		p.arm(t)
	}
	return t.done
}

// cutTrigger is a cut armed on one or more proxies; the first connection
// to claim it carries the cut.
type cutTrigger struct {
	ops     map[int32]bool // the opcodes of the requests it cuts on; written once
	wait    time.Duration  // how long the reply is waited for; written once
	claimed atomic.Bool    // a connection has claimed the cut
	done    chan struct{}  // closed by fire
	once    sync.Once
}

func newCutTrigger(wait time.Duration, ops []int32) *cutTrigger {
	return &cutTrigger{ops: opSet(ops), wait: wait, done: make(chan struct{})}
}

// same reports whether t cuts on exactly the opcodes ops, after wait.
func (t *cutTrigger) same(wait time.Duration, ops []int32) bool {
	return t.wait == wait && maps.Equal(t.ops, opSet(ops))
}

// opSet returns the set of ops.
func opSet(ops []int32) map[int32]bool {
	set := make(map[int32]bool, len(ops))
	for _, op := range ops {
		set[op] = true
	}
	return set
}

func (t *cutTrigger) fire() { t.once.Do(func() { close(t.done) }) }

// createCut is the cut a connection claimed: the xid of its request (a
// create, for CutOnCreate).
type createCut struct {
	xid     int32
	trigger *cutTrigger
}

// armedTrigger returns p's armed, unclaimed trigger, or nil.
func (p *Proxy) armedTrigger() *cutTrigger {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == nil || p.armed.claimed.Load() {
		return nil
	}
	return p.armed
}

// arm arms p with t.
func (p *Proxy) arm(t *cutTrigger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = t
}

// claimCut, if p is armed for a request of opcode op, disarms p and, if
// its trigger was still unclaimed, gives it to pc for the request with
// the given xid, bounding the wait for the reply.
func (p *Proxy) claimCut(pc *proxyConn, xid, op int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.armed
	if t == nil || !t.ops[op] {
		return false
	}
	p.armed = nil
	if !t.claimed.CompareAndSwap(false, true) {
		return false
	}
	pc.cut.Store(&createCut{xid: xid, trigger: t})
	if pc.upstream != nil {
		// A bound in case the rest of the request never comes; once it
		// has been forwarded, forwarded starts the wait.
		pc.upstream.SetReadDeadline(time.Now().Add(max(t.wait, cutReplyTimeout)))
	}
	return true
}

// forwarded runs after pc's client-to-server pipe has forwarded a chunk:
// once that completed the request pc cuts on, the server has it, and the
// wait for its reply begins.
func (p *Proxy) forwarded(pc *proxyConn) {
	if !pc.upCut || pc.upLeft > 0 || pc.upWaited {
		return
	}
	pc.upWaited = true
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc.upstream != nil {
		pc.upstream.SetReadDeadline(time.Now().Add(pc.cut.Load().trigger.wait))
	}
}

// filterUp returns the part of b, read from pc's client, to forward to
// the server. It follows the requests' frames and, on the first request
// of an opcode p is armed for (one that creates, for CutOnCreate), claims
// the cut: it then forwards the rest of that request and nothing after
// it. Only pc's client-to-server pipe calls it.
func (p *Proxy) filterUp(pc *proxyConn, b []byte) []byte {
	if pc.upCut {
		n := min(pc.upLeft, len(b))
		pc.upLeft -= n
		return b[:n]
	}
	s := &pc.up
	for off := 0; off < len(b) && !s.broken; {
		n, done := s.advance(b[off:])
		off += n
		if !done || s.frames == 1 || s.n < 4+requestHeaderLen {
			continue
		}
		if p.claimCut(pc, s.word(4), s.word(8)) {
			pc.upCut = true
			n := min(s.body, len(b)-off)
			pc.upLeft = s.body - n
			return b[:off+n]
		}
	}
	return b
}

// filterDown returns the part of b, read from the server, to forward to
// pc's client, and whether to cut the connection now. It follows the
// replies' frames; once pc has claimed a cut, it holds back each frame's
// head until it is complete and stops at the head of the create's reply.
// Only pc's server-to-client pipe calls it.
func (p *Proxy) filterDown(pc *proxyConn, b []byte) ([]byte, bool) {
	if sess, ok := pc.hi.add(b); ok {
		sess.Server = p.target
		p.sessions.set(sess)
		p.mu.Lock()
		pc.sid = sess.ID
		p.mu.Unlock()
	}
	s := &pc.down
	cut := pc.cut.Load()
	if cut == nil {
		// The create's reply cannot be in b: b was read before the
		// create was forwarded, which happens after the claim.
		s.skim(b)
		s.sent = s.n
		return b, false
	}
	var out []byte
	for off := 0; off < len(b) && !s.broken; {
		inBody := s.complete && s.body > 0
		n, done := s.advance(b[off:])
		if inBody {
			out = append(out, b[off:off+n]...)
		}
		off += n
		if !done {
			continue
		}
		if s.frames > 1 && s.n >= 4+replyHeaderLen && s.word(4) == cut.xid {
			return out, true
		}
		out = append(out, s.head[s.sent:s.n]...)
		s.sent = s.n
	}
	return out, false
}

// frameScanner follows the length-prefixed frames of one direction of a
// ZooKeeper connection across reads: each frame is a 4-byte big-endian
// length, then that many bytes. Every frame but the first (the connect
// request or response) starts with a header of hdrLen bytes. A frame's
// head is its length and header.
type frameScanner struct {
	hdrLen   int      // header bytes after the length, in frames after the first
	head     [12]byte // the current frame's head
	n        int      // bytes of head read
	want     int      // bytes of head wanted: 4 until the length is known
	sent     int      // bytes of head forwarded (filterDown)
	body     int      // bytes of the current frame after its head still to come
	complete bool     // the current frame's head is complete
	frames   int      // frames whose head is complete
	broken   bool     // a length made no sense: scanning stopped
}

// advance consumes bytes from the start of b, up to the end of the
// current frame's head or body, and returns how many, and whether they
// completed a frame's head (then in head[:n]).
func (s *frameScanner) advance(b []byte) (int, bool) {
	if s.complete {
		if s.body > 0 {
			n := min(s.body, len(b))
			s.body -= n
			return n, false
		}
		s.n, s.sent, s.complete = 0, 0, false
	}
	if s.n < 4 {
		s.want = 4
	}
	n := copy(s.head[s.n:s.want], b)
	s.n += n
	if s.n < s.want {
		return n, false
	}
	if s.want == 4 {
		length := int32(binary.BigEndian.Uint32(s.head[:4]))
		if length < 0 || length > maxFrame {
			s.broken = true
			return n, false
		}
		hdr := s.hdrLen
		if s.frames == 0 {
			hdr = 0
		}
		s.want = 4 + min(hdr, int(length))
		s.body = int(length) - (s.want - 4)
		if s.n < s.want {
			return n, false
		}
	}
	s.complete = true
	s.frames++
	return n, true
}

// skim advances over all of b.
func (s *frameScanner) skim(b []byte) {
	for off := 0; off < len(b) && !s.broken; {
		n, _ := s.advance(b[off:])
		off += n
	}
}

// atBoundary reports whether the bytes scanned so far end where a frame
// ends (or before the first), so that a whole frame may follow them.
func (s *frameScanner) atBoundary() bool {
	return !s.broken && (s.n == 0 || s.complete && s.body == 0)
}

// word returns the big-endian int32 at offset off of the head.
func (s *frameScanner) word(off int) int32 {
	return int32(binary.BigEndian.Uint32(s.head[off : off+4]))
}
