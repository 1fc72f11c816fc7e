package zkwire_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"testing"

	"github.com/zklock/zklock/internal/zkwire"
)

// TestDecoderLengths checks how a buffer's length is validated: -1 is
// null, 0 empty, other negatives, lengths past the input and lengths
// over the limit are typed failures at the length's offset.
func TestDecoderLengths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []byte
		max     int
		want    []byte
		wantErr error
	}{
		{name: "null", in: wire("ffffffff"), want: nil},
		{name: "empty", in: wire("00000000"), want: []byte{}},
		{name: "three", in: wire("00000003 616263"), want: []byte("abc")},
		{name: "negative", in: wire("fffffffe"), wantErr: zkwire.ErrBadLength},
		{name: "most negative", in: wire("80000000"), wantErr: zkwire.ErrBadLength},
		{name: "past the input", in: wire("00000005 6162"), wantErr: zkwire.ErrTruncated},
		{name: "huge", in: wire("7fffffff 6162"), wantErr: zkwire.ErrTruncated},
		{name: "over the limit", in: wire("00000003 616263"), max: 2, wantErr: zkwire.ErrTooLong},
		{name: "at the limit", in: wire("00000003 616263"), max: 3, want: []byte("abc")},
	}
	for _, tt := range tests {
		d := zkwire.NewDecoder(tt.in, tt.max)
		got := d.Buffer("Test", "buf")
		err := d.Err()
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.wantErr)
			continue
		}
		if tt.wantErr != nil {
			var de *zkwire.DecodeError
			if !errors.As(err, &de) || de.Offset != 0 || de.Record != "Test" || de.Field != "buf" {
				t.Errorf("%s: %#v does not name Test.buf at offset 0", tt.name, err)
			}
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

// TestDecoderHugeCountAllocatesNothing: a vector announcing 2^31-1
// elements over a few bytes fails before anything of that size is
// allocated.
func TestDecoderHugeCountAllocatesNothing(t *testing.T) {
	in := wire("7fffffff 00000001 61") // 2^31-1 children, then one "a"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var r zkwire.GetChildren2Response
	err := r.Decode(zkwire.NewDecoder(in, 0))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, zkwire.ErrTruncated) {
		t.Fatalf("got %v, want ErrTruncated", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("decoding allocated %d bytes", grew)
	}
}

// TestDecoderKeepsFirstFailure: after a failure every read returns its
// zero value and Err keeps the first failure; Reset clears it.
func TestDecoderKeepsFirstFailure(t *testing.T) {
	t.Parallel()
	d := zkwire.NewDecoder(wire("0000002a 00"), 0)
	if v := d.Int32("R", "a"); v != 42 {
		t.Fatalf("a = %d", v)
	}
	d.Int32("R", "b") // one byte left: fails
	first := d.Err()
	if d.Int64("R", "c") != 0 || d.Bool("R", "d") || d.Ustring("R", "e") != "" || d.Buffer("R", "f") != nil || d.Ustrings("R", "g") != nil {
		t.Error("a read after a failure returned a value")
	}
	var de *zkwire.DecodeError
	if !errors.As(d.Err(), &de) || de.Field != "b" || d.Err() != first {
		t.Errorf("Err = %v, want the failure of b", d.Err())
	}
	d.Reset(wire("01"), 0)
	if !d.Bool("R", "h") || d.Err() != nil || d.Len() != 0 || d.Offset() != 1 {
		t.Errorf("after Reset: err %v, len %d", d.Err(), d.Len())
	}
}

// TestDecoderBool: as Java's readBoolean, any byte but 0 is true.
func TestDecoderBool(t *testing.T) {
	t.Parallel()
	d := zkwire.NewDecoder([]byte{0, 1, 2, 0xff}, 0)
	got := []bool{d.Bool("R", "a"), d.Bool("R", "b"), d.Bool("R", "c"), d.Bool("R", "d")}
	if !reflect.DeepEqual(got, []bool{false, true, true, true}) || d.Err() != nil {
		t.Errorf("got %v, %v", got, d.Err())
	}
}

// TestDecoderNullStrings: a null ustring reads as "", also inside a
// vector; a null vector as nil.
func TestDecoderNullStrings(t *testing.T) {
	t.Parallel()
	d := zkwire.NewDecoder(wire("ffffffff", "00000002 ffffffff 00000001 61", "ffffffff"), 0)
	if s := d.Ustring("R", "a"); s != "" {
		t.Errorf("null ustring = %q", s)
	}
	if v := d.Ustrings("R", "b"); !reflect.DeepEqual(v, []string{"", "a"}) {
		t.Errorf("vector with a null = %q", v)
	}
	if v := d.Ustrings("R", "c"); v != nil {
		t.Errorf("null vector = %#v", v)
	}
	if d.Err() != nil || d.Len() != 0 {
		t.Errorf("err %v, %d left", d.Err(), d.Len())
	}
}

// TestDecodedValuesDoNotAliasInput: a transport reuses its read buffer
// for the next frame; what was decoded from it must not change.
func TestDecodedValuesDoNotAliasInput(t *testing.T) {
	t.Parallel()
	in := wire("00000002 6869", "00000002 7631", "00000002 00000001 61 00000002 6263")
	d := zkwire.NewDecoder(in, 0)
	s, b, v := d.Ustring("R", "s"), d.Buffer("R", "b"), d.Ustrings("R", "v")
	for i := range in {
		in[i] = 0xee
	}
	if s != "hi" || string(b) != "v1" || !reflect.DeepEqual(v, []string{"a", "bc"}) {
		t.Errorf("after the input changed: %q %q %q", s, b, v)
	}
}

// TestUstringsAllocatesTwice: a listing of 100 children costs two
// allocations, the slice and one string the names share.
func TestUstringsAllocatesTwice(t *testing.T) {
	in := zkwire.AppendStrings(nil, children(100))
	d := zkwire.NewDecoder(in, 0)
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(in, 0)
		if v := d.Ustrings("R", "children"); len(v) != 100 {
			t.Fatal(d.Err())
		}
	})
	if allocs != 2 {
		t.Errorf("%v allocations, want 2", allocs)
	}
}

// children returns n lock-node names as Curator names them.
func children(n int) []string {
	v := make([]string, n)
	for i := range v {
		v[i] = fmt.Sprintf("_c_0f8e2c1a-9b7d-4c3e-a5f6-1d2e3f4a5b6c-lock-%010d", i)
	}
	return v
}

// decoders returns one zero record of each kind the package decodes.
func decoders() []func() codec {
	seen := map[reflect.Type]bool{}
	var out []func() codec
	for _, g := range goldens() {
		if t := reflect.TypeOf(g.fresh()); !seen[t] {
			seen[t] = true
			out = append(out, g.fresh)
		}
	}
	return out
}

// FuzzDecode feeds arbitrary bytes to every record's decoder, to the
// reply decoder and to the frame reader: none may panic, a decoded
// record re-encodes to bytes that decode and re-encode the same, and
// frames never exceed their limit. The goldens and their frames seed it,
// so that a plain `go test` runs them.
func FuzzDecode(f *testing.F) {
	for _, g := range goldens() {
		f.Add(g.wire)
		f.Add(append(wire("00000000"), g.wire...)) // behind a 4-byte header
	}
	f.Add(wire("7fffffff"))
	f.Add(wire("80000000 00"))
	recs := decoders()
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, fresh := range recs {
			fuzzRecord(t, fresh, in)
		}
		fuzzReply(t, in)
		fuzzFrames(t, in)
	})
}

// fuzzRecord decodes in as one record and checks its re-encoding.
func fuzzRecord(t *testing.T, fresh func() codec, in []byte) {
	d := zkwire.NewDecoder(in, 1<<12)
	v := fresh()
	err := v.Decode(d)
	if d.Offset() > len(in) {
		t.Fatalf("%T: offset %d past %d bytes", v, d.Offset(), len(in))
	}
	if err != nil {
		var de *zkwire.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%T: error %v is not a *DecodeError", v, err)
		}
		return
	}
	enc := v.Encode(nil)
	w := fresh()
	if err := w.Decode(zkwire.NewDecoder(enc, 0)); err != nil {
		t.Fatalf("%T: re-encoding %x does not decode: %v", v, enc, err)
	}
	if again := w.Encode(nil); !bytes.Equal(again, enc) {
		t.Fatalf("%T: re-encoding is not stable:\n%x\n%x", v, enc, again)
	}
}

// fuzzReply decodes in as a reply with a few bodies.
func fuzzReply(t *testing.T, in []byte) {
	bodies := []zkwire.Decodable{nil, new(zkwire.WatcherEvent), new(zkwire.GetChildren2Response), new(zkwire.MultiResponse)}
	for _, body := range bodies {
		h, err := zkwire.DecodeReply(in, 0, body)
		if err == nil && len(in) < 16 {
			t.Fatalf("reply of %d bytes decoded: %+v", len(in), h)
		}
	}
}

// fuzzFrames reads frames of at most 64 bytes from in until an error.
func fuzzFrames(t *testing.T, in []byte) {
	r := bytes.NewReader(in)
	var buf []byte
	read := 0
	for {
		var err error
		buf, err = zkwire.ReadFrame(r, buf, 64)
		if err != nil {
			var fe *zkwire.FrameSizeError
			if !errors.As(err, &fe) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadFrame: unexpected error %v", err)
			}
			return
		}
		if len(buf) > 64 || !bytes.Equal(buf, in[read+4:read+4+len(buf)]) {
			t.Fatalf("frame of %d bytes at %d is not the input's", len(buf), read)
		}
		read += 4 + len(buf)
	}
}
