package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the package returns for one of these
// conditions wraps the sentinel, so check with [errors.Is]. Wrapped errors
// name the lock path they concern.
var (
	// ErrNotHeld is returned by Release, Token, CheckOp and similar methods
	// when the context carries no hold of the lock.
	ErrNotHeld = errors.New("zklock: lock not held by this context")

	// ErrLocked is returned by TryLock and TryAcquire when another
	// participant holds the lock (or, for a Semaphore, when no lease is
	// free). They leave no node behind in that case. The error names the
	// holder, through a *HolderError, when it could be read.
	ErrLocked = errors.New("zklock: lock held by another participant")

	// ErrLockLost is the cause of a hold context that was cancelled because
	// the hold ended without a Release: the connection was suspended (under
	// StandardPolicy), the session was lost, the lock node was deleted by
	// someone else, the hold's maximum hold time passed (the cause wraps
	// [ErrMaxHold] too; see [WithMaxHold]), or the Client was closed. Release
	// of such a hold clears the local state and returns an error wrapping
	// ErrLockLost.
	ErrLockLost = errors.New("zklock: lock lost")

	// ErrReleased is the cause of a hold context that was cancelled because
	// its last Release gave the lock up.
	ErrReleased = errors.New("zklock: lock released")

	// ErrLockUpgrade is returned when a context that holds only a read lock
	// asks for the write lock of the same ReadWriteLock.
	ErrLockUpgrade = errors.New("zklock: cannot upgrade a read lock to a write lock")

	// ErrNotReentrant is returned by a non-re-entrant lock, such as
	// SemaphoreMutex, when the context already holds it.
	ErrNotReentrant = errors.New("zklock: lock is not re-entrant")

	// ErrInvalidPath is returned for a path that breaks ZooKeeper's path
	// rules or names a reserved node. The wrapping error names the path.
	ErrInvalidPath = errors.New("zklock: invalid path")

	// ErrInvalidArgument is returned for any other invalid input: a nil
	// Client, an out-of-range option, a nil policy or driver.
	ErrInvalidArgument = errors.New("zklock: invalid argument")

	// ErrClosed is returned by every operation on a closed Client, and by an
	// Acquire that was waiting when the Client was closed. Once a
	// [Client.Shutdown] has begun, it is returned by every new acquire and
	// by those that were waiting, while the holds that stand are left to
	// their owners until Shutdown closes the Client.
	ErrClosed = errors.New("zklock: client closed")

	// ErrNotConnected is returned by [Client.Ping], and by TryLock and
	// TryAcquire, when the Client has no session it can use: before its
	// first session, while the connection is suspended, or once the
	// session is lost. A Try that gets it does not know whether the lock
	// is free; it leaves no node behind. A blocking acquire waits for the
	// connection instead, and if its context ends while the Client is not
	// connected, its error wraps ErrNotConnected beside ctx.Err() and says
	// for how long the Client has not been connected (it names no holder:
	// nobody is known to hold the lock).
	ErrNotConnected = errors.New("zklock: not connected")

	// ErrNoLeader is returned by [Election.Leader] and [Selector.Leader]
	// when no participant takes part in the election.
	ErrNoLeader = errors.New("zklock: no leader")
)

// opErr names the operation and the path in err. When ctx has ended and
// err wraps ctx.Err(), it also wraps the context's own cause, if it has
// one, so that errors.Is finds both.
func opErr(ctx context.Context, op, path string, err error) error {
	if ctx != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if cause := context.Cause(ctx); cause != ctx.Err() && !errors.Is(err, cause) {
			return &wrapError{msg: fmt.Sprintf("zklock: %s %s: %s (%s)", op, path, unprefixed(err), unprefixed(cause)),
				errs: []error{err, cause}}
		}
	}
	return wrapf(err, "%s %s", op, path)
}

// The package's messages start with "zklock: " once. An error that wraps
// another says what it adds and then the wrapped error's message without
// its own "zklock: ", so that each fact reads once:
//
//	zklock: acquire "/locks/x": client closed
//
// The wrapped error stays in the chain for errors.Is and errors.As; only
// the text is composed.
const msgPrefix = "zklock: "

// wrapf returns err wrapped with the message "zklock: " + the formatted
// text + ": " + err's message.
func wrapf(err error, format string, args ...any) error {
	return &wrapError{msg: msgPrefix + fmt.Sprintf(format, args...) + ": " + unprefixed(err), errs: []error{err}}
}

// unprefixed is err's message without a leading "zklock: ".
func unprefixed(err error) string {
	return strings.TrimPrefix(err.Error(), msgPrefix)
}

// wrapError is an error with a composed message that wraps errs.
type wrapError struct {
	msg  string
	errs []error
}

func (e *wrapError) Error() string   { return e.msg }
func (e *wrapError) Unwrap() []error { return e.errs }

// kindError is an error of a sentinel's kind whose message says so in its
// own words: errors.Is matches the sentinel, whose text the message does
// not repeat.
type kindError struct {
	kind error // a sentinel
	err  error // the message, and what it wraps
}

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Is(target error) bool { return target == e.kind }
func (e *kindError) Unwrap() error        { return e.err }

// errorf returns an error of kind (a sentinel) with the message
// "zklock: " + fmt.Sprintf(format, args...); %w in format wraps as usual.
func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, err: fmt.Errorf(msgPrefix+format, args...)}
}

// kindOf returns err as an error of kind (a sentinel) too, with the
// message "zklock: " + kind's text + ": " + err's, each said once.
func kindOf(kind, err error) error {
	return &wrapError{msg: msgPrefix + unprefixed(kind) + ": " + unprefixed(err), errs: []error{kind, err}}
}

// joinErrs returns the one error that is not nil, or both joined.
func joinErrs(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return errors.Join(a, b)
}
