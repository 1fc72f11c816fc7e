package zkwire

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
)

// MaxBuffer is ZooKeeper's default jute.maxbuffer, 0xfffff bytes (1 MiB
// less one): the longest frame payload a server accepts before it closes
// the connection, and the longest the Java client accepts from a server.
// It is the limit that a maxLen of 0 (or less) selects in this file.
const MaxBuffer = 0xfffff

// ErrFrameSize is the reason of every [*FrameSizeError]: test for it
// with errors.Is.
var ErrFrameSize = errors.New("zkwire: frame size out of range")

// A FrameSizeError is returned for a frame whose length is out of range:
// one about to be sent whose payload is over the limit (nothing is
// appended), or one being read whose announced length is negative or over
// the limit (nothing of that size is allocated).
type FrameSizeError struct {
	Len int64 // the payload's length, or the length the frame announced
	Max int   // the limit
}

// Error returns "zkwire: frame of <len> bytes, over the limit of <max>",
// or "zkwire: frame length <len> is negative".
func (e *FrameSizeError) Error() string {
	if e.Len < 0 {
		return "zkwire: frame length " + strconv.FormatInt(e.Len, 10) + " is negative"
	}
	return "zkwire: frame of " + strconv.FormatInt(e.Len, 10) + " bytes, over the limit of " + strconv.Itoa(e.Max)
}

// Unwrap returns ErrFrameSize.
func (e *FrameSizeError) Unwrap() error { return ErrFrameSize }

// limit returns maxLen, MaxBuffer for maxLen <= 0, and at most the
// longest length a frame can state.
func limit(maxLen int) int {
	if maxLen <= 0 {
		return MaxBuffer
	}
	return min(maxLen, math.MaxInt32)
}

// StartFrame appends a frame's 4-byte length, to be filled in by
// FinishFrame once the payload is appended after it. A caller that
// appends records itself, with no interface in the way, encodes a frame
// with no allocation:
//
//	start := len(buf)
//	buf = zkwire.StartFrame(buf)
//	buf = zkwire.RequestHeader{Xid: xid, Type: zkwire.OpDelete}.Encode(buf)
//	buf = zkwire.DeleteRequest{Path: p, Version: -1}.Encode(buf)
//	buf, err := zkwire.FinishFrame(buf, start, zkwire.MaxBuffer)
func StartFrame(dst []byte) []byte {
	return append(dst, 0, 0, 0, 0)
}

// FinishFrame writes the length of the frame that StartFrame began at
// dst[start:] (start is len(dst) before StartFrame). If the payload is
// longer than maxLen (MaxBuffer for maxLen <= 0) it returns dst[:start],
// with the frame removed, and a *FrameSizeError.
func FinishFrame(dst []byte, start, maxLen int) ([]byte, error) {
	n := len(dst) - start - 4
	if maxLen = limit(maxLen); n > maxLen {
		return dst[:start], &FrameSizeError{Len: int64(n), Max: maxLen}
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// AppendFrame appends to dst a frame whose payload is rec's encoding,
// for a message with no header: the ConnectRequest. It reserves the
// length, encodes rec and writes the length back. If the payload is
// longer than maxLen (MaxBuffer for maxLen <= 0) it appends nothing and
// returns a *FrameSizeError.
func AppendFrame(dst []byte, maxLen int, rec Encodable) ([]byte, error) {
	start := len(dst)
	dst = rec.Encode(StartFrame(dst))
	return FinishFrame(dst, start, maxLen)
}

// AppendRequest appends to dst the frame of a request: h, then body's
// encoding. body is nil for the requests that have none (OpPing,
// OpCloseSession). A body with a Validate method (MultiRequest) is
// validated first, and its error returned. If the payload is longer than
// maxLen (MaxBuffer for maxLen <= 0) AppendRequest appends nothing and
// returns a *FrameSizeError: a server would close the connection on it.
func AppendRequest(dst []byte, maxLen int, h RequestHeader, body Encodable) ([]byte, error) {
	if v, ok := body.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return dst, err
		}
	}
	start := len(dst)
	dst = h.Encode(StartFrame(dst))
	if body != nil {
		dst = body.Encode(dst)
	}
	return FinishFrame(dst, start, maxLen)
}

// ReadFrame reads one frame from r and returns its payload, read into buf
// (which it grows if buf's capacity is short; pass the payload back as
// buf to reuse it). A length that is negative or over maxLen (MaxBuffer for
// maxLen <= 0) is a *FrameSizeError, returned before anything of that size
// is allocated or read. An error from r is returned wrapped: io.EOF when
// r ends cleanly before a frame, io.ErrUnexpectedEOF when it ends inside
// one. After any error the stream's framing is lost: close the
// connection.
func ReadFrame(r io.Reader, buf []byte, maxLen int) ([]byte, error) {
	if cap(buf) < 4 {
		buf = make([]byte, 0, 512)
	}
	if _, err := io.ReadFull(r, buf[:4]); err != nil {
		return buf[:0], frameReadError(err)
	}
	n := int64(int32(binary.BigEndian.Uint32(buf[:4])))
	if maxLen = limit(maxLen); n < 0 || n > int64(maxLen) {
		return buf[:0], &FrameSizeError{Len: n, Max: maxLen}
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf[:0], frameReadError(err)
	}
	return buf, nil
}

// A frameError wraps an error of the reader ReadFrame reads from.
type frameError struct{ err error }

func (e *frameError) Error() string { return "zkwire: read frame: " + e.err.Error() }
func (e *frameError) Unwrap() error { return e.err }

// frameReadError wraps err, an error from ReadFrame's reader.
func frameReadError(err error) error { return &frameError{err} }

// DecodeReplyBody reads a reply's body, if it has one, from d positioned
// just after the reply's header h. The rule, ZooKeeper's: a server sends
// the response record only when h.Err is CodeOK, so for any other error
// DecodeReplyBody reads nothing, leaves body as it is and returns nil (the
// error is h.Err). A nil body stands for the operations whose reply has
// no record (delete, setWatches, removeWatches, checkWatches, ping, auth,
// closeSession). Bytes after the body are left unread, as the Java
// client leaves them.
func DecodeReplyBody(d *Decoder, h ReplyHeader, body Decodable) error {
	if h.Err != CodeOK || body == nil {
		return d.Err()
	}
	return body.Decode(d)
}

// DecodeReply decodes a reply frame's payload: its ReplyHeader, then,
// by DecodeReplyBody's rule, body. maxLen limits lengths as in NewDecoder.
// A notification is a reply whose header has XidNotification and whose
// body is a WatcherEvent.
func DecodeReply(payload []byte, maxLen int, body Decodable) (ReplyHeader, error) {
	var d Decoder
	d.Reset(payload, maxLen)
	var h ReplyHeader
	if err := h.Decode(&d); err != nil {
		return h, err
	}
	return h, DecodeReplyBody(&d, h, body)
}
