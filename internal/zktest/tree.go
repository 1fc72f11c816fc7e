package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConnectTimeout is the session timeout of connections made by ConnectT.
const ConnectTimeout = 10 * time.Second

// connectWait bounds how long ConnectT waits for a session, and how long
// its cleanup waits for the connection's goroutines to finish.
const connectWait = 30 * time.Second

// Ephemerals returns, sorted, the paths of every node under root (root
// included, recursively) that is ephemeral (EphemeralOwner != 0). A root
// that does not exist has none. Nodes deleted during the walk are skipped.
func Ephemerals(conn *zk.Conn, root string) ([]string, error) {
	var found []string
	var walk func(p string) error
	walk = func(p string) error {
		exists, stat, err := conn.Exists(p)
		if err != nil {
			return fmt.Errorf("zktest: exists %s: %w", p, err)
		}
		if !exists {
			return nil
		}
		if stat.EphemeralOwner != 0 {
			found = append(found, p)
			return nil // ephemeral nodes have no children
		}
		children, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("zktest: children %s: %w", p, err)
		}
		for _, child := range children {
			if err := walk(path.Join(p, child)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	sort.Strings(found)
	return found, nil
}

// WaitNoEphemerals polls Ephemerals(conn, root) every 20ms until it finds
// none, for up to timeout. If some remain (or the last poll failed) it
// reports them with t.Errorf; the test goes on.
func WaitNoEphemerals(t testing.TB, conn *zk.Conn, root string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left, err := Ephemerals(conn, root)
		if err == nil && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Errorf("zktest: ephemeral nodes under %s after %v: %v", root, timeout, err)
			} else {
				t.Errorf("zktest: %d ephemeral nodes left under %s after %v: %s",
					len(left), root, timeout, strings.Join(left, ", "))
			}
			return
		}
		time.Sleep(pollInterval)
	}
}

// DeleteTree deletes root and everything under it, ignoring nodes that do
// not exist (or disappear meanwhile). For root "/" it deletes everything
// except / and /zookeeper. Children created concurrently can make it fail
// with zk.ErrNotEmpty after a few retries. A request that meets a
// connection loss (a busy machine's server can miss a ping) is sent again
// once go-zookeeper has reconnected, for up to treeRetryFor.
func DeleteTree(conn *zk.Conn, root string) error {
	var del func(p string) error
	del = func(p string) error {
		for attempt := 0; ; attempt++ {
			var children []string
			err := retryConnLoss(func() (err error) {
				children, _, err = conn.Children(p)
				return err
			})
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("zktest: delete tree: children %s: %w", p, err)
			}
			for _, child := range children {
				cp := path.Join(p, child)
				if cp == "/zookeeper" {
					continue
				}
				if err := del(cp); err != nil {
					return err
				}
			}
			if p == "/" {
				return nil
			}
			err = retryConnLoss(func() error { return conn.Delete(p, -1) })
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				return nil // a delete sent again may find its first attempt's work done
			}
			if !errors.Is(err, zk.ErrNotEmpty) || attempt >= 3 {
				return fmt.Errorf("zktest: delete tree: delete %s: %w", p, err)
			}
		}
	}
	return del(root)
}

// treeRetryFor bounds how long DeleteTree sends a request again after
// connection losses.
const treeRetryFor = 30 * time.Second

// retryConnLoss runs op, and again while it fails with a connection loss
// (the session lives on; go-zookeeper reconnects by itself), for up to
// treeRetryFor.
func retryConnLoss(op func() error) error {
	deadline := time.Now().Add(treeRetryFor)
	for {
		err := op()
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollInterval)
	}
}

// CreatePath creates p and its missing ancestors as empty persistent
// nodes with an open ACL; nodes that exist are left as they are.
func CreatePath(conn *zk.Conn, p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if _, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zktest: create %s: %w", p[:i], err)
		}
	}
	return nil
}

// nopLogger discards go-zk's log output.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// ConnectT connects to servers with a plain go-zk connection and a 10s
// session timeout (ConnectTimeout); see ConnectTimeoutT.
func ConnectT(t testing.TB, servers []string, opts ...func(*zk.Conn)) *zk.Conn {
	t.Helper()
	return ConnectTimeoutT(t, servers, ConnectTimeout, opts...)
}

// ConnectTimeoutT connects to servers with a plain go-zk connection asking
// for the given session timeout, with go-zk's logging silenced, then
// applies opts (go-zk options such as zk.WithDialer, zk.WithEventCallback
// or zk.WithLogger). It waits (at most 30s) for the session to be
// established and fails t fatally if it is not. When t's test ends the
// connection is closed and its goroutines are waited for (bounded).
func ConnectTimeoutT(t testing.TB, servers []string, sessionTimeout time.Duration, opts ...func(*zk.Conn)) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(nopLogger{}),
		func(c *zk.Conn) {
			for _, o := range opts {
				o(c)
			}
		})
	if err != nil {
		t.Fatalf("zktest: connect to %v: %v", servers, err)
	}
	t.Cleanup(func() {
		conn.Close()
		// go-zk closes the event channel when its goroutines are done.
		timeout := time.NewTimer(connectWait)
		defer timeout.Stop()
		for {
			select {
			case _, ok := <-events:
				if !ok {
					return
				}
			case <-timeout.C:
				t.Errorf("zktest: connection to %v still running %v after Close; go-zookeeper's goroutines:\n%s", servers, connectWait, goZKStacks())
				return
			}
		}
	})
	timeout := time.NewTimer(connectWait)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("zktest: connect to %v: connection closed", servers)
			}
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				awaitSetWatchesPassed(t)
				return conn
			}
		case <-timeout.C:
			t.Fatalf("zktest: connect to %v: no session after %v (state %v)", servers, connectWait, conn.State())
		}
	}
}

// awaitSetWatchesPassed waits (at most connectWait) until every go-zk
// connection loop this goroutine started has passed its set-watches step
// (see passedSetWatches). go-zk
// reports the session before that step, which reads the last zxid while
// the connection's receiver writes it (go-zookeeper/zk#35): a watch set
// by the test before the step is reached races there, and the race
// detector fails the test. The step is found in the goroutines' stacks,
// as go-zk offers no signal for it.
func awaitSetWatchesPassed(t testing.TB) {
	t.Helper()
	self := string(bytes.Fields(stackOf(false))[1]) // "goroutine N [running]:"
	created := []byte("created by github.com/go-zookeeper/zk.Connect in goroutine " + self + "\n")
	deadline := time.Now().Add(connectWait)
	for {
		// The newest loop this goroutine started (goroutine ids grow) is
		// the connection just made; older ones may be reconnecting.
		var newest []byte
		newestID := -1
		for _, g := range bytes.Split(stackOf(true), []byte("\n\n")) {
			f := bytes.Fields(g)
			if len(f) < 2 || !bytes.Contains(g, []byte("zk.(*Conn).loop(")) || !bytes.Contains(g, created) {
				continue
			}
			if id, err := strconv.Atoi(string(f[1])); err == nil && id > newestID {
				newest, newestID = g, id
			}
		}
		if newest == nil || passedSetWatches(newest) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("zktest: go-zk's connection loop did not pass its set-watches step within %v", connectWait)
		}
		time.Sleep(time.Millisecond) // polling a condition go-zk does not signal
	}
}

// passedSetWatches reports whether the go-zk connection loop whose stack
// is g has passed its set-watches step since it reported its session: it
// waits on its connection (sync.WaitGroup.Wait in Conn.loop), or that
// connection has broken already and the loop fails its requests or dials
// again (Conn.flushRequests, Conn.connect). Waiting for the first alone
// hung a test whose server closed the new connection at once: the loop
// dials until a server answers, which can take longer than connectWait
// (TestConnectTimeoutTConnectionBrokenAtOnce).
func passedSetWatches(g []byte) bool {
	for _, past := range []string{"sync.(*WaitGroup).Wait(", "zk.(*Conn).flushRequests(", "zk.(*Conn).connect("} {
		if bytes.Contains(g, []byte(past)) {
			return true
		}
	}
	return false
}

// goZKStacks returns the stacks of the goroutines that run go-zookeeper's
// code, for a failure that waited for them.
func goZKStacks() []byte {
	var out []byte
	for g := range bytes.SplitSeq(stackOf(true), []byte("\n\n")) {
		if bytes.Contains(g, []byte("go-zookeeper/zk.")) {
			out = append(append(out, g...), "\n\n"...)
		}
	}
	return out
}

// stackOf returns the calling goroutine's stack, or every goroutine's.
func stackOf(all bool) []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
