package zkwire

import "encoding/binary"

// An Encodable is a jute record that can be written: Encode appends its
// encoding to dst and returns the extended slice, as the append built-in
// does. Encode never fails: a record too long for a frame is refused when
// its frame is finished ([FinishFrame], [AppendFrame], [AppendRequest]).
// Every record of this package is an Encodable by value (and, through its
// pointer, by a non-nil pointer).
type Encodable interface {
	Encode(dst []byte) []byte
}

// AppendInt32 appends v as a jute int: 4 bytes, big-endian.
func AppendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

// AppendInt64 appends v as a jute long: 8 bytes, big-endian.
func AppendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// AppendBool appends v as a jute boolean: one byte, 1 for true and 0 for
// false.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendString appends s as a jute ustring: its length in bytes as an int,
// then its bytes. A Go string cannot be null, so the empty string is sent
// with length 0, never -1.
func AppendString(dst []byte, s string) []byte {
	dst = AppendInt32(dst, int32(len(s)))
	return append(dst, s...)
}

// AppendBuffer appends b as a jute buffer: its length as an int, then its
// bytes. A nil b is null, length -1; an empty non-nil b has length 0.
func AppendBuffer(dst []byte, b []byte) []byte {
	if b == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(b)))
	return append(dst, b...)
}

// AppendStrings appends v as a jute vector<ustring>: the count as an int,
// then each string. A nil v is null, count -1; an empty non-nil v has
// count 0.
func AppendStrings(dst []byte, v []string) []byte {
	if v == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(v)))
	for _, s := range v {
		dst = AppendString(dst, s)
	}
	return dst
}
