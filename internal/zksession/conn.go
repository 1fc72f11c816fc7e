package zksession

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/zklock/zklock/internal/zkwire"
)

// This file is the connection: its loop of one writer and one reader, as
// ClientCnxn's SendThread runs it. dial.go opens it.

// A conn is one connection of the session. fail closes it once, keeping
// the first error.
type conn struct {
	nc   net.Conn
	addr string
	br   *bufio.Reader
	once sync.Once
	err  error // written once by fail, read after the writer has stopped
}

func (c *conn) fail(err error) {
	c.once.Do(func() {
		c.err = err
		c.nc.Close()
	})
}

// errXidOrder ends a connection whose server answered out of order.
var errXidOrder = errors.New("zksession: reply xid out of order")

// serve runs a connection the handshake opened: it announces the session
// connected, queues, in front of what waits, the auth packets and the
// SetWatches batches, starts the writer, and reads until the connection
// fails. It returns why.
func (s *Session) serve(c *conn) error {
	s.announce(StateConnected)
	s.prime()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s.writeLoop(c, stop)
	}()
	c.fail(s.readLoop(c))
	close(stop)
	<-stopped
	return c.err
}

// prime puts in front of the queue what a connection sends first: auth,
// then SetWatches with the last zxid of a reply (read now, with nothing
// in flight, so no reply can move it meanwhile).
func (s *Session) prime() {
	var first []*request
	for _, a := range s.cfg.Auth {
		r, _ := newRequest(zkwire.OpAuth, "", zkwire.XidAuth, zkwire.AuthPacket{Scheme: a.Scheme, Auth: a.Auth}, nil, 0)
		first = append(first, r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pings = s.pings[:0] // the last connection's were lost with it
	bodies, op := s.watches.setWatches(s.lastZxid)
	for _, sw := range bodies {
		r, err := newRequest(op, "", zkwire.XidSetWatches, sw, nil, 0)
		if err == nil {
			first = append(first, r)
		}
	}
	s.queue = append(first, s.queue...)
	s.kick()
}

// writeLoop writes what is queued, all of it in one write, as soon as it
// is queued, and a ping when nothing has been sent for T/3. The first
// ping is due T/3 after the ConnectRequest was written, not after the
// handshake ended: the read timeout counts from that write (see
// readLoop), and a slow handshake must not eat the ping's time.
func (s *Session) writeLoop(c *conn, stop <-chan struct{}) {
	var buf []byte
	ping, _ := zkwire.AppendRequest(nil, 0, zkwire.RequestHeader{Xid: zkwire.XidPing, Type: zkwire.OpPing}, nil)
	lastSend := s.lastHeard() // the ConnectRequest's write
	timer := time.NewTimer(s.pingEvery() - time.Since(lastSend))
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.wake:
			s.gather()
		case <-timer.C:
		}
		every := s.pingEvery()
		writing := time.Now() // before the write: what it sends is heard no earlier
		now := int64(writing.Sub(s.epoch))
		s.mu.Lock()
		buf = s.takeQueued(buf[:0], now)
		if len(buf) == 0 && time.Since(lastSend) >= every {
			buf = append(buf, ping...)
			s.pings = append(s.pings, now)
		}
		s.mu.Unlock()
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(2 * s.Timeout() / 3))
			if _, err := c.nc.Write(buf); err != nil {
				c.fail(err)
				return
			}
			lastSend = writing // a write that blocked does not put the next ping off
		}
		buf = reusable(buf)
		timer.Reset(every - time.Since(lastSend))
	}
}

// gather lets the callers the reader has just woken queue their next
// requests before the writer takes the queue, so that they go out in one
// write: it yields once, and only while requests are in flight, when
// whatever it delays waits behind their replies anyway. At 64 callers
// pipelining, it halves the writes per request (BenchmarkTransport).
func (s *Session) gather() {
	s.mu.Lock()
	inflight := len(s.pending)
	s.mu.Unlock()
	if inflight > 0 {
		runtime.Gosched()
	}
}

// readLoop reads frames until one fails or breaks the protocol:
// notifications go to the watches, a ping's reply tells when the server
// heard us, an auth failure ends the session, and every other reply
// completes the head of the FIFO.
//
// Its read timeout is 2T/3 after the session was last heard, when the
// newest request or ping that has been answered was written, not 2T/3
// after the last byte read, as the Java client's is: a server that keeps
// sending (notifications of a persistent watch, replies to requests
// written long ago) while it hears nothing from us would otherwise keep a
// connection whose session it expires T after it last heard us, before
// the session's owner is told of any doubt. Pings, every T/3 when nothing
// else is written, keep heard within T/3 of now, and the server then
// expires the session no sooner than T/3 after this timeout.
func (s *Session) readLoop(c *conn) error {
	var buf []byte
	var d zkwire.Decoder
	for {
		c.nc.SetReadDeadline(s.lastHeard().Add(2 * s.Timeout() / 3))
		payload, err := zkwire.ReadFrame(c.br, buf, s.maxReply())
		var big *zkwire.FrameSizeError
		if errors.As(err, &big) && big.Len > 0 {
			if err := s.skipReply(c, big); err != nil {
				return err
			}
			s.recv.Store(int64(time.Since(s.epoch)))
			continue
		}
		if err != nil {
			return err
		}
		buf = reusable(payload)
		s.recv.Store(int64(time.Since(s.epoch)))
		d.Reset(payload, s.maxReply())
		var h zkwire.ReplyHeader
		if err := h.Decode(&d); err != nil {
			return err
		}
		switch h.Xid {
		case zkwire.XidPing:
			s.pingAnswered()
		case zkwire.XidNotification:
			err = s.notification(h, &d)
		case zkwire.XidAuth:
			if h.Err == zkwire.CodeAuthFailed {
				err = ErrAuthFailed
			}
		default:
			err = s.reply(h, &d)
		}
		if err != nil {
			return err
		}
	}
}

// maxKept is the largest buffer a connection's reader or writer keeps for
// its next frame or write. A larger one, grown for a listing of a long
// queue or a burst of requests, is let go once used: a session that once
// read a listing of thousands of children does not hold its size for the
// rest of its life (with a thousand sessions, that was tens of
// megabytes), and the next large frame gets a buffer of its own, as the
// Java client gives every packet.
const maxKept = 16 << 10

// reusable returns buf for reuse, or nil if it is larger than maxKept.
func reusable(buf []byte) []byte {
	if cap(buf) > maxKept {
		return nil
	}
	return buf
}

// pingAnswered records the reply to the oldest ping in flight. s.mu must
// not be held.
func (s *Session) pingAnswered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pings) > 0 {
		s.heardAt(s.pings[0])
		s.pings = s.pings[1:]
	}
}

// pingEvery is how long the writer lets pass without sending before it
// pings: T/3, and at most 10 s.
func (s *Session) pingEvery() time.Duration { return min(s.Timeout()/3, 10*time.Second) }

// lastHeard is when the server last heard the session, as far as its
// answers prove (see heard).
func (s *Session) lastHeard() time.Time { return s.epoch.Add(time.Duration(s.heard.Load())) }

// heardAt records that the server answered what was written at sent (ns
// since epoch). Only the reading goroutine calls it.
func (s *Session) heardAt(sent int64) {
	if sent > s.heard.Load() {
		s.heard.Store(sent)
	}
}

// defaultMaxReply is Config.MaxReply's default.
const defaultMaxReply = 64 << 20

func (s *Session) maxReply() int {
	if s.cfg.MaxReply > 0 {
		return s.cfg.MaxReply
	}
	return defaultMaxReply
}

// skipReply reads past a reply over the limit, big, and fails the request
// at the head of the FIFO, whose reply it is (its header says so), with
// an error wrapping big; the connection goes on. A watch the request set
// on the server is not registered: its event, if any, finds no Watch.
func (s *Session) skipReply(c *conn, big *zkwire.FrameSizeError) error {
	const headerLen = 16
	if big.Len < headerLen {
		return big
	}
	hb := make([]byte, headerLen)
	if _, err := io.ReadFull(c.br, hb); err != nil {
		return err
	}
	var d zkwire.Decoder
	d.Reset(hb, headerLen)
	var h zkwire.ReplyHeader
	if err := h.Decode(&d); err != nil {
		return err
	}
	if _, err := io.CopyN(io.Discard, c.br, big.Len-headerLen); err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.pending) == 0 || s.pending[0].xid != h.Xid {
		s.mu.Unlock()
		return fmt.Errorf("%w: got %d", errXidOrder, h.Xid)
	}
	r := s.pending[0]
	s.pending[0] = nil
	s.pending = s.pending[1:]
	s.heardAt(r.sent)
	if h.Zxid > s.lastZxid {
		s.lastZxid = h.Zxid
	}
	s.mu.Unlock()
	s.watches.settle(r, 0, false)
	r.complete(&Error{Op: r.op, Path: r.path, Err: big})
	return nil
}

// notification delivers a watch event. A session event saying Expired
// (which a server sends to a session it expires while connected) ends
// the session.
func (s *Session) notification(h zkwire.ReplyHeader, d *zkwire.Decoder) error {
	var ev zkwire.WatcherEvent
	if err := ev.Decode(d); err != nil {
		return err
	}
	if ev.Type == zkwire.EventNone {
		if ev.State == zkwire.StateExpired {
			return fmt.Errorf("server sent an Expired event: %w", ErrSessionExpired)
		}
		return nil
	}
	e := Event{Type: ev.Type, State: ev.State, Path: ev.Path, Zxid: h.Zxid}
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(e) // first, so that it hears notifications in wire order
	}
	s.watches.fire(e)
	return nil
}

// reply completes the head of the FIFO with a reply: its xid must be
// the head's. The last zxid moves only here, and only forward from a
// positive zxid. A reply whose caller gave up is read and dropped.
func (s *Session) reply(h zkwire.ReplyHeader, d *zkwire.Decoder) error {
	s.mu.Lock()
	if len(s.pending) == 0 || s.pending[0].xid != h.Xid {
		s.mu.Unlock()
		return fmt.Errorf("%w: got %d", errXidOrder, h.Xid)
	}
	r := s.pending[0]
	s.pending[0] = nil
	s.pending = s.pending[1:]
	s.heardAt(r.sent)
	if h.Zxid > s.lastZxid { // only forward: a server never goes back, and a stale reply must not move it
		s.lastZxid = h.Zxid
	}
	s.mu.Unlock()
	if r.op == zkwire.OpAddWatch && h.Err == zkwire.CodeOK {
		// Recorded here, before anything more is read, and whether or
		// not its caller still waits: the table must match the server's
		// watches when the next connection sets them again.
		s.watches.addPersistent(r.path, r.mode)
	}
	if !r.state.CompareAndSwap(reqWaiting, reqClaimed) {
		// Its caller gave up: a watch the server set for it is
		// registered nowhere, and is removed unless the session needs
		// the server's watch for another. The count and the removal's
		// queueing under s.mu, as unwatch's (see there).
		s.mu.Lock()
		if _, orphan := s.watches.settleOrphan(r, h.Err, false); orphan != 0 {
			s.queueRemoval(r.path, orphan)
		}
		s.mu.Unlock()
		return nil
	}
	if err := zkwire.DecodeReplyBody(d, h, r.resp); err != nil {
		s.watches.settle(r, 0, false)
		r.err = &Error{Op: r.op, Path: r.path, Code: zkwire.CodeMarshallingError, Err: err}
		close(r.done)
		return err
	}
	r.registered = s.watches.settle(r, h.Err, true)
	if h.Err != zkwire.CodeOK {
		r.err = &Error{Op: r.op, Path: r.path, Code: h.Err}
	}
	close(r.done)
	return nil
}
