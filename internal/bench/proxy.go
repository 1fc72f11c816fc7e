package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ZooKeeper's wire protocol, client to server: every message is a frame of
// a 4-byte big-endian length and that many bytes. The first frame of a
// connection is the connect request; every later one starts with an int32
// xid and an int32 op code.
const (
	opPing      = 11 // sent with xid -2 while the client is idle
	maxFrame    = 64 << 20
	dialTimeout = 5 * time.Second
)

// opNames names ZooKeeper's op codes (ZooDefs.OpCode).
func opNames() map[int32]string {
	return map[int32]string{
		0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData",
		5: "setData", 6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync",
		11: "ping", 12: "getChildren2", 13: "check", 14: "multi", 15: "create2",
		16: "reconfig", 17: "checkWatches", 18: "removeWatches", 19: "createContainer",
		20: "deleteContainer", 21: "createTTL", 22: "multiRead", 100: "setAuth",
		101: "setWatches", 102: "sasl", 103: "getEphemerals", 104: "getAllChildrenNumber",
		105: "setWatches2", 106: "addWatch", 107: "whoAmI", -10: "createSession",
		-11: "closeSession", -1: "error",
	}
}

// opName names op code op.
func opName(op int32) string {
	if n, ok := opNames()[op]; ok {
		return n
	}
	return fmt.Sprintf("op%d", op)
}

// opCounts counts requests by op code.
type opCounts map[int32]int64

// total is the number of requests.
func (c opCounts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// minus returns c - base, op by op.
func (c opCounts) minus(base opCounts) opCounts {
	out := make(opCounts)
	for op, n := range c {
		if d := n - base[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// plus returns c + o, op by op.
func (c opCounts) plus(o opCounts) opCounts {
	out := maps.Clone(c)
	if out == nil {
		out = make(opCounts)
	}
	for op, n := range o {
		out[op] += n
	}
	return out
}

// named returns the counts keyed by op name, sorted for printing.
func (c opCounts) named() map[string]int64 {
	out := make(map[string]int64, len(c))
	ops := make([]int32, 0, len(c))
	for op := range c {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	for _, op := range ops {
		out[opName(op)] = c[op]
	}
	return out
}

// countingProxy forwards TCP connections to a ZooKeeper server, each byte
// after a fixed delay in each direction (none if zero), and counts the
// requests clients send, by op code; pings and connect requests are not
// counted. Its methods are safe for concurrent use.
type countingProxy struct {
	target string
	delay  time.Duration // one way
	ln     net.Listener
	wg     sync.WaitGroup

	down atomic.Int64 // bytes forwarded from the server to clients

	mu       sync.Mutex
	counts   opCounts
	connects int64
	conns    map[net.Conn]struct{}
	closed   bool
}

// newCountingProxy listens on a free port of 127.0.0.1 and forwards every
// connection to target, delaying what it forwards by delay each way. The
// caller must Close it.
func newCountingProxy(target string, delay time.Duration) (*countingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting proxy: listen: %w", err)
	}
	p := &countingProxy{target: target, delay: delay, ln: ln, counts: make(opCounts), conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients connect to.
func (p *countingProxy) Addr() string { return p.ln.Addr().String() }

// Snapshot returns the counts so far, and the number of connect requests.
func (p *countingProxy) Snapshot() (opCounts, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts), p.connects
}

// Down returns how many bytes the proxy has forwarded from the server to
// its clients: replies and notifications.
func (p *countingProxy) Down() int64 { return p.down.Load() }

// Close stops listening, closes every connection and waits for the
// proxy's goroutines. It is idempotent.
func (p *countingProxy) Close() error {
	p.mu.Lock()
	var err error
	if !p.closed {
		p.closed = true
		err = p.ln.Close()
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("counting proxy: %w", err)
	}
	return nil
}

// track records c as open, or closes it and reports false if the proxy is.
func (p *countingProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (p *countingProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Close()
	delete(p.conns, c)
}

// acceptLoop serves connections until the listener closes.
func (p *countingProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve forwards one connection both ways, each after the proxy's delay,
// counting what the client sends. Either side's end is passed on once
// what came before it has been delivered.
func (p *countingProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	up, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil || !p.track(up) {
		return // the client sees its connection close
	}
	defer p.untrack(up)
	toClient, toServer := newDelayedWriter(client, p.delay), newDelayedWriter(up, p.delay)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(toClient, countedReader{up, &p.down})
		toClient.Close()
	}()
	_ = p.countFrames(toServer, client)
	toServer.Close()
	<-done
}

// countedReader adds what it reads to n.
type countedReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countedReader) Read(b []byte) (int, error) {
	k, err := c.r.Read(b)
	c.n.Add(int64(k))
	return k, err
}

// errDelivery is returned by a delayedWriter's Write once a delivery has
// failed.
var errDelivery = errors.New("delayed delivery failed")

// delayedWriter writes to dst what it is given, each chunk delay after
// the Write that gave it: a fixed latency, not a cap on throughput. Each
// chunk is stamped on arrival and released at its own deadline, so that
// chunks queued behind a late one go out at once, and the timer's
// granularity (about 1ms here) adds to the delay but never accumulates.
// One goroutine calls Write and then Close.
type delayedWriter struct {
	dst    io.WriteCloser
	delay  time.Duration
	queue  chan delayedChunk // closed by Close
	failed chan struct{}     // closed once a write to dst fails
	done   chan struct{}     // closed once the queue is drained
}

// delayedChunk is a chunk and the time it is due.
type delayedChunk struct {
	due time.Time
	b   []byte
}

// newDelayedWriter returns a writer to dst with the given delay; with
// none it writes through.
func newDelayedWriter(dst io.WriteCloser, delay time.Duration) *delayedWriter {
	w := &delayedWriter{dst: dst, delay: delay}
	if delay > 0 {
		w.queue, w.failed, w.done = make(chan delayedChunk, 4096), make(chan struct{}), make(chan struct{})
		go w.deliver()
	}
	return w
}

// Write queues a copy of b, due delay from now.
func (w *delayedWriter) Write(b []byte) (int, error) {
	if w.delay <= 0 {
		return w.dst.Write(b)
	}
	select {
	case w.queue <- delayedChunk{due: time.Now().Add(w.delay), b: bytes.Clone(b)}:
		return len(b), nil
	case <-w.failed:
		return 0, errDelivery
	}
}

// Close waits until every queued chunk is delivered (or dropped after a
// failure), then closes dst.
func (w *delayedWriter) Close() error {
	if w.delay > 0 {
		close(w.queue)
		<-w.done
	}
	return w.dst.Close()
}

// deliver writes each chunk at its deadline, until the queue is closed.
func (w *delayedWriter) deliver() {
	defer close(w.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for c := range w.queue {
		if d := time.Until(c.due); d > 0 {
			t.Reset(d)
			<-t.C
		}
		if _, err := w.dst.Write(c.b); err != nil {
			close(w.failed)
			for range w.queue { // unblock Write until Close
			}
			return
		}
	}
}

// countFrames copies frames from src to dst until either fails, counting
// each request after the first frame (the connect request) by op code,
// except pings.
func (p *countingProxy) countFrames(dst io.Writer, src io.Reader) error {
	r := bufio.NewReaderSize(src, 64<<10)
	var buf []byte
	for first := true; ; first = false {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			return fmt.Errorf("frame of %d bytes", n)
		}
		if cap(buf) < 4+int(n) {
			buf = make([]byte, 4+int(n))
		}
		buf = buf[:4+int(n)]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(r, buf[4:]); err != nil {
			return err
		}
		p.count(first, buf[4:])
		if _, err := dst.Write(buf); err != nil {
			return err
		}
	}
}

// count counts one frame's request.
func (p *countingProxy) count(connect bool, body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if connect {
		p.connects++
		return
	}
	if len(body) < 8 {
		return
	}
	op := int32(binary.BigEndian.Uint32(body[4:8]))
	if op != opPing {
		p.counts[op]++
	}
}
