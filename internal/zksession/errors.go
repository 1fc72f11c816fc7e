package zksession

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/zklock/zklock/internal/zkwire"
)

// ErrClosed is returned by every call on a Session after Close.
var ErrClosed = errors.New("zksession: session closed")

// ErrReadOnly is the reason a server that offered a read-only session
// was passed over: zklock never takes one.
var ErrReadOnly = errors.New("zksession: server offered a read-only session")

// ErrNotZooKeeper is matched (errors.Is) by the error of a connection
// attempt whose server answered the ConnectRequest with bytes that are
// no ConnectResponse: another protocol's server (HTTP, say), or a TLS
// port dialed in the clear. The error's text is "<addr> answered, but not
// as ZooKeeper: its reply began "<its first bytes>"".
var ErrNotZooKeeper = errors.New("zksession: server answered, but not as ZooKeeper")

// A notZooKeeperError is why a server that answered, but not as
// ZooKeeper, was given up on; it matches ErrNotZooKeeper.
type notZooKeeperError struct {
	addr string
	head []byte // the first bytes of its reply
	err  error  // why they are no ConnectResponse, if more than their length says
}

func (e *notZooKeeperError) Error() string {
	msg := fmt.Sprintf("%s answered, but not as ZooKeeper: its reply began %s", e.addr, strconv.Quote(string(e.head)))
	if len(e.head) > 1 && e.head[0] >= 0x14 && e.head[0] <= 0x17 && e.head[1] == 3 {
		msg += " (a TLS record: is this a TLS port?)"
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *notZooKeeperError) Is(target error) bool { return target == ErrNotZooKeeper }

func (e *notZooKeeperError) Unwrap() error { return e.err }

// ErrNotTLS is matched (errors.Is) by the error of a connection attempt
// with Config.TLS whose server does not speak TLS: it answered the TLS
// client hello with bytes that are no TLS record, or closed the
// connection but answers in the clear (a plaintext port). The error's
// text is "<addr> does not speak TLS: ...", and it wraps the handshake's
// error.
var ErrNotTLS = errors.New("zksession: server does not speak TLS")

// A notTLSError is why a server that does not speak TLS was given up
// on; it matches ErrNotTLS.
type notTLSError struct {
	addr   string
	head   []byte // the first bytes of its answer: to the hello, or to the probe in the clear
	probed bool   // it closed the handshake, and head answered the probe (see probeClear)
	err    error  // the handshake's error
}

func (e *notTLSError) Error() string {
	if e.probed {
		return fmt.Sprintf("%s does not speak TLS: it closed the connection during the TLS handshake (%v), but answers in the clear (%s): a plaintext port?",
			e.addr, e.err, strconv.Quote(string(e.head)))
	}
	return fmt.Sprintf("%s does not speak TLS: it answered the TLS handshake with %s (%v)", e.addr, strconv.Quote(string(e.head)), e.err)
}

func (e *notTLSError) Is(target error) bool { return target == ErrNotTLS }

func (e *notTLSError) Unwrap() error { return e.err }

// A silenceError is why a server that accepted the connection was given
// up on before it answered: the attempt's deadline passed, or Dial's
// context ended. It wraps os.ErrDeadlineExceeded.
type silenceError struct {
	addr, what string // what is the handshake not answered
	d          time.Duration
}

func (e *silenceError) Error() string {
	return fmt.Sprintf("%s accepted the connection but has not answered %s in %v", e.addr, e.what, e.d)
}

func (e *silenceError) Unwrap() error { return os.ErrDeadlineExceeded }

// A dialError is Dial's error when its context ends before a server
// granted a session: ctx.Err(), then every server's last error.
type dialError struct {
	ctxErr error
	errs   []error
}

func (e *dialError) Error() string {
	msg := "zksession: dial: " + e.ctxErr.Error()
	for _, err := range e.errs {
		msg += "; " + err.Error()
	}
	return msg
}

func (e *dialError) Unwrap() []error { return append([]error{e.ctxErr}, e.errs...) }

// A codeError is the sentinel of one ZooKeeper error code.
type codeError struct{ code zkwire.Code }

func (e *codeError) Error() string { return "zksession: " + e.code.String() }

// The sentinels of the codes a caller tests for; an *Error matches the
// one of its Code with errors.Is.
var (
	ErrConnectionLoss = &codeError{zkwire.CodeConnectionLoss}
	ErrSessionExpired = &codeError{zkwire.CodeSessionExpired}
	ErrAuthFailed     = &codeError{zkwire.CodeAuthFailed}
	ErrNoNode         = &codeError{zkwire.CodeNoNode}
	ErrNodeExists     = &codeError{zkwire.CodeNodeExists}
	ErrBadVersion     = &codeError{zkwire.CodeBadVersion}
	ErrNotEmpty       = &codeError{zkwire.CodeNotEmpty}
	ErrNoAuth         = &codeError{zkwire.CodeNoAuth}
	ErrNoWatcher      = &codeError{zkwire.CodeNoWatcher}
)

// An Error is the failure of one call: the server's error code, or the
// session's (CodeConnectionLoss, CodeSessionExpired, CodeAuthFailed), or
// a local failure in Err (a cancelled context, ErrClosed, a frame over the
// limit) with Code CodeOK.
type Error struct {
	Op    zkwire.OpCode // the request's operation
	Path  string        // its path ("" for none)
	Code  zkwire.Code   // the error code, CodeOK for a local failure
	Index int           // for a multi, the index of the operation that failed
	Err   error         // the cause: an I/O error, ctx.Err(), ErrClosed...
}

// Error returns "zksession: <op> <path>: <code>[: <cause>]".
func (e *Error) Error() string {
	msg := "zksession: " + e.Op.String()
	if e.Path != "" {
		msg += " " + e.Path
	}
	if e.Code != zkwire.CodeOK {
		msg += ": " + e.Code.String()
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is the sentinel of e.Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*codeError)
	return ok && e.Code != zkwire.CodeOK && t.code == e.Code
}

// Unwrap returns the cause, e.Err.
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the ZooKeeper code of err if it holds an *Error with
// one, CodeOK otherwise.
func CodeOf(err error) zkwire.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return zkwire.CodeOK
}

// sessionError returns the error a request fails with when the session
// ends with end (ErrSessionExpired, ErrAuthFailed or ErrClosed).
func sessionError(op zkwire.OpCode, path string, end error) *Error {
	var c *codeError
	if errors.As(end, &c) {
		return &Error{Op: op, Path: path, Code: c.code}
	}
	return &Error{Op: op, Path: path, Err: end}
}
