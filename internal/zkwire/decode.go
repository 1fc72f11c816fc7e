package zkwire

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// The reasons a decode fails, wrapped by every [*DecodeError]: test them
// with errors.Is.
var (
	// ErrTruncated is the reason when the bytes end before the record
	// does: a field, or the bytes a length or count announces, is cut
	// short.
	ErrTruncated = errors.New("zkwire: truncated")
	// ErrBadLength is the reason when a length or count is negative and
	// not -1 (null).
	ErrBadLength = errors.New("zkwire: negative length")
	// ErrTooLong is the reason when a length or count is over the
	// Decoder's limit.
	ErrTooLong = errors.New("zkwire: length over the limit")
	// ErrInvalid is the reason when a field holds a value its record
	// cannot have, such as an unknown operation in a multi response.
	ErrInvalid = errors.New("zkwire: invalid value")
)

// A DecodeError says why and where a record did not decode.
type DecodeError struct {
	Record string // the jute record, "ReplyHeader"
	Field  string // the field, in the record's jute spelling, "zxid"
	Offset int    // where the field starts, in bytes from the input's start
	Err    error  // the reason: ErrTruncated, ErrBadLength, ErrTooLong or ErrInvalid
	Detail string // the numbers behind the reason, "4 bytes needed, 2 left"
}

// Error returns "zkwire: decode <record>.<field> at offset <n>: <reason>
// (<detail>)".
func (e *DecodeError) Error() string {
	s := "zkwire: decode " + e.Record + "." + e.Field + " at offset " +
		strconv.Itoa(e.Offset) + ": " + reason(e.Err)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the reason, e.Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// reason returns a sentinel's message without the package prefix.
func reason(err error) string {
	if err == nil {
		return "failed"
	}
	s := err.Error()
	const prefix = "zkwire: "
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

// A Decodable is a jute record that can be read: Decode reads it from d
// and returns d's first failure (nil if there is none).
type Decodable interface {
	Decode(d *Decoder) error
}

// A Decoder reads jute values from a byte slice. It never panics: every
// read is bounds-checked and every length validated. The first failure
// is kept: later reads return zero values, and Err returns it. Reads take
// the record and field names that a failure reports.
//
// A Decoder is not safe for concurrent use. Its zero value decodes an
// empty input; Reset gives it another.
type Decoder struct {
	buf []byte
	off int
	max int          // the longest length or count accepted; 0 for no limit but the input's size
	err *DecodeError // the first failure, nil while there is none
}

// NewDecoder returns a Decoder over b. A length or count over maxLen is
// refused with ErrTooLong; maxLen <= 0 sets no limit but the bytes there
// are. The Decoder reads b in place and never writes to it.
func NewDecoder(b []byte, maxLen int) *Decoder {
	d := &Decoder{}
	d.Reset(b, maxLen)
	return d
}

// Reset makes d decode b from its start, with the limit maxLen (as for
// NewDecoder), and clears any failure: a transport keeps one Decoder per
// connection and resets it for each frame.
func (d *Decoder) Reset(b []byte, maxLen int) {
	*d = Decoder{buf: b, max: maxLen}
}

// Err returns the first failure as a *DecodeError, or nil if every read
// succeeded.
func (d *Decoder) Err() error {
	if d.err == nil {
		return nil
	}
	return d.err
}

// Len returns how many bytes are left to read.
func (d *Decoder) Len() int { return len(d.buf) - d.off }

// Offset returns how many bytes have been read.
func (d *Decoder) Offset() int { return d.off }

// Fail records a failure at the current offset, if none is recorded yet:
// a record's Decode calls it for a value its record cannot have (reason
// ErrInvalid).
func (d *Decoder) Fail(record, field string, reason error, detail string) {
	if d.err == nil {
		d.err = &DecodeError{Record: record, Field: field, Offset: d.off, Err: reason, Detail: detail}
	}
}

// need reports whether n more bytes can be read, recording ErrTruncated
// when they cannot.
func (d *Decoder) need(record, field string, n int) bool {
	if d.err != nil {
		return false
	}
	if left := d.Len(); left < n {
		d.Fail(record, field, ErrTruncated, nbytes(n)+" needed, "+strconv.Itoa(left)+" left")
		return false
	}
	return true
}

// nbytes returns "1 byte" or "n bytes".
func nbytes(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.Itoa(n) + " bytes"
}

// Int32 reads a jute int.
func (d *Decoder) Int32(record, field string) int32 {
	if !d.need(record, field, 4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.buf[d.off:]))
	d.off += 4
	return v
}

// Int64 reads a jute long.
func (d *Decoder) Int64(record, field string) int64 {
	if !d.need(record, field, 8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.buf[d.off:]))
	d.off += 8
	return v
}

// Bool reads a jute boolean. As Java's DataInput.readBoolean, any byte
// but 0 is true.
func (d *Decoder) Bool(record, field string) bool {
	if !d.need(record, field, 1) {
		return false
	}
	v := d.buf[d.off] != 0
	d.off++
	return v
}

// length reads a length or count that announces at least unit bytes per
// unit, and validates it: -1 (null) is returned as is; any other negative
// value, a value over the limit, or one announcing more bytes than are
// left is a failure, reported at the length's offset, and returns -1.
func (d *Decoder) length(record, field string, unit int) int {
	at := d.off
	n := int(d.Int32(record, field))
	if d.err != nil || n == -1 {
		return -1
	}
	var why error
	switch {
	case n < 0:
		why = ErrBadLength
	case d.max > 0 && n > d.max:
		why = ErrTooLong
	case n > d.Len()/unit:
		why = ErrTruncated
	default:
		return n
	}
	detail := "length " + strconv.Itoa(n) + ", " + strconv.Itoa(d.Len()) + " bytes left"
	if why == ErrTooLong {
		detail = "length " + strconv.Itoa(n) + ", limit " + strconv.Itoa(d.max)
	}
	d.off = at
	d.Fail(record, field, why, detail)
	return -1
}

// Ustring reads a jute ustring. Null (length -1) reads as "". The string
// is a copy of the bytes, not checked for UTF-8: one allocation, none for
// the empty string.
func (d *Decoder) Ustring(record, field string) string {
	n := d.length(record, field, 1)
	if n <= 0 {
		return ""
	}
	s := string(d.buf[d.off : d.off+n])
	d.off += n
	return s
}

// Buffer reads a jute buffer. Null (length -1) reads as nil, length 0 as
// an empty non-nil slice. The bytes are a copy: one allocation, none for
// null or empty.
func (d *Decoder) Buffer(record, field string) []byte {
	n := d.length(record, field, 1)
	switch {
	case n < 0:
		return nil
	case n == 0:
		return []byte{}
	}
	b := make([]byte, n)
	copy(b, d.buf[d.off:])
	d.off += n
	return b
}

// VectorLen reads a jute vector's count, for elements of at least
// minElem bytes each: -1 for null (or after a failure), otherwise a count
// whose elements can fit in what is left, so that a caller may allocate
// that many at once.
func (d *Decoder) VectorLen(record, field string, minElem int) int {
	return d.length(record, field, max(minElem, 1))
}

// Ustrings reads a jute vector<ustring>. Null (count -1) reads as nil,
// count 0 as an empty non-nil slice, a null element as "". It allocates
// twice, whatever the count: the slice, and one string holding every
// element, which the elements share (keeping one keeps all alive).
func (d *Decoder) Ustrings(record, field string) []string {
	n := d.VectorLen(record, field, 4)
	switch {
	case n < 0:
		return nil
	case n == 0:
		return []string{}
	}
	start := d.off
	for i := 0; i < n; i++ { // validate every element before allocating
		l := d.length(record, field, 1)
		if d.err != nil {
			return nil
		}
		d.off += max(l, 0)
	}
	all := string(d.buf[start:d.off])
	out := make([]string, n)
	at := 0
	for i := range out { // the lengths again, from the validated copy
		l := int(int32(uint32(all[at])<<24 | uint32(all[at+1])<<16 | uint32(all[at+2])<<8 | uint32(all[at+3])))
		at += 4
		if l > 0 {
			out[i] = all[at : at+l]
			at += l
		}
	}
	return out
}
