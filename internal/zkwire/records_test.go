package zkwire_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/zklock/zklock/internal/zkwire"
)

// A codec is a record of the package through its pointer: it encodes
// (value method) and decodes.
type codec interface {
	Encode([]byte) []byte
	Decode(*zkwire.Decoder) error
}

// A golden is one record and its bytes, written by hand from
// zookeeper.jute: ints and longs big-endian, booleans one byte, ustring
// and buffer an int length (-1 null) and the bytes, vector an int count
// (-1 null) and the elements.
type golden struct {
	name  string
	value codec        // the record
	fresh func() codec // a zero record to decode into
	wire  []byte
	// optional is how many trailing bytes the decoder accepts missing:
	// the readOnly byte of the connect records.
	optional int
}

// wire joins hex fields (spaces allowed) into bytes.
func wire(fields ...string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(fields, ""), " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// ascii returns the hex of s's bytes (its length is written by hand).
func ascii(s string) string { return hex.EncodeToString([]byte(s)) }

// The Stat used in every golden that holds one, and its 68 bytes.
var (
	goldenStat = zkwire.Stat{
		Czxid: 0x100000002, Mzxid: 0x100000003,
		Ctime: 1700000000000, Mtime: 1700000000001,
		Version: 1, Cversion: 2, Aversion: 0,
		EphemeralOwner: 0x0123456789abcdef,
		DataLength:     2, NumChildren: 0, Pzxid: 0x100000002,
	}
	statWire = strings.Join([]string{
		"0000000100000002", // czxid
		"0000000100000003", // mzxid
		"0000018bcfe56800", // ctime 1700000000000
		"0000018bcfe56801", // mtime 1700000000001
		"00000001",         // version 1
		"00000002",         // cversion 2
		"00000000",         // aversion 0
		"0123456789abcdef", // ephemeralOwner
		"00000002",         // dataLength 2
		"00000000",         // numChildren 0
		"0000000100000002", // pzxid
	}, "")
	// openACL is world:anyone with every permission.
	openACL = []zkwire.ACL{{Perms: zkwire.PermAll, ID: zkwire.Id{Scheme: "world", ID: "anyone"}}}
	aclWire = strings.Join([]string{
		"00000001",                 // vector<ACL> count 1
		"0000001f",                 //   perms 31 (all)
		"00000005", ascii("world"), //   id.scheme
		"00000006", ascii("anyone"), //   id.id
	}, "")
)

func goldens() []golden {
	var all []golden
	for _, part := range [][]golden{connectGoldens(), watchGoldens(), writeGoldens(), readGoldens(), multiGoldens()} {
		all = append(all, part...)
	}
	return all
}

// connectGoldens are the records of the connection: connect, headers,
// events and auth.
func connectGoldens() []golden {
	return []golden{
		{name: "ConnectRequest", value: &zkwire.ConnectRequest{
			ProtocolVersion: 0, LastZxidSeen: 0x1f, TimeOut: 30000, SessionID: 0, Passwd: make([]byte, 16),
		}, fresh: func() codec { return new(zkwire.ConnectRequest) }, optional: 1, wire: wire(
			"00000000",                                     // protocolVersion 0
			"000000000000001f",                             // lastZxidSeen 0x1f
			"00007530",                                     // timeOut 30000
			"0000000000000000",                             // sessionId 0
			"00000010", "00000000000000000000000000000000", // passwd: 16 zero bytes
			"00", // readOnly false
		)},
		{name: "ConnectResponse", value: &zkwire.ConnectResponse{
			ProtocolVersion: 0, TimeOut: 20000, SessionID: 0x72e1a3b40a450000,
			Passwd: wire("0102030405060708090a0b0c0d0e0f10"), ReadOnly: true,
		}, fresh: func() codec { return new(zkwire.ConnectResponse) }, optional: 1, wire: wire(
			"00000000",                                     // protocolVersion 0
			"00004e20",                                     // timeOut 20000
			"72e1a3b40a450000",                             // sessionId
			"00000010", "0102030405060708090a0b0c0d0e0f10", // passwd
			"01", // readOnly true
		)},
		{name: "RequestHeader", value: &zkwire.RequestHeader{Xid: 1, Type: zkwire.OpCreate},
			fresh: func() codec { return new(zkwire.RequestHeader) }, wire: wire(
				"00000001", // xid 1
				"00000001", // type create
			)},
		{name: "RequestHeader/ping", value: &zkwire.RequestHeader{Xid: zkwire.XidPing, Type: zkwire.OpPing},
			fresh: func() codec { return new(zkwire.RequestHeader) }, wire: wire(
				"fffffffe", // xid -2
				"0000000b", // type ping (11)
			)},
		{name: "RequestHeader/closeSession", value: &zkwire.RequestHeader{Xid: 5, Type: zkwire.OpCloseSession},
			fresh: func() codec { return new(zkwire.RequestHeader) }, wire: wire(
				"00000005", // xid 5
				"fffffff5", // type closeSession (-11)
			)},
		{name: "ReplyHeader", value: &zkwire.ReplyHeader{Xid: 3, Zxid: 0x100000004, Err: zkwire.CodeNoNode},
			fresh: func() codec { return new(zkwire.ReplyHeader) }, wire: wire(
				"00000003",         // xid 3
				"0000000100000004", // zxid
				"ffffff9b",         // err -101 NoNode
			)},
		{name: "WatcherEvent", value: &zkwire.WatcherEvent{
			Type: zkwire.EventNodeDataChanged, State: zkwire.StateSyncConnected, Path: "/a/b",
		}, fresh: func() codec { return new(zkwire.WatcherEvent) }, wire: wire(
			"00000003",                // type NodeDataChanged
			"00000003",                // state SyncConnected
			"00000004", ascii("/a/b"), // path
		)},
		{name: "AuthPacket", value: &zkwire.AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("user:pw")},
			fresh: func() codec { return new(zkwire.AuthPacket) }, wire: wire(
				"00000000",                  // type 0
				"00000006", ascii("digest"), // scheme
				"00000007", ascii("user:pw"), // auth
			)},
	}
}

// watchGoldens are the records that set, add, check and remove watches.
func watchGoldens() []golden {
	return []golden{
		{name: "SetWatches", value: &zkwire.SetWatches{
			RelativeZxid: 0x100000009, DataWatches: []string{"/d"}, ExistWatches: []string{},
			ChildWatches: []string{"/c1", "/c2"},
		}, fresh: func() codec { return new(zkwire.SetWatches) }, wire: wire(
			"0000000100000009",                  // relativeZxid
			"00000001", "00000002", ascii("/d"), // dataWatches ["/d"]
			"00000000",                                                     // existWatches []
			"00000002", "00000003", ascii("/c1"), "00000003", ascii("/c2"), // childWatches
		)},
		{name: "SetWatches2", value: &zkwire.SetWatches2{
			RelativeZxid: 7, DataWatches: []string{}, ExistWatches: []string{"/e"}, ChildWatches: []string{},
			PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{},
		}, fresh: func() codec { return new(zkwire.SetWatches2) }, wire: wire(
			"0000000000000007",                  // relativeZxid 7
			"00000000",                          // dataWatches []
			"00000001", "00000002", ascii("/e"), // existWatches ["/e"]
			"00000000",                          // childWatches []
			"00000001", "00000002", ascii("/p"), // persistentWatches ["/p"]
			"00000000", // persistentRecursiveWatches []
		)},
		{name: "AddWatchRequest", value: &zkwire.AddWatchRequest{Path: "/a", Mode: zkwire.AddWatchPersistentRecursive},
			fresh: func() codec { return new(zkwire.AddWatchRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"00000001", // mode persistentRecursive
			)},
		{name: "RemoveWatchesRequest", value: &zkwire.RemoveWatchesRequest{Path: "/a", Type: zkwire.WatcherAny},
			fresh: func() codec { return new(zkwire.RemoveWatchesRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"00000003", // type Any
			)},
		{name: "CheckWatchesRequest", value: &zkwire.CheckWatchesRequest{Path: "/a", Type: zkwire.WatcherData},
			fresh: func() codec { return new(zkwire.CheckWatchesRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"00000002", // type Data
			)},
		{name: "ErrorResponse", value: &zkwire.ErrorResponse{Err: zkwire.CodeNodeExists},
			fresh: func() codec { return new(zkwire.ErrorResponse) }, wire: wire(
				"ffffff92", // err -110 NodeExists
			)},
	}
}

// writeGoldens are the records of the operations that write, and of
// what they hold: Stat and ACL.
func writeGoldens() []golden {
	return []golden{
		{name: "Stat", value: ptr(goldenStat), fresh: func() codec { return new(zkwire.Stat) }, wire: wire(statWire)},
		{name: "ACL", value: &openACL[0], fresh: func() codec { return new(zkwire.ACL) }, wire: wire(
			"0000001f",                 // perms 31
			"00000005", ascii("world"), // id.scheme
			"00000006", ascii("anyone"), // id.id
		)},
		{name: "CreateRequest", value: &zkwire.CreateRequest{
			Path: "/lock/n-", Data: []byte("hi"), ACL: openACL, Flags: zkwire.ModeEphemeralSequential,
		}, fresh: func() codec { return new(zkwire.CreateRequest) }, wire: wire(
			"00000008", ascii("/lock/n-"), // path
			"00000002", ascii("hi"), // data
			aclWire,    // acl
			"00000003", // flags ephemeral sequential
		)},
		{name: "CreateRequest/nulls", value: &zkwire.CreateRequest{Path: "/p", Flags: zkwire.ModePersistent},
			fresh: func() codec { return new(zkwire.CreateRequest) }, wire: wire(
				"00000002", ascii("/p"), // path
				"ffffffff", // data null
				"ffffffff", // acl null
				"00000000", // flags persistent
			)},
		{name: "CreateTTLRequest", value: &zkwire.CreateTTLRequest{
			Path: "/t", ACL: []zkwire.ACL{}, Flags: zkwire.ModePersistentTTL, TTL: 60000,
		}, fresh: func() codec { return new(zkwire.CreateTTLRequest) }, wire: wire(
			"00000002", ascii("/t"), // path
			"ffffffff",         // data null
			"00000000",         // acl []
			"00000005",         // flags persistent with TTL
			"000000000000ea60", // ttl 60000
		)},
		{name: "CreateResponse", value: &zkwire.CreateResponse{Path: "/lock/n-0000000007"},
			fresh: func() codec { return new(zkwire.CreateResponse) }, wire: wire(
				"00000012", ascii("/lock/n-0000000007"), // path, 18 bytes
			)},
		{name: "Create2Response", value: &zkwire.Create2Response{Path: "/a/c", Stat: goldenStat},
			fresh: func() codec { return new(zkwire.Create2Response) }, wire: wire(
				"00000004", ascii("/a/c"), // path
				statWire, // stat
			)},
		{name: "SetDataRequest", value: &zkwire.SetDataRequest{Path: "/a", Data: []byte("v2"), Version: 1},
			fresh: func() codec { return new(zkwire.SetDataRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"00000002", ascii("v2"), // data
				"00000001", // version 1
			)},
		{name: "SetDataResponse", value: &zkwire.SetDataResponse{Stat: goldenStat},
			fresh: func() codec { return new(zkwire.SetDataResponse) }, wire: wire(statWire)},
		{name: "DeleteRequest", value: &zkwire.DeleteRequest{Path: "/a", Version: -1},
			fresh: func() codec { return new(zkwire.DeleteRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"ffffffff", // version -1 (any)
			)},
		{name: "CheckVersionRequest", value: &zkwire.CheckVersionRequest{Path: "/a", Version: 3},
			fresh: func() codec { return new(zkwire.CheckVersionRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"00000003", // version 3
			)},
	}
}

// readGoldens are the records of the operations that read.
func readGoldens() []golden {
	return []golden{
		{name: "ExistsRequest", value: &zkwire.ExistsRequest{Path: "/a", Watch: true},
			fresh: func() codec { return new(zkwire.ExistsRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"01", // watch true
			)},
		{name: "ExistsResponse", value: &zkwire.ExistsResponse{Stat: goldenStat},
			fresh: func() codec { return new(zkwire.ExistsResponse) }, wire: wire(statWire)},
		{name: "GetDataRequest", value: &zkwire.GetDataRequest{Path: "/a", Watch: false},
			fresh: func() codec { return new(zkwire.GetDataRequest) }, wire: wire(
				"00000002", ascii("/a"), // path
				"00", // watch false
			)},
		{name: "GetDataResponse", value: &zkwire.GetDataResponse{Data: []byte("v1"), Stat: goldenStat},
			fresh: func() codec { return new(zkwire.GetDataResponse) }, wire: wire(
				"00000002", ascii("v1"), // data
				statWire, // stat
			)},
		{name: "GetDataResponse/null", value: &zkwire.GetDataResponse{Stat: goldenStat},
			fresh: func() codec { return new(zkwire.GetDataResponse) }, wire: wire(
				"ffffffff", // data null
				statWire,   // stat
			)},
		{name: "GetDataResponse/empty", value: &zkwire.GetDataResponse{Data: []byte{}, Stat: goldenStat},
			fresh: func() codec { return new(zkwire.GetDataResponse) }, wire: wire(
				"00000000", // data, empty
				statWire,   // stat
			)},
		{name: "GetChildrenRequest", value: &zkwire.GetChildrenRequest{Path: "/", Watch: true},
			fresh: func() codec { return new(zkwire.GetChildrenRequest) }, wire: wire(
				"00000001", ascii("/"), // path
				"01", // watch true
			)},
		{name: "GetChildrenResponse", value: &zkwire.GetChildrenResponse{Children: []string{"a", "bc"}},
			fresh: func() codec { return new(zkwire.GetChildrenResponse) }, wire: wire(
				"00000002",                                      // children: count 2
				"00000001", ascii("a"), "00000002", ascii("bc"), // "a", "bc"
			)},
		{name: "GetChildren2Request", value: &zkwire.GetChildren2Request{Path: "/a", Watch: true},
			fresh: func() codec { return new(zkwire.GetChildren2Request) }, wire: wire(
				"00000002", ascii("/a"), // path
				"01", // watch true
			)},
		{name: "GetChildren2Response", value: &zkwire.GetChildren2Response{Children: []string{"x", "", "yz"}, Stat: goldenStat},
			fresh: func() codec { return new(zkwire.GetChildren2Response) }, wire: wire(
				"00000003",             // children: count 3
				"00000001", ascii("x"), // "x"
				"00000000",              // ""
				"00000002", ascii("yz"), // "yz"
				statWire, // stat
			)},
		{name: "GetChildren2Response/none", value: &zkwire.GetChildren2Response{Children: []string{}, Stat: goldenStat},
			fresh: func() codec { return new(zkwire.GetChildren2Response) }, wire: wire(
				"00000000", // children: count 0
				statWire,   // stat
			)},
		{name: "SyncRequest", value: &zkwire.SyncRequest{Path: "/a"},
			fresh: func() codec { return new(zkwire.SyncRequest) }, wire: wire("00000002", ascii("/a"))},
		{name: "SyncResponse", value: &zkwire.SyncResponse{Path: "/a"},
			fresh: func() codec { return new(zkwire.SyncResponse) }, wire: wire("00000002", ascii("/a"))},
	}
}

// multiGoldens are the multi request and responses, after
// MultiOperationRecord and MultiResponse.
func multiGoldens() []golden {
	return []golden{
		{name: "MultiHeader", value: &zkwire.MultiHeader{Type: zkwire.OpCheck, Done: false, Err: -1},
			fresh: func() codec { return new(zkwire.MultiHeader) }, wire: wire(
				"0000000d", // type check (13)
				"00",       // done false
				"ffffffff", // err -1
			)},
		{name: "MultiRequest", value: &zkwire.MultiRequest{Ops: []zkwire.MultiOp{
			{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: "/a", Version: 1}},
			{Type: zkwire.OpSetData, Req: zkwire.SetDataRequest{Path: "/a", Data: []byte("v3"), Version: 1}},
			{Type: zkwire.OpCreate2, Req: zkwire.CreateRequest{Path: "/a/c", ACL: openACL}},
			{Type: zkwire.OpDelete, Req: zkwire.DeleteRequest{Path: "/b", Version: -1}},
		}}, fresh: func() codec { return new(zkwire.MultiRequest) }, wire: wire(
			"0000000d 00 ffffffff",              // header: check, not done, err -1
			"00000002", ascii("/a"), "00000001", // CheckVersionRequest /a version 1
			"00000005 00 ffffffff",                                       // header: setData
			"00000002", ascii("/a"), "00000002", ascii("v3"), "00000001", // SetDataRequest
			"0000000f 00 ffffffff",                                     // header: create2
			"00000004", ascii("/a/c"), "ffffffff", aclWire, "00000000", // CreateRequest, null data, persistent
			"00000002 00 ffffffff",              // header: delete
			"00000002", ascii("/b"), "ffffffff", // DeleteRequest /b version -1
			"ffffffff 01 ffffffff", // terminator: type -1, done, err -1
		)},
		{name: "MultiRequest/empty", value: &zkwire.MultiRequest{},
			fresh: func() codec { return new(zkwire.MultiRequest) }, wire: wire(
				"ffffffff 01 ffffffff", // terminator alone
			)},
		{name: "MultiResponse", value: &zkwire.MultiResponse{Results: []zkwire.MultiResult{
			{Type: zkwire.OpCheck},
			{Type: zkwire.OpSetData, Stat: goldenStat},
			{Type: zkwire.OpCreate2, Path: "/a/c", Stat: goldenStat},
			{Type: zkwire.OpCreate, Path: "/a/d"},
			{Type: zkwire.OpDelete},
		}}, fresh: func() codec { return new(zkwire.MultiResponse) }, wire: wire(
			"0000000d 00 00000000",           // check, ok: no record
			"00000005 00 00000000", statWire, // setData, ok: stat
			"0000000f 00 00000000", "00000004", ascii("/a/c"), statWire, // create2: path, stat
			"00000001 00 00000000", "00000004", ascii("/a/d"), // create: path
			"00000002 00 00000000", // delete, ok: no record
			"ffffffff 01 ffffffff", // terminator
		)},
		{name: "MultiResponse/failed", value: &zkwire.MultiResponse{Results: []zkwire.MultiResult{
			{Type: zkwire.OpError, Err: zkwire.CodeOK},
			{Type: zkwire.OpError, Err: zkwire.CodeNoNode},
			{Type: zkwire.OpError, Err: zkwire.CodeRuntimeInconsistency},
		}}, fresh: func() codec { return new(zkwire.MultiResponse) }, wire: wire(
			"ffffffff 00 00000000", "00000000", // error result, err 0: ErrorResponse 0 (rolled back)
			"ffffffff 00 ffffff9b", "ffffff9b", // error result, err -101: the failing op
			"ffffffff 00 fffffffe", "fffffffe", // error result, err -2: not tried
			"ffffffff 01 ffffffff", // terminator
		)},
	}
}

func ptr[T any](v T) *T { return &v }

// TestGoldenEncode checks that every record encodes to the bytes written
// by hand from zookeeper.jute.
func TestGoldenEncode(t *testing.T) {
	t.Parallel()
	for _, g := range goldens() {
		got := g.value.Encode(nil)
		if !reflect.DeepEqual(got, g.wire) {
			t.Errorf("%s: encoded\n%x\nwant\n%x", g.name, got, g.wire)
		}
		// Appending keeps what dst held.
		got = g.value.Encode([]byte{0xAA})
		if got[0] != 0xAA || !reflect.DeepEqual(got[1:], g.wire) {
			t.Errorf("%s: encode after a byte lost it or changed the record", g.name)
		}
	}
}

// TestGoldenDecode checks that every golden decodes to its record,
// reading every byte.
func TestGoldenDecode(t *testing.T) {
	t.Parallel()
	for _, g := range goldens() {
		d := zkwire.NewDecoder(g.wire, zkwire.MaxBuffer)
		got := g.fresh()
		if err := got.Decode(d); err != nil {
			t.Errorf("%s: decode: %v", g.name, err)
			continue
		}
		if !reflect.DeepEqual(got, g.value) {
			t.Errorf("%s: decoded %+v, want %+v", g.name, got, g.value)
		}
		if d.Len() != 0 {
			t.Errorf("%s: %d bytes left unread", g.name, d.Len())
		}
	}
}

// TestGoldenRoundTrip checks that decode then encode gives back the
// golden bytes.
func TestGoldenRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range goldens() {
		v := g.fresh()
		if err := v.Decode(zkwire.NewDecoder(g.wire, 0)); err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		if got := v.Encode(nil); !reflect.DeepEqual(got, g.wire) {
			t.Errorf("%s: re-encoded\n%x\nwant\n%x", g.name, got, g.wire)
		}
	}
}

// TestGoldenTruncated decodes every proper prefix of every golden: each
// must fail with ErrTruncated, naming its record, never panic, except
// the prefixes that only lack an optional trailing field.
func TestGoldenTruncated(t *testing.T) {
	t.Parallel()
	for _, g := range goldens() {
		for n := 0; n < len(g.wire)-g.optional; n++ {
			err := g.fresh().Decode(zkwire.NewDecoder(g.wire[:n], 0))
			var de *zkwire.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, zkwire.ErrTruncated) {
				t.Errorf("%s cut to %d of %d bytes: got %v, want a *DecodeError for ErrTruncated", g.name, n, len(g.wire), err)
				continue
			}
			if de.Record == "" || de.Field == "" || de.Offset > n {
				t.Errorf("%s cut to %d bytes: error %+v does not say where", g.name, n, de)
			}
		}
	}
}

// TestConnectWithoutReadOnly decodes connect records from servers and
// clients that do not send the trailing readOnly byte (3.3 and before).
func TestConnectWithoutReadOnly(t *testing.T) {
	t.Parallel()
	for _, g := range goldens() {
		if g.optional == 0 {
			continue
		}
		v := g.fresh()
		if err := v.Decode(zkwire.NewDecoder(g.wire[:len(g.wire)-1], 0)); err != nil {
			t.Fatalf("%s without readOnly: %v", g.name, err)
		}
		switch r := v.(type) {
		case *zkwire.ConnectResponse:
			if r.ReadOnly || r.SessionID != 0x72e1a3b40a450000 || len(r.Passwd) != 16 {
				t.Errorf("ConnectResponse without readOnly: %+v", r)
			}
		case *zkwire.ConnectRequest:
			if r.ReadOnly || r.TimeOut != 30000 {
				t.Errorf("ConnectRequest without readOnly: %+v", r)
			}
		}
	}
}

// TestSetWatchesNilListsAreEmpty: a nil list goes as an empty vector,
// never null, since the server walks every list without a null check.
func TestSetWatchesNilListsAreEmpty(t *testing.T) {
	t.Parallel()
	got := zkwire.SetWatches2{RelativeZxid: 1}.Encode(nil)
	want := wire(
		"0000000000000001", // relativeZxid 1
		"00000000",         // dataWatches []
		"00000000",         // existWatches []
		"00000000",         // childWatches []
		"00000000",         // persistentWatches []
		"00000000",         // persistentRecursiveWatches []
	)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SetWatches2 with nil lists: %x, want %x", got, want)
	}
}

// TestDecodeErrorNamesTheField checks the message of a decode failure.
func TestDecodeErrorNamesTheField(t *testing.T) {
	t.Parallel()
	b := wire("00000003", "0000000100000004", "ffff") // ReplyHeader cut inside err
	var h zkwire.ReplyHeader
	err := h.Decode(zkwire.NewDecoder(b, 0))
	var de *zkwire.DecodeError
	if !errors.As(err, &de) || de.Record != "ReplyHeader" || de.Field != "err" || de.Offset != 12 {
		t.Fatalf("got %#v", err)
	}
	const want = "zkwire: decode ReplyHeader.err at offset 12: truncated (4 bytes needed, 2 left)"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}
