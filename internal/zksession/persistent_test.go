package zksession_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

// notification waits for the next notification OnEvent hears, passing
// over the session's states.
func (e *events) notification(t *testing.T) zksession.Event {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case ev := <-e.ch:
			if ev.Type != zkwire.EventNone {
				ev.Zxid = 0 // servers up to 3.8 send -1, later ones the zxid
				return ev
			}
		case <-timeout:
			t.Fatalf("no notification in %v", wait)
		}
	}
}

// expectEvents waits for want, in order, from OnEvent.
func (e *events) expect(t *testing.T, want ...zksession.Event) {
	t.Helper()
	for _, w := range want {
		if ev := e.notification(t); ev != w {
			t.Fatalf("OnEvent heard %+v, want %+v", ev, w)
		}
	}
}

func notif(typ zkwire.EventType, path string) zksession.Event {
	return zksession.Event{Type: typ, State: zkwire.StateSyncConnected, Path: path}
}

// A persistent watch fires again and again, a recursive one for the
// nodes below it too; both outlive a connection loss, and once removed
// neither fires again.
func TestIntegration_AddWatch(t *testing.T) {
	cluster := zktest.Shared(t)
	link := zktest.NewLink(t, cluster)
	st, evs := newStates(), newEvents()
	s := openWith(t, link, zksession.Config{SessionTimeout: 4 * time.Second, OnState: st.on, OnEvent: evs.on})
	other := open(t, nil, 4*time.Second, nil)
	root := cluster.Root(t)
	p, r := root+"/p", root+"/r"
	if err := s.AddWatch(ctx(t), p, zkwire.AddWatchPersistent); err != nil {
		t.Fatal(err)
	}
	if err := s.AddWatch(ctx(t), r, zkwire.AddWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{p, p + "/c", r, r + "/a", r + "/a/b"} {
		mustCreate(t, other, n, nil)
	}
	setData := func(path string) {
		t.Helper()
		if _, err := other.SetData(ctx(t), path, []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	setData(p)
	setData(r + "/a/b")
	evs.expect(t, notif(zkwire.EventNodeCreated, p), notif(zkwire.EventNodeChildrenChanged, p),
		notif(zkwire.EventNodeCreated, r), notif(zkwire.EventNodeCreated, r+"/a"), notif(zkwire.EventNodeCreated, r+"/a/b"),
		notif(zkwire.EventNodeDataChanged, p), notif(zkwire.EventNodeDataChanged, r+"/a/b"))
	link.Cut()
	st.await(t, zksession.StateDisconnected)
	st.await(t, zksession.StateConnected)
	// A request sent after SyncConnected is answered after the watches
	// are set again: changes made before that are not reported.
	if _, err := s.Exists(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	setData(p)
	setData(r + "/a/b")
	evs.expect(t, notif(zkwire.EventNodeDataChanged, p), notif(zkwire.EventNodeDataChanged, r+"/a/b"))
	if err := s.RemovePersistentWatch(ctx(t), p, zkwire.AddWatchPersistent); err != nil {
		t.Fatal(err)
	}
	if err := s.RemovePersistentWatch(ctx(t), r, zkwire.AddWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}
	setData(p)
	setData(r + "/a/b")
	_, w, err := s.ExistsW(ctx(t), root+"/fence")
	if !errors.Is(err, zksession.ErrNoNode) {
		t.Fatal(err)
	}
	mustCreate(t, other, root+"/fence", nil)
	event(t, w) // its notification follows any for the changes before it
	evs.expect(t, notif(zkwire.EventNodeCreated, root+"/fence"))
}

// AddWatch without OnEvent, or with a mode that is none, is refused
// before anything is sent.
func TestAddWatchRefused(t *testing.T) {
	fs := newFakeServer(t)
	s, _ := fs.dial(t, zksession.Config{})
	for name, mode := range map[string]zkwire.AddWatchMode{"no OnEvent": zkwire.AddWatchPersistent} {
		var e *zksession.Error
		if err := s.AddWatch(ctx(t), "/w", mode); !errors.As(err, &e) || e.Op != zkwire.OpAddWatch || e.Path != "/w" {
			t.Errorf("%s: AddWatch = %v, want an *Error for addWatch /w", name, err)
		}
	}
	s2, _ := newFakeServer(t).dial(t, zksession.Config{OnEvent: func(zksession.Event) {}})
	var e *zksession.Error
	if err := s2.AddWatch(ctx(t), "/w", 7); !errors.As(err, &e) || e.Path != "/w" {
		t.Errorf("AddWatch with mode 7 = %v, want an *Error", err)
	}
	if n := s.InFlight() + s.Queued() + s2.InFlight() + s2.Queued(); n != 0 {
		t.Errorf("%d requests sent or queued by refused AddWatch calls", n)
	}
}

// At a reconnect, a session with persistent watches sets every watch
// again with SetWatches2 (one-shot ones included); once the persistent
// watches are removed, with SetWatches.
func TestSetWatches2(t *testing.T) {
	fs := newFakeServer(t)
	st := newStates()
	s, fc := fs.dial(t, zksession.Config{OnState: st.on, OnEvent: func(zksession.Event) {}})
	add := call(func() error { return s.AddWatch(ctx(t), "/p", zkwire.AddWatchPersistentRecursive) })
	h, d := fc.read()
	var req zkwire.AddWatchRequest
	if err := req.Decode(d); err != nil || h.Type != zkwire.OpAddWatch || req != (zkwire.AddWatchRequest{Path: "/p", Mode: zkwire.AddWatchPersistentRecursive}) {
		t.Fatalf("AddWatch sent %v %+v (%v)", h.Type, req, err)
	}
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 4}, zkwire.ErrorResponse{})
	if err := result(t, add); err != nil {
		t.Fatal(err)
	}
	exists := call(func() error { _, _, err := s.ExistsW(ctx(t), "/e"); return err })
	h, _ = fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 5, Err: zkwire.CodeNoNode}, nil)
	result(t, exists)
	cut(t, fc, st)
	fc2 := fs.next(t)
	fc2.grant(1)
	d = expect(t, fc2, zkwire.XidSetWatches, zkwire.OpSetWatches2)
	var sw zkwire.SetWatches2
	if err := sw.Decode(d); err != nil || sw.RelativeZxid != 5 || len(sw.ExistWatches) != 1 || sw.ExistWatches[0] != "/e" ||
		len(sw.PersistentWatches) != 0 || len(sw.PersistentRecursiveWatches) != 1 || sw.PersistentRecursiveWatches[0] != "/p" {
		t.Fatalf("SetWatches2 %+v (%v), want /e exist and /p recursive, relative to 5", sw, err)
	}
	fc2.reply(zkwire.ReplyHeader{Xid: zkwire.XidSetWatches, Zxid: 5}, nil)
	remove := call(func() error { return s.RemovePersistentWatch(ctx(t), "/p", zkwire.AddWatchPersistentRecursive) })
	h, d = fc2.read()
	var rw zkwire.RemoveWatchesRequest
	if err := rw.Decode(d); err != nil || h.Type != zkwire.OpRemoveWatches || rw != (zkwire.RemoveWatchesRequest{Path: "/p", Type: zkwire.WatcherPersistentRecursive}) {
		t.Fatalf("RemovePersistentWatch sent %v %+v (%v)", h.Type, rw, err)
	}
	fc2.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 6, Err: zkwire.CodeNoWatcher}, nil)
	if err := result(t, remove); err != nil {
		t.Fatalf("RemovePersistentWatch answered NoWatcher: %v, want nil", err)
	}
	cut(t, fc2, st)
	fc3 := fs.next(t)
	fc3.grant(1)
	d = expect(t, fc3, zkwire.XidSetWatches, zkwire.OpSetWatches)
	var sw1 zkwire.SetWatches
	if err := sw1.Decode(d); err != nil || len(sw1.ExistWatches) != 1 || len(sw1.DataWatches)+len(sw1.ChildWatches) != 0 {
		t.Fatalf("SetWatches %+v (%v) after the removal, want /e alone", sw1, err)
	}
}

// A server before 3.9 refuses removeWatches of a persistent type
// (MarshallingError): the session then removes the path's watch by its
// old type (Data for a recursive one), unless it holds a one-shot watch
// on the path, which that would remove too: then it says so.
func TestRemovePersistentWatchBefore39(t *testing.T) {
	fs := newFakeServer(t)
	s, fc := fs.dial(t, zksession.Config{OnEvent: func(zksession.Event) {}})
	addWatch := func(path string) {
		t.Helper()
		add := call(func() error { return s.AddWatch(ctx(t), path, zkwire.AddWatchPersistentRecursive) })
		h, _ := fc.read()
		fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 4}, zkwire.ErrorResponse{})
		if err := result(t, add); err != nil {
			t.Fatal(err)
		}
	}
	// expectRemove reads a removeWatches of path and type t, and answers it with code.
	expectRemove := func(path string, typ zkwire.WatcherType, code zkwire.Code) {
		t.Helper()
		h, d := fc.read()
		var rw zkwire.RemoveWatchesRequest
		if err := rw.Decode(d); err != nil || h.Type != zkwire.OpRemoveWatches || rw != (zkwire.RemoveWatchesRequest{Path: path, Type: typ}) {
			t.Fatalf("sent %v %+v (%v), want removeWatches %s type %d", h.Type, rw, err, path, typ)
		}
		fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 5, Err: code}, nil)
	}
	addWatch("/alone")
	remove := call(func() error { return s.RemovePersistentWatch(ctx(t), "/alone", zkwire.AddWatchPersistentRecursive) })
	expectRemove("/alone", zkwire.WatcherPersistentRecursive, zkwire.CodeMarshallingError)
	expectRemove("/alone", zkwire.WatcherData, zkwire.CodeOK)
	if err := result(t, remove); err != nil {
		t.Fatalf("RemovePersistentWatch on a server before 3.9: %v", err)
	}
	addWatch("/mixed")
	exists := call(func() error { _, _, err := s.ExistsW(ctx(t), "/mixed"); return err })
	h, _ := fc.read()
	fc.reply(zkwire.ReplyHeader{Xid: h.Xid, Zxid: 6, Err: zkwire.CodeNoNode}, nil)
	result(t, exists)
	remove = call(func() error { return s.RemovePersistentWatch(ctx(t), "/mixed", zkwire.AddWatchPersistentRecursive) })
	expectRemove("/mixed", zkwire.WatcherPersistentRecursive, zkwire.CodeMarshallingError)
	var e *zksession.Error
	if err := result(t, remove); !errors.As(err, &e) || e.Path != "/mixed" || e.Code != zkwire.CodeOK {
		t.Fatalf("RemovePersistentWatch beside a one-shot watch on a server before 3.9: %v, want an *Error saying why", err)
	}
	if n := s.InFlight() + s.Queued(); n != 0 {
		t.Fatalf("%d more requests after the refusal, want none", n)
	}
}
