package zksession

import (
	"errors"

	"github.com/zklock/zklock/internal/zkwire"
)

// ErrClosed is returned by every call on a Session after Close.
var ErrClosed = errors.New("zksession: session closed")

// ErrReadOnly is the reason a server that offered a read-only session
// was passed over: zklock never takes one.
var ErrReadOnly = errors.New("zksession: server offered a read-only session")

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
