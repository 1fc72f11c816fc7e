package zksession_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

// events records what OnEvent hears. At each notification it notes
// whether the Watch in watch (if any) already had it.
type events struct {
	mu    sync.Mutex
	seen  []zksession.Event
	ch    chan zksession.Event
	watch atomic.Pointer[zksession.Watch]
	late  atomic.Bool // a notification reached the Watch before OnEvent
}

func newEvents() *events { return &events{ch: make(chan zksession.Event, 1000)} }

func (e *events) on(ev zksession.Event) {
	if w := e.watch.Load(); w != nil && ev.Type != zkwire.EventNone && len(w.C) > 0 {
		e.late.Store(true)
	}
	e.mu.Lock()
	e.seen = append(e.seen, ev)
	e.mu.Unlock()
	e.ch <- ev
}

// list returns what OnEvent has heard.
func (e *events) list() []zksession.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// stateEvent is the Event OnEvent hears for a change of state.
func stateEvent(st zkwire.KeeperState) zksession.Event {
	return zksession.Event{Type: zkwire.EventNone, State: st}
}

// OnEvent hears the session's states (as EventNone events) in the order
// OnState hears them, and every notification before its Watch does.
func TestIntegration_OnEvent(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	st, evs := newStates(), newEvents()
	s := openWith(t, link, zksession.Config{SessionTimeout: 4 * time.Second, OnState: st.on, OnEvent: evs.on})
	other := open(t, nil, 4*time.Second, nil)
	root := cluster.Root(t)
	mustCreate(t, s, root+"/n", nil)
	_, _, w, err := s.GetDataW(ctx(t), root+"/n")
	if err != nil {
		t.Fatal(err)
	}
	evs.watch.Store(w)
	if _, err := other.SetData(ctx(t), root+"/n", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, w); ev.Type != zkwire.EventNodeDataChanged {
		t.Fatalf("watch heard %+v", ev)
	}
	link.Cut()
	st.await(t, zksession.StateDisconnected)
	st.await(t, zksession.StateConnected)
	s.Close()
	if evs.late.Load() {
		t.Error("a Watch had its notification before OnEvent heard it")
	}
	got := evs.list()
	for i := range got {
		got[i].Zxid = 0 // servers up to 3.8 send -1, later ones the zxid
	}
	want := []zksession.Event{
		stateEvent(zkwire.StateSyncConnected),
		{Type: zkwire.EventNodeDataChanged, State: zkwire.StateSyncConnected, Path: root + "/n"},
		stateEvent(zkwire.StateDisconnected),
		stateEvent(zkwire.StateSyncConnected),
		stateEvent(zkwire.StateClosed),
	}
	if !slices.Equal(got, want) {
		t.Errorf("OnEvent heard\n%+v\nwant\n%+v", got, want)
	}
	wantStates := []zksession.State{zksession.StateConnected, zksession.StateDisconnected, zksession.StateConnected, zksession.StateClosed}
	if st.mu.Lock(); !slices.Equal(st.seen, wantStates) {
		t.Errorf("OnState heard %v, want %v", st.seen, wantStates)
	}
	st.mu.Unlock()
}

// OnEvent runs on the reader: while it has not returned, nothing more
// is read, so the reply behind a notification waits for it; and after a
// reconnect it hears SyncConnected before what the new connection
// brings.
func TestOnEventHoldsTheReader(t *testing.T) {
	fs := newFakeServer(t)
	st, evs := newStates(), newEvents()
	getDone := make(chan struct{}) // closed when the GetData has returned
	early := make(chan bool, 1)
	hold := func(ev zksession.Event) {
		if ev.Path == "/hold" {
			select { // the reply to the GetData is on the wire behind this notification
			case <-getDone:
				early <- true
			case <-time.After(100 * time.Millisecond):
				early <- false
			}
		}
		evs.on(ev)
	}
	s, fc := fs.dial(t, zksession.Config{OnState: st.on, OnEvent: hold})
	get := getData(t, s, "/a")
	var getErr error
	go func() { getErr = <-get; close(getDone) }()
	h, _ := fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: -1},
		zkwire.WatcherEvent{Type: zkwire.EventNodeCreated, State: zkwire.StateSyncConnected, Path: "/hold"})
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 5}, zkwire.GetDataResponse{})
	if <-early {
		t.Error("the reply behind a notification was read before OnEvent returned")
	}
	<-getDone
	if getErr != nil {
		t.Fatal(getErr)
	}
	cut(t, fc, st)
	fc2 := fs.next(t)
	fc2.grant(1)
	fc2.reply(zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: -1},
		zkwire.WatcherEvent{Type: zkwire.EventNodeDeleted, State: zkwire.StateSyncConnected, Path: "/after"})
	for ev := range evs.ch {
		if ev.Path == "/after" {
			break
		}
	}
	got := evs.list()
	want := []zksession.Event{
		stateEvent(zkwire.StateSyncConnected),
		{Type: zkwire.EventNodeCreated, State: zkwire.StateSyncConnected, Path: "/hold", Zxid: -1},
		stateEvent(zkwire.StateDisconnected),
		stateEvent(zkwire.StateSyncConnected),
		{Type: zkwire.EventNodeDeleted, State: zkwire.StateSyncConnected, Path: "/after", Zxid: -1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("OnEvent heard\n%+v\nwant\n%+v", got, want)
	}
}

// Timeout is the timeout of the last ConnectResponse, already when
// OnEvent hears that connection's SyncConnected.
func TestTimeoutFollowsConnectResponse(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	var sess atomic.Pointer[zksession.Session]
	atSync := make(chan time.Duration, 10)
	onEvent := func(ev zksession.Event) {
		if s := sess.Load(); s != nil && ev.State == zkwire.StateSyncConnected {
			atSync <- s.Timeout()
		}
	}
	s, fc := fs.dial(t, zksession.Config{SessionTimeout: 10 * time.Second, OnState: st.on, OnEvent: onEvent})
	if got := s.Timeout(); got != 30*time.Second {
		t.Fatalf("Timeout() = %v after a ConnectResponse of 30 s", got)
	}
	cut(t, fc, st)
	sess.Store(s) // the first SyncConnected came before the Disconnected
	fs.next(t).grantTimeout(1, 20000)
	select {
	case got := <-atSync:
		if got != 20*time.Second {
			t.Fatalf("Timeout() = %v at SyncConnected after a ConnectResponse of 20 s", got)
		}
	case <-time.After(fakeWait):
		t.Fatal("no SyncConnected after the reconnect")
	}
}

// The shared server clamps the timeout asked for to its bounds (400 ms
// to 60 s): Timeout is what it granted, not what was asked.
func TestIntegration_Timeout(t *testing.T) {
	for asked, want := range map[time.Duration]time.Duration{
		4 * time.Second:        4 * time.Second,
		200 * time.Second:      60 * time.Second,
		100 * time.Millisecond: 400 * time.Millisecond,
	} {
		if got := openWith(t, nil, zksession.Config{SessionTimeout: asked}).Timeout(); got != want {
			t.Errorf("asked for %v: Timeout() = %v, want %v", asked, got, want)
		}
	}
}
