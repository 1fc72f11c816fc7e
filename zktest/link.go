package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	izk "github.com/zklock/zklock/internal/zktest"
)

// Link is one client's network path to a cluster's servers: a proxy per
// server, which the client dials through [Link.Dial], and which the test
// can cut or pause to see how the client rides out the network's faults.
// Its methods are safe for concurrent use.
//
// With zklock:
//
//	link := zktest.NewLink(t, cluster)
//	c, err := zklock.Connect(cluster.Servers(), zklock.WithDialer(link.Dial))
//
// With go-zookeeper alone (or a zklock Client made by NewClient on it):
//
//	conn, events, err := zk.Connect(cluster.Servers(), timeout, zk.WithDialer(link.Dial))
type Link struct {
	f *izk.Faults // written once
}

// NewLink returns a Link to c's servers, closed when t's test ends (a
// pause is ended first, so that the client's own clean-up is not held up
// by it). It fails t at once if a proxy cannot listen. Its clients are
// cut off from the servers from then on, so a clean-up registered before
// NewLink (t.Cleanup runs last-registered first) finds them unable to
// reach the servers: wait for what a client still has to send (a delete
// it goes on with in the background, after a fault) before the test
// ends, or close the client in a clean-up registered after NewLink.
func NewLink(t testing.TB, c *Cluster) *Link {
	t.Helper()
	return &Link{f: izk.NewFaultsT(t, c.Servers())}
}

// OpenLink returns a Link to servers (host:port, as [Cluster.Servers]
// gives them), for a program or a TestMain; the caller must Close it. In
// a test, NewLink does that itself.
func OpenLink(servers []string) (*Link, error) {
	if len(servers) == 0 {
		return nil, errors.New("zktest: open link: no servers")
	}
	f, err := izk.NewFaults(servers)
	if err != nil {
		return nil, fmt.Errorf("zktest: open link: %w", err)
	}
	return &Link{f: f}, nil
}

// Close ends a pause or a blackhole and closes the Link's proxies and
// every connection through them; a client still dialling through the Link
// then fails to connect. Closing a Link twice does nothing more.
func (l *Link) Close() error { return l.f.Close() }

// Dial connects to the proxy of address, one of the cluster's servers, or
// straight to address if it is another. It has the shape of a
// zklock.Dialer and of a zk.Dialer: pass it as zklock.WithDialer(link.Dial)
// to zklock's Connect, or as zk.WithDialer(link.Dial) to go-zookeeper's.
func (l *Link) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return l.f.Dial(network, address, timeout)
}

// Cut closes every connection the client has through the Link, at once
// and in both directions: the client sees its connection drop and
// reconnects (through the Link, which serves new connections as usual).
// Its session lives on.
func (l *Link) Cut() { l.f.Cut() }

// Pause makes the Link silent until Resume: connections stay open, but
// nothing passes, in either direction, on current or new connections. The
// client's reads time out (zklock's Connect, like go-zookeeper, reports
// the connection down after two thirds of the session timeout), and a pause longer than the session
// timeout lets the servers expire the session. What was sent meanwhile is
// held, not lost, and delivered by Resume. Call it from the test's
// goroutine.
func (l *Link) Pause() { l.f.Pause() }

// Resume ends a Pause: what was held is delivered, and traffic flows
// again.
func (l *Link) Resume() { l.f.Resume() }

// Blackhole makes the Link swallow everything until Restore: connections
// are accepted and stay open, nothing is answered, and what is sent
// meanwhile is lost (a Pause keeps it). The client's reads time out, as
// with Pause. Call it from the test's goroutine.
func (l *Link) Blackhole() { l.f.Pause() }

// Restore ends a Blackhole (or a Pause, dropping what it held): the
// connections that went silent are closed, so the client reconnects at
// once, and new ones pass as usual.
func (l *Link) Restore() {
	l.f.Cut() // drops what the pause held
	l.f.Resume()
}

// SetDelay delays the client's traffic through the Link: every chunk of
// data, in either direction, is held for d before it is passed on, so a
// round trip takes about 2d longer (and a busy connection's throughput
// drops, since chunks wait one after the other). 0 ends the delay.
func (l *Link) SetDelay(d time.Duration) { l.f.SetDelay(d) }

// ExpireSession expires, now, the session of the client's latest
// connection through the Link, as Curator's KillSession does: it attaches
// to the session from a connection of its own (with the id and password
// the server handed the client, which the Link saw) and closes it, and
// the servers delete the session's ephemeral nodes at once. Then, as
// KillSession does (ZooKeeper's injectSessionExpiration), the client is
// told first: after what the server had sent it, the Link hands the
// client a session event of state Expired, as a server would send one,
// and only then closes its connection. A go-zookeeper client gets that
// event (zk.EventSession, zk.StateExpired) on its event channel and
// callback with no zk.StateDisconnected before it; zklock reports
// StateLost, with no StateSuspended before it, and ends the holds with
// an error wrapping ErrLockLost that says the session was lost (an
// Observer sees CauseSession), under either ErrorPolicy. The client then
// reconnects, hears from the server that its session expired
// (go-zookeeper reports StateExpired again), and gets a new session
// (zklock reports StateReconnected).
//
// The client is not told, and sees only its connection close, as it
// would without the Link, when the Link is cut or closed meanwhile, or
// when a reply the server had begun was cut short (the Link cannot
// finish it); it then learns that its session expired on reconnecting.
// While the Link is paused, the event and the close wait for Resume.
// ExpireSession returns once the servers have ended the session; the
// client is told right after. It returns an error if no session was
// granted through the Link yet, or if the session had already ended; the
// client is then told nothing.
func (l *Link) ExpireSession(ctx context.Context) error {
	if ctx == nil {
		return errors.New("zktest: expire session: nil context")
	}
	return l.f.ExpireSession(ctx)
}
