package zkwire_test

import (
	"errors"
	"io"
	"net"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// rawDeadline bounds every exchange with the server.
const rawDeadline = 20 * time.Second

// rawSession is a session spoken by hand over TCP: frames built and read
// with the package alone, no client in between.
type rawSession struct {
	t       *testing.T
	conn    net.Conn
	id      int64 // the session id from the ConnectResponse
	xid     int32 // the last xid sent
	out, in []byte
	events  []zkwire.WatcherEvent // notifications read so far, in order
	evZxids []int64               // their ReplyHeader zxids
	closed  bool
}

// dialRaw connects to server and opens a session: a ConnectRequest
// framed with no header, answered by a ConnectResponse. The session is
// closed when the test ends if the test did not close it.
func dialRaw(t *testing.T, server string) *rawSession {
	t.Helper()
	conn, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := &rawSession{t: t, conn: conn}
	t.Cleanup(s.cleanup)
	conn.SetDeadline(time.Now().Add(rawDeadline))
	req := zkwire.ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16)}
	s.write(zkwire.AppendFrame(s.out[:0], 0, req))
	var resp zkwire.ConnectResponse
	d := zkwire.NewDecoder(s.read(), 0)
	if err := resp.Decode(d); err != nil || d.Len() != 0 {
		t.Fatalf("ConnectResponse: %v, %d bytes left", err, d.Len())
	}
	if resp.SessionID == 0 || resp.TimeOut <= 0 || len(resp.Passwd) != 16 || resp.ReadOnly {
		t.Fatalf("ConnectResponse %+v: want a new read-write session", resp)
	}
	s.id = resp.SessionID
	return s
}

// cleanup closes the session if the test did not, then the connection.
func (s *rawSession) cleanup() {
	if !s.closed {
		s.conn.SetDeadline(time.Now().Add(5 * time.Second))
		if b, err := zkwire.AppendRequest(nil, 0, zkwire.RequestHeader{Xid: s.xid + 1, Type: zkwire.OpCloseSession}, nil); err == nil {
			s.conn.Write(b)
			for err == nil {
				_, err = zkwire.ReadFrame(s.conn, nil, 0)
			}
		}
	}
	s.conn.Close()
}

func (s *rawSession) write(frame []byte, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
	s.out = frame
	if _, err := s.conn.Write(frame); err != nil {
		s.t.Fatal(err)
	}
}

func (s *rawSession) read() []byte {
	s.t.Helper()
	var err error
	if s.in, err = zkwire.ReadFrame(s.conn, s.in, 0); err != nil {
		s.t.Fatal(err)
	}
	return s.in
}

// send writes a request with header h and returns the payload of its
// reply (the frame whose ReplyHeader has h.Xid), reading the
// notifications that come before it into s.events.
func (s *rawSession) send(h zkwire.RequestHeader, req zkwire.Encodable) []byte {
	s.t.Helper()
	s.write(zkwire.AppendRequest(s.out[:0], 0, h, req))
	for {
		payload := s.read()
		var ev zkwire.WatcherEvent
		rh, err := zkwire.DecodeReply(payload, 0, nil)
		if err != nil {
			s.t.Fatal(err)
		}
		if rh.Xid != zkwire.XidNotification {
			if rh.Xid != h.Xid {
				s.t.Fatalf("%v: reply for xid %d, want %d", h.Type, rh.Xid, h.Xid)
			}
			return payload
		}
		if _, err := zkwire.DecodeReply(payload, 0, &ev); err != nil {
			s.t.Fatal(err)
		}
		s.events, s.evZxids = append(s.events, ev), append(s.evZxids, rh.Zxid)
	}
}

// call sends an ordinary request (the next xid) and decodes its reply
// into resp by the reply rule; it returns the reply's header and how
// many bytes of the payload were left unread.
func (s *rawSession) call(op zkwire.OpCode, req zkwire.Encodable, resp zkwire.Decodable) (zkwire.ReplyHeader, int) {
	s.t.Helper()
	s.xid++
	d := zkwire.NewDecoder(s.send(zkwire.RequestHeader{Xid: s.xid, Type: op}, req), 0)
	var h zkwire.ReplyHeader
	if err := h.Decode(d); err != nil {
		s.t.Fatal(err)
	}
	if err := zkwire.DecodeReplyBody(d, h, resp); err != nil {
		s.t.Fatalf("%v reply: %v", op, err)
	}
	return h, d.Len()
}

// ok is call for a request that must succeed and whose reply must be
// read to its last byte.
func (s *rawSession) ok(op zkwire.OpCode, req zkwire.Encodable, resp zkwire.Decodable) zkwire.ReplyHeader {
	s.t.Helper()
	h, left := s.call(op, req, resp)
	if h.Err != zkwire.CodeOK || left != 0 {
		s.t.Fatalf("%v: err %v, %d bytes left unread", op, h.Err, left)
	}
	return h
}

// TestIntegration_RawSession speaks the protocol by hand to a real
// ZooKeeper: each request is framed by the package and each reply
// decoded by it, and what the server answers must match the request.
func TestIntegration_RawSession(t *testing.T) {
	cluster := zktest.Shared(t)
	root := cluster.Root(t)
	s := dialRaw(t, cluster.Servers()[0])
	rawAuth(t, s)
	rawCreate(t, s, root)
	rawWatchAndSet(t, s, root)
	rawMulti(t, s, root)
	rawErrors(t, s, root)
	rawWatchRecords(t, s, root)
	rawPingAndClose(t, s)
}

// rawAuth sends digest credentials with xid -4: the server answers with
// the same xid and no body.
func rawAuth(t *testing.T, s *rawSession) {
	payload := s.send(zkwire.RequestHeader{Xid: zkwire.XidAuth, Type: zkwire.OpAuth},
		zkwire.AuthPacket{Scheme: "digest", Auth: []byte("zkwire:secret")})
	h, err := zkwire.DecodeReply(payload, 0, nil)
	if err != nil || h.Err != zkwire.CodeOK || len(payload) != 16 {
		t.Fatalf("auth: %+v, %v, %d bytes", h, err, len(payload))
	}
}

// rawCreate creates an ephemeral node with create2 and an ephemeral
// sequential one with create, then lists them with getChildren2.
func rawCreate(t *testing.T, s *rawSession, root string) {
	var c2 zkwire.Create2Response
	h := s.ok(zkwire.OpCreate2, zkwire.CreateRequest{Path: root + "/n", Data: []byte("v1"), ACL: openACL, Flags: zkwire.ModeEphemeral}, &c2)
	if c2.Path != root+"/n" || c2.Stat.EphemeralOwner != s.id || c2.Stat.Version != 0 ||
		c2.Stat.DataLength != 2 || c2.Stat.Czxid != h.Zxid || h.Zxid <= 0 {
		t.Fatalf("create2: %+v (zxid %#x, session %#x)", c2, h.Zxid, s.id)
	}
	var c1 zkwire.CreateResponse
	s.ok(zkwire.OpCreate, zkwire.CreateRequest{Path: root + "/s-", ACL: openACL, Flags: zkwire.ModeEphemeralSequential}, &c1)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(root) + `/s-\d{10}$`).MatchString(c1.Path) {
		t.Fatalf("create: path %q", c1.Path)
	}
	var ls zkwire.GetChildren2Response
	s.ok(zkwire.OpGetChildren2, zkwire.GetChildren2Request{Path: root}, &ls)
	slices.Sort(ls.Children)
	if want := []string{"n", c1.Path[len(root)+1:]}; !slices.Equal(ls.Children, want) || ls.Stat.NumChildren != 2 {
		t.Fatalf("getChildren2: %q, %d children; want %q", ls.Children, ls.Stat.NumChildren, want)
	}
	var ex zkwire.ExistsResponse
	s.ok(zkwire.OpExists, zkwire.ExistsRequest{Path: root + "/n", Watch: true}, &ex)
	if ex.Stat != c2.Stat {
		t.Fatalf("exists: %+v, want %+v", ex.Stat, c2.Stat)
	}
}

// rawWatchAndSet reads the node, then changes it: the exists watch set
// by rawCreate fires, and its notification comes before the reply.
func rawWatchAndSet(t *testing.T, s *rawSession, root string) {
	var gd zkwire.GetDataResponse
	s.ok(zkwire.OpGetData, zkwire.GetDataRequest{Path: root + "/n"}, &gd)
	if string(gd.Data) != "v1" || gd.Stat.Version != 0 {
		t.Fatalf("getData: %q, %+v", gd.Data, gd.Stat)
	}
	var sd zkwire.SetDataResponse
	h := s.ok(zkwire.OpSetData, zkwire.SetDataRequest{Path: root + "/n", Data: []byte("v2"), Version: 0}, &sd)
	if sd.Stat.Version != 1 || sd.Stat.Mzxid != h.Zxid || sd.Stat.Czxid != gd.Stat.Czxid {
		t.Fatalf("setData: %+v (zxid %#x)", sd.Stat, h.Zxid)
	}
	want := zkwire.WatcherEvent{Type: zkwire.EventNodeDataChanged, State: zkwire.StateSyncConnected, Path: root + "/n"}
	if len(s.events) != 1 || s.events[0] != want {
		t.Fatalf("events before the setData reply: %+v, want %+v", s.events, want)
	}
	// -1 from servers up to 3.8, the change's zxid since 3.9.
	if z := s.evZxids[0]; z != -1 && z != h.Zxid {
		t.Errorf("notification zxid %#x", z)
	}
	s.events, s.evZxids = nil, nil
}

// rawMulti runs a multi that succeeds and one that fails on its second
// operation: the failed one has ReplyHeader.err 0 and errors per
// operation, and changes nothing.
func rawMulti(t *testing.T, s *rawSession, root string) {
	n := root + "/n"
	var res zkwire.MultiResponse
	s.ok(zkwire.OpMulti, zkwire.MultiRequest{Ops: []zkwire.MultiOp{
		{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: n, Version: 1}},
		{Type: zkwire.OpSetData, Req: zkwire.SetDataRequest{Path: n, Data: []byte("v3"), Version: 1}},
	}}, &res)
	if len(res.Results) != 2 || res.Results[0] != (zkwire.MultiResult{Type: zkwire.OpCheck}) ||
		res.Results[1].Type != zkwire.OpSetData || res.Results[1].Stat.Version != 2 {
		t.Fatalf("multi: %+v", res.Results)
	}
	h := s.ok(zkwire.OpMulti, zkwire.MultiRequest{Ops: []zkwire.MultiOp{
		{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: n, Version: 2}},
		{Type: zkwire.OpDelete, Req: zkwire.DeleteRequest{Path: root + "/missing", Version: -1}},
		{Type: zkwire.OpSetData, Req: zkwire.SetDataRequest{Path: n, Data: []byte("v4"), Version: 2}},
	}}, &res)
	want := []zkwire.MultiResult{
		{Type: zkwire.OpError, Err: zkwire.CodeOK},
		{Type: zkwire.OpError, Err: zkwire.CodeNoNode},
		{Type: zkwire.OpError, Err: zkwire.CodeRuntimeInconsistency},
	}
	if h.Err != zkwire.CodeOK || !slices.Equal(res.Results, want) {
		t.Fatalf("failed multi: err %v, results %+v; want 0 and %+v", h.Err, res.Results, want)
	}
	if i, c := res.FirstError(); i != 1 || c != zkwire.CodeNoNode {
		t.Errorf("FirstError = %d, %v", i, c)
	}
	var gd zkwire.GetDataResponse
	if s.ok(zkwire.OpGetData, zkwire.GetDataRequest{Path: n}, &gd); string(gd.Data) != "v3" || len(s.events) != 0 {
		t.Fatalf("after the failed multi: %q, events %+v", gd.Data, s.events)
	}
}

// rawErrors sends requests that fail: the reply is the header alone.
func rawErrors(t *testing.T, s *rawSession, root string) {
	body := zkwire.GetDataResponse{Data: []byte("untouched")}
	h, left := s.call(zkwire.OpGetData, zkwire.GetDataRequest{Path: root + "/missing"}, &body)
	if h.Err != zkwire.CodeNoNode || left != 0 || len(s.in) != 16 || string(body.Data) != "untouched" {
		t.Fatalf("getData of a missing node: %+v, payload %d bytes", h, len(s.in))
	}
	h, _ = s.call(zkwire.OpSetData, zkwire.SetDataRequest{Path: root + "/n", Data: []byte("x"), Version: 7}, new(zkwire.SetDataResponse))
	if h.Err != zkwire.CodeBadVersion || len(s.in) != 16 {
		t.Fatalf("setData with a stale version: %+v", h)
	}
	h, _ = s.call(zkwire.OpCreate, zkwire.CreateRequest{Path: root + "/n", ACL: openACL, Flags: zkwire.ModeEphemeral}, new(zkwire.CreateResponse))
	if h.Err != zkwire.CodeNodeExists || len(s.in) != 16 {
		t.Fatalf("create of an existing node: %+v", h)
	}
	var sy zkwire.SyncResponse
	if s.ok(zkwire.OpSync, zkwire.SyncRequest{Path: root}, &sy); sy.Path != root {
		t.Fatalf("sync: %q", sy.Path)
	}
}

// rawWatchRecords checks, removes and re-sets watches: checkWatches,
// removeWatches, setWatches (xid -8, with catch-up events) and addWatch.
func rawWatchRecords(t *testing.T, s *rawSession, root string) {
	n := root + "/n"
	s.ok(zkwire.OpGetData, zkwire.GetDataRequest{Path: n, Watch: true}, new(zkwire.GetDataResponse))
	s.ok(zkwire.OpCheckWatches, zkwire.CheckWatchesRequest{Path: n, Type: zkwire.WatcherData}, nil)
	s.ok(zkwire.OpRemoveWatches, zkwire.RemoveWatchesRequest{Path: n, Type: zkwire.WatcherData}, nil)
	if h, _ := s.call(zkwire.OpCheckWatches, zkwire.CheckWatchesRequest{Path: n, Type: zkwire.WatcherData}, nil); h.Err != zkwire.CodeNoWatcher {
		t.Fatalf("checkWatches after removeWatches: %v", h.Err)
	}
	// From zxid 0 every watched node has changed: a data watch and a
	// child watch fire at once; an exist watch on a missing node is armed.
	payload := s.send(zkwire.RequestHeader{Xid: zkwire.XidSetWatches, Type: zkwire.OpSetWatches},
		zkwire.SetWatches{DataWatches: []string{n}, ExistWatches: []string{root + "/gone"}, ChildWatches: []string{root}})
	if h, err := zkwire.DecodeReply(payload, 0, nil); err != nil || h.Err != zkwire.CodeOK || len(payload) != 16 {
		t.Fatalf("setWatches: %+v, %v", h, err)
	}
	want := []zkwire.WatcherEvent{
		{Type: zkwire.EventNodeDataChanged, State: zkwire.StateSyncConnected, Path: n},
		{Type: zkwire.EventNodeChildrenChanged, State: zkwire.StateSyncConnected, Path: root},
	}
	s.ok(zkwire.OpSync, zkwire.SyncRequest{Path: root}, new(zkwire.SyncResponse)) // the events come before this reply
	if !slices.Equal(s.events, want) {
		t.Fatalf("setWatches events: %+v, want %+v", s.events, want)
	}
	var er zkwire.ErrorResponse
	s.ok(zkwire.OpAddWatch, zkwire.AddWatchRequest{Path: root, Mode: zkwire.AddWatchPersistentRecursive}, &er)
	s.events = nil
	s.ok(zkwire.OpDelete, zkwire.DeleteRequest{Path: n, Version: -1}, nil)
	gone := zkwire.WatcherEvent{Type: zkwire.EventNodeDeleted, State: zkwire.StateSyncConnected, Path: n}
	if er.Err != zkwire.CodeOK || !slices.Equal(s.events, []zkwire.WatcherEvent{gone}) {
		t.Fatalf("addWatch: %v, events %+v", er.Err, s.events)
	}
}

// rawPingAndClose pings (xid -2, no body either way), then closes the
// session: the server answers and closes the connection.
func rawPingAndClose(t *testing.T, s *rawSession) {
	payload := s.send(zkwire.RequestHeader{Xid: zkwire.XidPing, Type: zkwire.OpPing}, nil)
	if h, err := zkwire.DecodeReply(payload, 0, nil); err != nil || h.Err != zkwire.CodeOK || len(payload) != 16 {
		t.Fatalf("ping: %+v, %v, %d bytes", h, err, len(payload))
	}
	s.ok(zkwire.OpCloseSession, nil, nil)
	s.closed = true
	if _, err := zkwire.ReadFrame(s.conn, nil, 0); !errors.Is(err, io.EOF) {
		t.Fatalf("after closeSession: %v, want EOF", err)
	}
}
