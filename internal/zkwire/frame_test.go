package zkwire_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/zklock/zklock/internal/zkwire"
)

// TestAppendRequestGolden: a request frame is the length (not counting
// itself), the header, then the body; a ping and a closeSession have no
// body.
func TestAppendRequestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    zkwire.RequestHeader
		body zkwire.Encodable
		want []byte
	}{
		{"ping", zkwire.RequestHeader{Xid: zkwire.XidPing, Type: zkwire.OpPing}, nil, wire(
			"00000008", // length 8
			"fffffffe", // xid -2
			"0000000b", // type ping
		)},
		{"closeSession", zkwire.RequestHeader{Xid: 9, Type: zkwire.OpCloseSession}, nil, wire(
			"00000008", // length 8
			"00000009", // xid 9
			"fffffff5", // type closeSession
		)},
		{"delete", zkwire.RequestHeader{Xid: 2, Type: zkwire.OpDelete}, zkwire.DeleteRequest{Path: "/a", Version: -1}, wire(
			"00000012",              // length 18
			"00000002",              // xid 2
			"00000002",              // type delete
			"00000002", ascii("/a"), // path
			"ffffffff", // version -1
		)},
		{"auth", zkwire.RequestHeader{Xid: zkwire.XidAuth, Type: zkwire.OpAuth},
			zkwire.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, wire(
				"0000001d",                  // length 29
				"fffffffc",                  // xid -4
				"00000064",                  // type auth (100)
				"00000000",                  // AuthPacket.type 0
				"00000006", ascii("digest"), // scheme
				"00000003", ascii("u:p"), // auth
			)},
	}
	for _, tt := range tests {
		got, err := zkwire.AppendRequest([]byte{0xAA}, 0, tt.h, tt.body)
		if err != nil || got[0] != 0xAA || !bytes.Equal(got[1:], tt.want) {
			t.Errorf("%s: %x, %v; want aa%x", tt.name, got, err, tt.want)
		}
	}
}

// TestAppendFrameConnect: the connect request goes with no header.
func TestAppendFrameConnect(t *testing.T) {
	t.Parallel()
	req := zkwire.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}
	got, err := zkwire.AppendFrame(nil, 0, req)
	want := append(wire("0000002d"), req.Encode(nil)...) // 4+8+4+8+4+16+1 = 45 bytes
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%x, %v; want %x", got, err, want)
	}
}

// TestFrameLimit: a payload over the limit is refused before it is sent,
// with nothing appended; one at the limit goes.
func TestFrameLimit(t *testing.T) {
	t.Parallel()
	h := zkwire.RequestHeader{Xid: 1, Type: zkwire.OpSetData}
	// header 8 + path 4+2 + data 4+n + version 4 = 22+n bytes of payload.
	at := zkwire.SetDataRequest{Path: "/a", Data: make([]byte, zkwire.MaxBuffer-22)}
	got, err := zkwire.AppendRequest([]byte("x"), 0, h, at)
	if err != nil || len(got) != 1+4+zkwire.MaxBuffer {
		t.Fatalf("at the limit: %d bytes, %v", len(got), err)
	}
	over := zkwire.SetDataRequest{Path: "/a", Data: make([]byte, zkwire.MaxBuffer-21)}
	got, err = zkwire.AppendRequest([]byte("x"), 0, h, over)
	var fe *zkwire.FrameSizeError
	if !errors.As(err, &fe) || !errors.Is(err, zkwire.ErrFrameSize) || fe.Len != zkwire.MaxBuffer+1 || fe.Max != zkwire.MaxBuffer {
		t.Fatalf("over the limit: %v", err)
	}
	if string(got) != "x" {
		t.Errorf("over the limit: %d bytes left in dst, want the 1 it had", len(got))
	}
	if _, err := zkwire.AppendFrame(nil, 10, zkwire.SyncRequest{Path: "/abcdefg"}); !errors.As(err, &fe) || fe.Max != 10 {
		t.Errorf("own limit: %v", err)
	}
	if !strings.Contains(err.Error(), "1048576 bytes, over the limit of 1048575") {
		t.Errorf("message %q", err)
	}
}

// TestAppendRequestValidatesMulti: an invalid multi is refused, nothing
// appended.
func TestAppendRequestValidatesMulti(t *testing.T) {
	t.Parallel()
	bad := zkwire.MultiRequest{Ops: []zkwire.MultiOp{{Type: zkwire.OpGetData, Req: zkwire.GetDataRequest{Path: "/a"}}}}
	got, err := zkwire.AppendRequest(nil, 0, zkwire.RequestHeader{Xid: 1, Type: zkwire.OpMulti}, bad)
	if !errors.Is(err, zkwire.ErrInvalidOp) || len(got) != 0 {
		t.Errorf("%x, %v", got, err)
	}
}

// TestReadFrame reads frames one after another, reusing the buffer.
func TestReadFrame(t *testing.T) {
	t.Parallel()
	r := bytes.NewReader(wire("00000002 6869", "00000000", "00000003 616263"))
	var buf []byte
	var got []string
	for {
		var err error
		buf, err = zkwire.ReadFrame(r, buf, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(buf))
	}
	if !reflect.DeepEqual(got, []string{"hi", "", "abc"}) {
		t.Errorf("frames %q", got)
	}
}

// TestReadFrameBadLengths: a negative or oversize length is a
// *FrameSizeError before anything of its size is allocated; a frame cut
// short is io.ErrUnexpectedEOF.
func TestReadFrameBadLengths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"negative", wire("ffffffff"), 0, zkwire.ErrFrameSize},
		{"most negative", wire("80000000"), 0, zkwire.ErrFrameSize},
		{"over MaxBuffer", wire("00100000"), 0, zkwire.ErrFrameSize},
		{"huge", wire("7fffffff 00"), 0, zkwire.ErrFrameSize},
		{"over own limit", wire("00000011"), 16, zkwire.ErrFrameSize},
		{"cut in the length", wire("0000"), 0, io.ErrUnexpectedEOF},
		{"cut in the payload", wire("00000004 6869"), 0, io.ErrUnexpectedEOF},
		{"empty stream", nil, 0, io.EOF},
	}
	for _, tt := range tests {
		buf := make([]byte, 0, 8)
		got, err := zkwire.ReadFrame(bytes.NewReader(tt.in), buf, tt.max)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if cap(got) > 8 {
			t.Errorf("%s: buffer grew to %d", tt.name, cap(got))
		}
	}
}

// TestReadFrameAllocatesNothing: reading into a buffer with room costs
// no allocation.
func TestReadFrameAllocatesNothing(t *testing.T) {
	in := wire("00000003 616263")
	r := bytes.NewReader(in)
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		if _, err := zkwire.ReadFrame(r, buf, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
}

// TestDecodeReplyBodyRule: a reply carries its record only when its
// error is OK; for any other error nothing is read, the body is left as
// it was, and the error is the header's.
func TestDecodeReplyBodyRule(t *testing.T) {
	t.Parallel()
	noNode := wire(
		"00000007",         // xid 7
		"0000000100000009", // zxid
		"ffffff9b",         // err -101 NoNode: no body follows
	)
	body := zkwire.GetDataResponse{Data: []byte("untouched")}
	h, err := zkwire.DecodeReply(noNode, 0, &body)
	if err != nil || h.Err != zkwire.CodeNoNode || h.Xid != 7 || string(body.Data) != "untouched" {
		t.Errorf("error reply: %+v, %v, body %q", h, err, body.Data)
	}
	ok := wire("00000007", "0000000100000009", "00000000", "00000002", ascii("v1"), statWire)
	h, err = zkwire.DecodeReply(ok, 0, &body)
	if err != nil || h.Err != zkwire.CodeOK || string(body.Data) != "v1" || body.Stat != goldenStat {
		t.Errorf("ok reply: %+v, %v, %+v", h, err, body)
	}
	if _, err := zkwire.DecodeReply(ok[:20], 0, &body); !errors.Is(err, zkwire.ErrTruncated) {
		t.Errorf("cut ok reply: %v", err)
	}
	if _, err := zkwire.DecodeReply(noNode[:15], 0, nil); !errors.Is(err, zkwire.ErrTruncated) {
		t.Errorf("cut header: %v", err)
	}
}

// TestDecodeNotification: a notification is a reply with xid -1 and a
// WatcherEvent body.
func TestDecodeNotification(t *testing.T) {
	t.Parallel()
	in := wire(
		"ffffffff",              // xid -1: notification
		"ffffffffffffffff",      // zxid -1 (servers up to 3.8)
		"00000000",              // err 0
		"00000002",              // type NodeDeleted
		"00000003",              // state SyncConnected
		"00000002", ascii("/a"), // path
	)
	var ev zkwire.WatcherEvent
	h, err := zkwire.DecodeReply(in, 0, &ev)
	want := zkwire.WatcherEvent{Type: zkwire.EventNodeDeleted, State: zkwire.StateSyncConnected, Path: "/a"}
	if err != nil || h.Xid != zkwire.XidNotification || h.Zxid != -1 || ev != want {
		t.Errorf("%+v %+v %v", h, ev, err)
	}
}

// BenchmarkEncodeCreateRequest encodes a lock node's create2 request
// frame, as the transport will: the request built per call, appended
// through AppendRequest (the interface the transport's queue holds).
func BenchmarkEncodeCreateRequest(b *testing.B) {
	buf := make([]byte, 0, 512)
	data := []byte("host-1")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req := &zkwire.CreateRequest{Path: "/locks/job/_c_0f8e2c1a-9b7d-4c3e-a5f6-1d2e3f4a5b6c-lock-", Data: data, ACL: openACL, Flags: zkwire.ModeEphemeralSequential}
		var err error
		if _, err = zkwire.AppendRequest(buf[:0], 0, zkwire.RequestHeader{Xid: int32(i), Type: zkwire.OpCreate2}, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeGetChildren2Reply decodes a getChildren2 reply listing
// 100 lock nodes, header and body, with a Decoder reused per frame as a
// transport keeps one per connection.
func BenchmarkDecodeGetChildren2Reply(b *testing.B) {
	frame := zkwire.ReplyHeader{Xid: 7, Zxid: 0x100000009}.Encode(nil)
	frame = zkwire.GetChildren2Response{Children: children(100), Stat: goldenStat}.Encode(frame)
	var d zkwire.Decoder
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(frame, 0)
		var h zkwire.ReplyHeader
		var resp zkwire.GetChildren2Response
		if h.Decode(&d) != nil || zkwire.DecodeReplyBody(&d, h, &resp) != nil || len(resp.Children) != 100 {
			b.Fatal(d.Err())
		}
	}
}
