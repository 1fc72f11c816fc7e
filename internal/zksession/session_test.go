package zksession_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

// 1000 requests in flight at once each get their own reply.
func TestIntegration_Pipeline(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	mustCreate(t, s, root+"/p", nil)
	const n = 1000
	versions := make([]int32, n)
	mzxids := make([]int64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.SetData(ctx(t), root+"/p", []byte(fmt.Sprint(i)), -1)
			versions[i], mzxids[i] = st.Version, st.Mzxid
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int32]int64{}
	for i, v := range versions {
		if _, dup := seen[v]; dup || v < 1 || v > n {
			t.Fatalf("request %d got version %d: replies crossed", i, v)
		}
		seen[v] = mzxids[i]
	}
	for v := int32(2); v <= n; v++ {
		if seen[v] <= seen[v-1] {
			t.Fatalf("version %d has zxid %d, not after version %d's %d", v, seen[v], v-1, seen[v-1])
		}
	}
}

// A call whose context ends returns at once, leaves no goroutine, and
// the requests behind it get their own replies.
func TestIntegration_CancelledRequest(t *testing.T) {
	link := zktest.NewLink(t, zktest.Shared(t))
	s := open(t, link, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	mustCreate(t, s, root+"/a", []byte("a"))
	mustCreate(t, s, root+"/b", []byte("b"))
	link.SetDelay(100 * time.Millisecond)
	base := runtime.NumGoroutine()
	for range 20 {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		start := time.Now()
		_, _, err := s.GetData(c, root+"/a")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 150*time.Millisecond {
			t.Fatalf("GetData with a 20ms deadline: %v after %v", err, time.Since(start))
		}
	}
	// As goleak does, give goroutines that are ending (another test's, or
	// the runtime's) a moment to go before counting them as left behind.
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if g := runtime.NumGoroutine(); g > base {
		t.Fatalf("%d goroutines after 20 abandoned calls, %d before", g, base)
	}
	data, _, err := s.GetData(ctx(t), root+"/b")
	if err != nil || string(data) != "b" {
		t.Fatalf("GetData behind abandoned calls = %q, %v", data, err)
	}
	link.SetDelay(0)
}

// A connection loss fails every call in flight, each once, with
// ErrConnectionLoss; the session reconnects and serves again.
func TestIntegration_ConnectionLoss(t *testing.T) {
	link := zktest.NewLink(t, zktest.Shared(t))
	st := newStates()
	s := open(t, link, 4*time.Second, st)
	root := zktest.Shared(t).Root(t)
	mustCreate(t, s, root+"/a", nil)
	id := s.SessionID()
	link.SetDelay(200 * time.Millisecond)
	const n = 50
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.Exists(ctx(t), root+"/a")
			errs <- err
		}()
	}
	// Every request written (the delay holds their replies back), then cut.
	deadline, tick := time.After(wait), time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for s.InFlight() < n {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("only %d of %d requests written", s.InFlight(), n)
		}
	}
	link.Cut()
	for range n {
		select {
		case err := <-errs:
			if !errors.Is(err, zksession.ErrConnectionLoss) {
				t.Fatalf("call in flight at a cut: %v", err)
			}
		case <-time.After(wait):
			t.Fatal("a call in flight at a cut did not return")
		}
	}
	link.SetDelay(0)
	st.await(t, zksession.StateDisconnected)
	st.await(t, zksession.StateConnected)
	if _, err := s.Exists(ctx(t), root+"/a"); err != nil || s.SessionID() != id {
		t.Fatalf("after reconnecting: %v, session %#x (was %#x)", err, s.SessionID(), id)
	}
}

// The reconnect race (go-zookeeper #35): a watch set before a cut fires
// for a change made during the cut, while requests queued during the
// cut (whose replies carry newer zxids) go out at the reconnect.
func TestIntegration_WatchAcrossCut(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	st := newStates()
	s := open(t, link, 4*time.Second, st)
	other := open(t, nil, 4*time.Second, nil)
	root := cluster.Root(t)
	mustCreate(t, s, root+"/w", nil)
	for run := range 20 {
		_, _, w, err := s.GetDataW(ctx(t), root+"/w")
		if err != nil || w == nil {
			t.Fatalf("run %d: GetDataW: %v, %v", run, w, err)
		}
		link.Cut()
		if _, err := other.SetData(ctx(t), root+"/w", []byte{byte(run)}, -1); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Exists(ctx(t), root+"/w")
			}()
		}
		ev := event(t, w)
		wg.Wait()
		if ev.Type != zkwire.EventNodeDataChanged || ev.Path != root+"/w" {
			t.Fatalf("run %d: event %+v", run, ev)
		}
	}
}

// A session the server expires ends for good: calls fail with
// ErrSessionExpired, watches hear Expired, no new session is opened.
func TestIntegration_ExpireSession(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	st := newStates()
	s := open(t, link, 4*time.Second, st)
	root := cluster.Root(t)
	_, w, err := s.ExistsW(ctx(t), root+"/e")
	if !errors.Is(err, zksession.ErrNoNode) || w == nil {
		t.Fatalf("ExistsW of a missing node: %v, %v", w, err)
	}
	id := s.SessionID()
	if err := link.ExpireSession(ctx(t)); err != nil {
		t.Fatal(err)
	}
	st.await(t, zksession.StateExpired)
	<-s.Done()
	if ev := event(t, w); ev.Type != zkwire.EventNone || ev.State != zkwire.StateExpired {
		t.Fatalf("watch heard %+v, want the expiry", ev)
	}
	if _, err := s.Exists(ctx(t), root); !errors.Is(err, zksession.ErrSessionExpired) {
		t.Fatalf("call after expiry: %v", err)
	}
	if !errors.Is(s.Err(), zksession.ErrSessionExpired) || s.SessionID() != id || s.State() != zksession.StateExpired {
		t.Fatalf("after expiry: Err %v, session %#x (was %#x), state %v", s.Err(), s.SessionID(), id, s.State())
	}
}

// While the link swallows everything, every call returns by its
// deadline, and the session expires on its own after 4T/3 of silence.
func TestIntegration_Blackhole(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	st := newStates()
	s := open(t, link, 1200*time.Millisecond, st)
	root := cluster.Root(t)
	link.Blackhole()
	defer link.Restore()
	for range 5 {
		c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := s.Exists(c, root)
		cancel()
		if took := time.Since(start); took > 300*time.Millisecond || err == nil {
			t.Fatalf("Exists with a 200ms deadline on a black hole: %v after %v", err, took)
		}
	}
	st.await(t, zksession.StateExpired)
	if !errors.Is(s.Err(), zksession.ErrSessionExpired) {
		t.Fatalf("Err = %v", s.Err())
	}
}

// RemoveWatch ends a watch with a removal event and removes the
// server's watch when it was the last.
func TestIntegration_RemoveWatch(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	mustCreate(t, s, root+"/r", nil)
	_, _, w1, err := s.GetDataW(ctx(t), root+"/r")
	if err != nil {
		t.Fatal(err)
	}
	_, w2, err := s.ExistsW(ctx(t), root+"/r")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveWatch(ctx(t), w1); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, w1); ev.Type != zkwire.EventDataWatchRemoved {
		t.Fatalf("removed watch heard %+v", ev)
	}
	// w2 still needs the server's watch.
	if _, err := s.SetData(ctx(t), root+"/r", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, w2); ev.Type != zkwire.EventNodeDataChanged {
		t.Fatalf("remaining watch heard %+v", ev)
	}
	_, _, w3, err := s.GetDataW(ctx(t), root+"/r")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveWatch(ctx(t), w3); err != nil {
		t.Fatal(err)
	}
	err = s.Do(ctx(t), zkwire.OpRemoveWatches, root+"/r", zkwire.RemoveWatchesRequest{Path: root + "/r", Type: zkwire.WatcherData}, nil)
	if !errors.Is(err, zksession.ErrNoWatcher) {
		t.Fatalf("the server kept the watch: removing it again gave %v", err)
	}
}

// Drop removes the watches set under a Tentative's context without
// waiting: the server's child watch goes (a request sent after Drop
// finds none), unless another Watch of the session still needs it; a
// watch set under the context after Drop is removed at once.
func TestIntegration_TentativeDrop(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	a, b := root+"/a", root+"/b"
	mustCreate(t, s, a, nil)
	mustCreate(t, s, b, nil)
	hasChildWatch := func(p string) bool {
		t.Helper()
		err := s.Do(ctx(t), zkwire.OpCheckWatches, p, zkwire.RemoveWatchesRequest{Path: p, Type: zkwire.WatcherChildren}, nil)
		if err != nil && !errors.Is(err, zksession.ErrNoWatcher) {
			t.Fatal(err)
		}
		return err == nil
	}
	var tent zksession.Tentative
	tctx := zksession.WithTentative(ctx(t), &tent)
	_, _, wa, err := s.GetChildren2W(tctx, a)
	if err != nil {
		t.Fatal(err)
	}
	_, _, wb, err := s.GetChildren2W(tctx, b)
	if err != nil {
		t.Fatal(err)
	}
	_, _, kept, err := s.GetChildren2W(ctx(t), b) // b's server watch is needed still
	if err != nil {
		t.Fatal(err)
	}
	tent.Drop()
	for _, w := range []*zksession.Watch{wa, wb} {
		if ev := event(t, w); ev.Type != zkwire.EventChildWatchRemoved {
			t.Fatalf("dropped watch on %s heard %+v", w.Path(), ev)
		}
	}
	if hasChildWatch(a) || !hasChildWatch(b) {
		t.Fatalf("after Drop: child watch on a %v (want false), on b %v (want true)", hasChildWatch(a), hasChildWatch(b))
	}
	_, _, late, err := s.GetChildren2W(tctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if ev := event(t, late); ev.Type != zkwire.EventChildWatchRemoved || hasChildWatch(a) {
		t.Fatalf("a watch set after Drop heard %+v; server watch on a: %v", ev, hasChildWatch(a))
	}
	mustCreate(t, s, b+"/c", nil)
	if ev := event(t, kept); ev.Type != zkwire.EventNodeChildrenChanged {
		t.Fatalf("the watch Drop did not own heard %+v", ev)
	}
}

// Close ends the session on the server (its ephemeral nodes go), is
// idempotent, and calls after it fail with ErrClosed.
func TestIntegration_Close(t *testing.T) {
	st := newStates()
	s := open(t, nil, 4*time.Second, st)
	other := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	if _, err := s.Create(ctx(t), root+"/eph", nil, zksession.OpenACL, zkwire.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, root+"/kept", nil)
	_, _, w, err := s.GetDataW(ctx(t), root+"/kept")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if _, err := other.Exists(ctx(t), root+"/eph"); !errors.Is(err, zksession.ErrNoNode) {
		t.Fatalf("ephemeral after Close: %v", err)
	}
	if _, err := s.Exists(ctx(t), root); !errors.Is(err, zksession.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	if ev := event(t, w); ev.State != zkwire.StateClosed {
		t.Fatalf("watch heard %+v at Close", ev)
	}
	st.await(t, zksession.StateClosed)
}

// ConnEpoch counts every connection attempt, failed ones too, before its
// dial; equal values around a request mean one connection, and a request
// answered on a later connection than the one current before it was
// sent sees another value.
func TestConnEpoch(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	var sess atomic.Pointer[zksession.Session]
	var mu sync.Mutex
	var atDial []uint64 // ConnEpoch at each dial after Dial returned
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if s := sess.Load(); s != nil {
			mu.Lock()
			atDial = append(atDial, s.ConnEpoch())
			mu.Unlock()
		}
		return net.DialTimeout(network, addr, timeout)
	}
	s, fc := fs.dial(t, zksession.Config{OnState: st.on, Dialer: dialer})
	sess.Store(s)
	if e := s.ConnEpoch(); e != 1 {
		t.Fatalf("ConnEpoch() = %d after one attempt", e)
	}
	before := s.ConnEpoch()
	get := getData(t, s, "/a")
	h, _ := fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 2}, zkwire.GetDataResponse{})
	if err := result(t, get); err != nil || s.ConnEpoch() != before {
		t.Fatalf("GetData on one connection: %v, ConnEpoch %d then %d", err, before, s.ConnEpoch())
	}
	cut(t, fc, st)
	queued := getData(t, s, "/q")
	awaitQueued(t, s, 1)
	fs.next(t).nc.Close() // two attempts fail before their ConnectResponse
	fs.next(t).nc.Close()
	fc4 := fs.next(t)
	fc4.grant(1)
	h, _ = fc4.read()
	fc4.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 3}, zkwire.GetDataResponse{})
	if err := result(t, queued); err != nil {
		t.Fatal(err)
	}
	if e := s.ConnEpoch(); e != 4 || e == before {
		t.Fatalf("ConnEpoch() = %d after 4 attempts (was %d before the request)", e, before)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(atDial) != 3 || atDial[0] != 2 || atDial[1] != 3 || atDial[2] != 4 {
		t.Fatalf("ConnEpoch at the reconnects' dials: %v, want [2 3 4] (counted before each dial)", atDial)
	}
}

// The reconnect race of go-zookeeper (go-zookeeper/zk#35): a change made
// while the client hears nothing, with requests in flight around the
// reconnect, must fire the watch set before. The session sets its watches
// again from the last zxid it saw before the cut, before any request
// queued meanwhile goes out, so a reply to one of those cannot move that
// zxid past the change. 50 rounds; `-count=50` makes 50 runs of them.
func TestIntegration_ChangeDuringCutFiresWatch(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	s := open(t, link, 4*time.Second, nil)
	other := open(t, nil, 4*time.Second, nil)
	root := cluster.Root(t)
	mustCreate(t, s, root+"/w", nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range 8 { // requests in flight at every reconnect
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, cancel := context.WithTimeout(context.Background(), time.Second)
				s.Exists(c, root+"/w")
				cancel()
			}
		}()
	}
	for round := range 50 {
		_, _, w, err := s.GetDataW(ctx(t), root+"/w")
		if err != nil || w == nil {
			t.Fatalf("round %d: GetDataW: %v, %v", round, w, err)
		}
		link.Blackhole()
		if _, err := other.SetData(ctx(t), root+"/w", []byte{byte(round)}, -1); err != nil {
			t.Fatal(err)
		}
		link.Restore() // the connection drops; the session comes back on a new one
		ev := event(t, w)
		if ev.Type != zkwire.EventNodeDataChanged || ev.Path != root+"/w" {
			t.Fatalf("round %d: event %+v, want NodeDataChanged of %s/w", round, ev, root)
		}
	}
}

// A watching request whose caller gave up after it was sent leaves no
// watch on the server, of either type: its reply, read and dropped, says
// the server set one that no Watch holds, and the session removes it,
// unless another Watch of the session needs the server's watch on that
// path.
func TestIntegration_AbandonedWatchRequestLeavesNoWatch(t *testing.T) {
	link := zktest.NewLink(t, zktest.Shared(t))
	s := open(t, link, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	a, b := root+"/a", root+"/b"
	mustCreate(t, s, a, nil)
	mustCreate(t, s, b, nil)
	has := func(p string, wt zkwire.WatcherType) bool {
		t.Helper()
		err := s.Do(ctx(t), zkwire.OpCheckWatches, p, zkwire.RemoveWatchesRequest{Path: p, Type: wt}, nil)
		if err != nil && !errors.Is(err, zksession.ErrNoWatcher) {
			t.Fatal(err)
		}
		return err == nil
	}
	// abandoned sends call and gives up on it while the link's delay
	// keeps it in flight.
	abandoned := func(call func(context.Context) error) {
		t.Helper()
		c, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := call(c); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("an abandoned call returned %v", err)
		}
	}
	_, _, kept, err := s.GetDataW(ctx(t), b) // b's server watch is needed still
	if err != nil {
		t.Fatal(err)
	}
	link.SetDelay(100 * time.Millisecond)
	abandoned(func(c context.Context) error { _, _, _, err := s.GetChildren2W(c, a); return err })
	abandoned(func(c context.Context) error { _, _, _, err := s.GetDataW(c, a); return err })
	abandoned(func(c context.Context) error { _, _, _, err := s.GetDataW(c, b); return err })
	link.SetDelay(0)
	// Answered after the abandoned requests, whose replies the session
	// has read by then: the removals go before the checks.
	if _, err := s.Exists(ctx(t), root); err != nil {
		t.Fatal(err)
	}
	if has(a, zkwire.WatcherChildren) || has(a, zkwire.WatcherData) {
		t.Fatal("an abandoned request's watch stayed on the server")
	}
	if !has(b, zkwire.WatcherData) {
		t.Fatal("an abandoned request's reply took away a watch another Watch needs")
	}
	if _, err := s.SetData(ctx(t), b, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, kept); ev.Type != zkwire.EventNodeDataChanged {
		t.Fatalf("the remaining watch heard %+v", ev)
	}
}

// A connection keeps a buffer for its next frame only up to MaxKept: one
// grown for a long listing is let go once used.
func TestReusable(t *testing.T) {
	small, big := make([]byte, 10, zksession.MaxKept), make([]byte, 10, zksession.MaxKept+1)
	if got := zksession.Reusable(small); cap(got) != zksession.MaxKept {
		t.Errorf("a buffer of MaxKept: kept %d", cap(got))
	}
	if got := zksession.Reusable(big); got != nil {
		t.Errorf("a buffer over MaxKept: kept %d", cap(got))
	}
}

// Replies larger than what the reader keeps, between small ones, each
// decode whole: the reader's buffer let go after a large frame is never
// one a later reply is read into while still in use.
func TestIntegration_LargeRepliesBetweenSmall(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	mustCreate(t, s, root+"/q", nil)
	mustCreate(t, s, root+"/d", []byte("small"))
	pad := strings.Repeat("x", 100)
	const n = 400 // a listing of about 44 KB, over MaxKept
	for i := range n {
		mustCreate(t, s, fmt.Sprintf("%s/q/%s-%04d", root, pad, i), nil)
	}
	for round := range 3 {
		kids, _, err := s.GetChildren2(ctx(t), root+"/q")
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(kids)
		if len(kids) != n || kids[0] != pad+"-0000" || kids[n-1] != fmt.Sprintf("%s-%04d", pad, n-1) {
			t.Fatalf("round %d: listing of %d children, first %q", round, len(kids), kids[0])
		}
		data, _, err := s.GetData(ctx(t), root+"/d")
		if err != nil || string(data) != "small" {
			t.Fatalf("round %d: data %q, %v", round, data, err)
		}
	}
	for i := range n {
		if err := s.Delete(ctx(t), fmt.Sprintf("%s/q/%s-%04d", root, pad, i), -1); err != nil {
			t.Fatal(err)
		}
	}
}
