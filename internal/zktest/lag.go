package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Lagger is implemented by clusters whose servers can fall behind the
// others while they go on serving their clients: those the process backend
// starts with [Config.Laggable]. Its method is safe for concurrent use,
// also with the Cluster's.
type Lagger interface {
	// Lag delays by d every byte on the connections that server i opens
	// to the other servers' quorum ports, in both directions, from now
	// on; 0 ends the delay. A follower opens its connection to the
	// leader: proposals, commits and pings then reach it d late, and its
	// acknowledgements and the requests it forwards reach the leader d
	// late, while it answers its clients' reads from what it has applied
	// and their new local sessions ([Config.LocalSessions]) at once: a
	// follower that lags. Bytes keep their order, also when d changes,
	// and the delay limits no throughput. The leader drops a follower
	// whose acknowledgement takes longer than syncLimit ticks (a round
	// trip, 2d): raise [Config.SyncLimit]. The leader opens no such
	// connection: Lag of the leader's index changes nothing until it
	// follows. The delay survives Stop, Start and Kill of any server.
	Lag(i int, d time.Duration) error
}

// laggableCluster is a procCluster started with Config.Laggable: it is
// also a Lagger.
type laggableCluster struct{ *procCluster }

// Lag implements Lagger.
func (c *laggableCluster) Lag(i int, d time.Duration) error {
	if i < 0 || i >= len(c.links) {
		return fmt.Errorf("zktest: lag server %d: no such server (cluster has %d)", i, len(c.links))
	}
	if d < 0 {
		return fmt.Errorf("zktest: lag server %d: negative delay %v", i, d)
	}
	for _, l := range c.links[i] {
		if l != nil {
			l.setDelay(d)
		}
	}
	return nil
}

// startLinks starts, for every server i and every other server j, the
// forwarder through which i reaches j's quorum port (c.links[i][j]).
func (c *procCluster) startLinks(lay layout) error {
	n := len(lay.quorumPorts)
	c.links = make([][]*lagLink, n)
	for i := range n {
		c.links[i] = make([]*lagLink, n)
		for j := range n {
			if i == j {
				continue
			}
			l, err := newLagLink(net.JoinHostPort(lay.hosts[j], strconv.Itoa(lay.quorumPorts[j])))
			if err != nil {
				return err
			}
			c.links[i][j] = l
		}
	}
	return nil
}

// quorumPortsOf returns the quorum ports that server i's zoo.cfg lists:
// its own, and the ports of its forwarders to the others (c.links), or
// the servers' own ports without them.
func (c *procCluster) quorumPortsOf(i int, lay layout) []int {
	if c.links == nil {
		return lay.quorumPorts
	}
	return viaPorts(lay.quorumPorts, i, func(j int) int { return c.links[i][j].port() })
}

// viaPorts returns a copy of ports in which every entry but ports[i] is
// replaced by via(j), the port through which server i reaches server j.
func viaPorts(ports []int, i int, via func(j int) int) []int {
	out := make([]int, len(ports))
	for j, p := range ports {
		if j == i {
			out[j] = p
		} else {
			out[j] = via(j)
		}
	}
	return out
}

// closeLinks closes every forwarder of c.
func (c *procCluster) closeLinks() error {
	var errs []error
	for _, row := range c.links {
		for _, l := range row {
			if l != nil {
				errs = append(errs, l.close())
			}
		}
	}
	return errors.Join(errs...)
}

// lagLinkBacklog bounds the chunks a lagLink holds per direction of a
// connection; a reader that would exceed it waits, as TCP's window would.
const lagLinkBacklog = 4096

// lagLink forwards every TCP connection it accepts on 127.0.0.1 to a
// target, delivering each chunk of data read from either side a set
// delay after it was read: in order, and with no limit on throughput (the
// chunks wait side by side, not one after the other as a Proxy's delay
// does). Its methods are safe for concurrent use.
type lagLink struct {
	target string
	ln     net.Listener
	delay  atomic.Int64 // nanoseconds; read when a chunk is read
	ctx    context.Context
	cancel context.CancelFunc // called by close
	wg     sync.WaitGroup     // the accept loop and every connection's goroutines

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
}

// newLagLink returns a lagLink listening on a free port of 127.0.0.1 and
// forwarding to target, with no delay. The caller must close it.
func newLagLink(target string) (*lagLink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zktest: link to %s: listen: %w", target, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &lagLink{target: target, ln: ln, ctx: ctx, cancel: cancel, conns: make(map[net.Conn]struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// port returns the port the link listens on.
func (l *lagLink) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// setDelay sets the delay of the chunks read from now on.
func (l *lagLink) setDelay(d time.Duration) { l.delay.Store(int64(d)) }

// close stops listening, closes every connection and waits for the
// link's goroutines. It is idempotent.
func (l *lagLink) close() error {
	l.cancel()
	err := l.ln.Close()
	l.mu.Lock()
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("zktest: close link to %s: %w", l.target, err)
	}
	return nil
}

// track adds c to the open connections, or closes it and reports false if
// the link is closing.
func (l *lagLink) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		c.Close()
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (l *lagLink) untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.Close()
	delete(l.conns, c)
}

func (l *lagLink) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			select { // out of file descriptors or the like: back off
			case <-l.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if !l.track(c) {
			return
		}
		l.wg.Add(1)
		go l.serve(c)
	}
}

// serve forwards the connection c to the target until either side closes
// or fails, then closes both.
func (l *lagLink) serve(c net.Conn) {
	defer l.wg.Done()
	defer l.untrack(c)
	dctx, cancel := context.WithTimeout(l.ctx, proxyDialTimeout)
	var d net.Dialer
	up, err := d.DialContext(dctx, "tcp", l.target)
	cancel()
	if err != nil || !l.track(up) {
		return // c closes: the server sees its connection refused
	}
	defer l.untrack(up)
	ctx, stop := context.WithCancel(l.ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer stop()
		l.pipe(ctx, up, c)
	}()
	go func() {
		defer wg.Done()
		defer stop()
		l.pipe(ctx, c, up)
	}()
	<-ctx.Done()
	c.Close() // unblock both pipes' reads
	up.Close()
	wg.Wait()
}

// lagChunk is data read from one side, to be written to the other at due.
type lagChunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk the delay after it was read, until
// either fails or ctx ends. Its reader stamps the chunks and its writer
// (the calling goroutine) delivers them in the order they were read, each
// once it is due.
func (l *lagLink) pipe(ctx context.Context, dst, src net.Conn) {
	chunks := make(chan lagChunk, lagLinkBacklog)
	l.wg.Add(1)
	go func() { // ends once src fails: serve closes it when ctx ends
		defer l.wg.Done()
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- lagChunk{buf[:n], time.Now().Add(time.Duration(l.delay.Load()))}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	for ch := range chunks {
		if wait := time.Until(ch.due); wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
}
