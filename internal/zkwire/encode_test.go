package zkwire_test

import (
	"reflect"
	"testing"

	"github.com/zklock/zklock/internal/zkwire"
)

// TestAppendPrimitives checks each jute primitive against bytes written
// by hand: big-endian two's complement ints, one-byte booleans, and
// lengths of -1 for null buffers and vectors only.
func TestAppendPrimitives(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"int 1", zkwire.AppendInt32(nil, 1), wire("00000001")},
		{"int -101", zkwire.AppendInt32(nil, -101), wire("ffffff9b")},
		{"int min", zkwire.AppendInt32(nil, -1<<31), wire("80000000")},
		{"long", zkwire.AppendInt64(nil, 0x0102030405060708), wire("0102030405060708")},
		{"long -1", zkwire.AppendInt64(nil, -1), wire("ffffffffffffffff")},
		{"true", zkwire.AppendBool(nil, true), wire("01")},
		{"false", zkwire.AppendBool(nil, false), wire("00")},
		{"string", zkwire.AppendString(nil, "/a"), wire("00000002 2f61")},
		{"empty string", zkwire.AppendString(nil, ""), wire("00000000")},
		{"utf-8 string", zkwire.AppendString(nil, "é"), wire("00000002 c3a9")},
		{"null buffer", zkwire.AppendBuffer(nil, nil), wire("ffffffff")},
		{"empty buffer", zkwire.AppendBuffer(nil, []byte{}), wire("00000000")},
		{"buffer", zkwire.AppendBuffer(nil, []byte{0, 0xff}), wire("00000002 00ff")},
		{"null vector", zkwire.AppendStrings(nil, nil), wire("ffffffff")},
		{"empty vector", zkwire.AppendStrings(nil, []string{}), wire("00000000")},
		{"vector", zkwire.AppendStrings(nil, []string{"a", ""}), wire("00000002 00000001 61 00000000")},
		{"appends", zkwire.AppendInt32([]byte{9}, 2), wire("09 00000002")},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: %x, want %x", tt.name, tt.got, tt.want)
		}
	}
}

// TestEncodeAllocatesNothing: a record appended into a buffer with room
// costs no allocation.
func TestEncodeAllocatesNothing(t *testing.T) {
	req := zkwire.CreateRequest{Path: "/locks/job/_c_0f8e2c1a-lock-", Data: []byte("host-1"), ACL: openACL, Flags: zkwire.ModeEphemeralSequential}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		b := zkwire.StartFrame(buf[:0])
		b = zkwire.RequestHeader{Xid: 1, Type: zkwire.OpCreate2}.Encode(b)
		b = req.Encode(b)
		if _, err := zkwire.FinishFrame(b, 0, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
}
