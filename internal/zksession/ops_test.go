package zksession_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

func TestIntegration_Ops(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	if s.Timeout() <= 0 || s.SessionID() == 0 {
		t.Fatalf("timeout %v, session %#x: want a negotiated session", s.Timeout(), s.SessionID())
	}
	c := ctx(t)
	p := root + "/a"
	if got, err := s.Create(c, p, []byte("one"), zksession.OpenACL, zkwire.ModePersistent); err != nil || got != p {
		t.Fatalf("Create = %q, %v", got, err)
	}
	data, stat, err := s.GetData(c, p)
	if err != nil || string(data) != "one" || stat.Version != 0 {
		t.Fatalf("GetData = %q, %+v, %v", data, stat, err)
	}
	if st, err := s.SetData(c, p, []byte("two"), 0); err != nil || st.Version != 1 {
		t.Fatalf("SetData = %+v, %v", st, err)
	}
	if st, err := s.Exists(c, p); err != nil || st.Version != 1 || st.DataLength != 3 {
		t.Fatalf("Exists = %+v, %v", st, err)
	}
	mustCreate(t, s, p+"/x", nil)
	if kids, st, err := s.GetChildren2(c, p); err != nil || len(kids) != 1 || kids[0] != "x" || st.NumChildren != 1 {
		t.Fatalf("GetChildren2 = %v, %+v, %v", kids, st, err)
	}
	if err := s.Sync(c, p); err != nil {
		t.Fatal(err)
	}
	if s.LastZxid() <= 0 {
		t.Fatalf("LastZxid %d after writes", s.LastZxid())
	}
	wantErr(t, "create existing", s.Delete(c, p, -1), zksession.ErrNotEmpty, zkwire.CodeNotEmpty)
	_, err = s.Create(c, p, nil, zksession.OpenACL, zkwire.ModePersistent)
	wantErr(t, "create existing", err, zksession.ErrNodeExists, zkwire.CodeNodeExists)
	_, err = s.SetData(c, p, nil, 7)
	wantErr(t, "set bad version", err, zksession.ErrBadVersion, zkwire.CodeBadVersion)
	data, _, err = s.GetData(c, root+"/none")
	wantErr(t, "get missing", err, zksession.ErrNoNode, zkwire.CodeNoNode)
	if data != nil {
		t.Fatalf("GetData of a missing node returned data %q", data)
	}
	_, err = s.Exists(c, root+"/none")
	wantErr(t, "exists missing", err, zksession.ErrNoNode, zkwire.CodeNoNode)
	wantErr(t, "delete missing", s.Delete(c, root+"/none", -1), zksession.ErrNoNode, zkwire.CodeNoNode)
	if err := s.Delete(c, p+"/x", 0); err != nil {
		t.Fatal(err)
	}
	// The session still serves after every error.
	if _, err := s.Exists(c, p); err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, sentinel error, code zkwire.Code) {
	t.Helper()
	var e *zksession.Error
	if !errors.Is(err, sentinel) || !errors.As(err, &e) || e.Code != code || e.Path == "" {
		t.Fatalf("%s: error %v, want %v with a path", what, err, code)
	}
}

func TestIntegration_Multi(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	c := ctx(t)
	res, err := s.Multi(c,
		zkwire.MultiOp{Type: zkwire.OpCreate, Req: zkwire.CreateRequest{Path: root + "/m", ACL: zksession.OpenACL}},
		zkwire.MultiOp{Type: zkwire.OpSetData, Req: zkwire.SetDataRequest{Path: root + "/m", Data: []byte("d"), Version: 0}},
		zkwire.MultiOp{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: root + "/m", Version: 1}})
	if err != nil || len(res) != 3 || res[0].Path != root+"/m" || res[1].Stat.Version != 1 {
		t.Fatalf("Multi = %+v, %v", res, err)
	}
	res, err = s.Multi(c,
		zkwire.MultiOp{Type: zkwire.OpCreate, Req: zkwire.CreateRequest{Path: root + "/n", ACL: zksession.OpenACL}},
		zkwire.MultiOp{Type: zkwire.OpDelete, Req: zkwire.DeleteRequest{Path: root + "/m", Version: 5}},
		zkwire.MultiOp{Type: zkwire.OpDelete, Req: zkwire.DeleteRequest{Path: root + "/m", Version: -1}})
	var e *zksession.Error
	if !errors.As(err, &e) || !errors.Is(err, zksession.ErrBadVersion) || e.Index != 1 || e.Path != root+"/m" {
		t.Fatalf("failed Multi: %v, want BadVersion at 1 on %s/m", err, root)
	}
	want := []zkwire.Code{zkwire.CodeOK, zkwire.CodeBadVersion, zkwire.CodeRuntimeInconsistency}
	for i, r := range res {
		if r.Type != zkwire.OpError || r.Err != want[i] {
			t.Fatalf("result %d = %+v, want an error %v", i, r, want[i])
		}
	}
	if _, err := s.Exists(c, root+"/n"); !errors.Is(err, zksession.ErrNoNode) {
		t.Fatalf("a failed multi's create applied: %v", err)
	}
	_, err = s.Multi(c, zkwire.MultiOp{Type: zkwire.OpGetData, Req: zkwire.GetDataRequest{Path: root}})
	if !errors.Is(err, zkwire.ErrInvalidOp) {
		t.Fatalf("Multi with a getData: %v, want ErrInvalidOp", err)
	}
}

func TestIntegration_FrameOverLimitRefusedLocally(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	_, err := s.Create(ctx(t), root+"/big", bytes.Repeat([]byte("x"), zkwire.MaxBuffer), zksession.OpenACL, zkwire.ModePersistent)
	if !errors.Is(err, zkwire.ErrFrameSize) {
		t.Fatalf("Create of a 1 MiB node: %v, want ErrFrameSize", err)
	}
	if _, err := s.Exists(ctx(t), root); err != nil {
		t.Fatalf("the session broke after a refused frame: %v", err)
	}
}

// A watch set under WithNotify hands its one event to the function, on
// the session's side, and its channel stays empty; one that never fires
// hears the session's end.
func TestIntegration_WithNotify(t *testing.T) {
	s := open(t, nil, 4*time.Second, nil)
	root := zktest.Shared(t).Root(t)
	p := root + "/n"
	mustCreate(t, s, p, nil)
	got := make(chan zksession.Event, 2)
	c := zksession.WithNotify(ctx(t), func(ev zksession.Event) { got <- ev })
	_, _, w, err := s.GetDataW(c, p)
	if err != nil || w == nil {
		t.Fatalf("GetDataW = %v, %v", w, err)
	}
	_, idle, err := s.ExistsW(c, p+"/never")
	if !errors.Is(err, zksession.ErrNoNode) || idle == nil {
		t.Fatalf("ExistsW of a missing node = %v, %v", idle, err)
	}
	if _, err := s.SetData(ctx(t), p, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if ev.Type != zkwire.EventNodeDataChanged || ev.Path != p {
			t.Fatalf("notified %+v, want NodeDataChanged of %s", ev, p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
	if w.C != nil || idle.C != nil {
		t.Fatal("a notified watch made a channel (heap it never uses)")
	}
	s.Close()
	select {
	case ev := <-got:
		if ev.Type != zkwire.EventNone || ev.State != zkwire.StateClosed || ev.Path != p+"/never" {
			t.Fatalf("at Close, notified %+v, want the end of the session for %s/never", ev, p)
		}
	default:
		t.Fatal("Close did not end the watch set under WithNotify")
	}
}
