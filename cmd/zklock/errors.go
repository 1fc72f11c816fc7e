package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

// cliError is an error whose message the tool builds itself, so that it
// states each fact once, and that still wraps the error it explains, for
// errors.Is.
type cliError struct {
	msg string
	err error
}

// Error returns the message built by the tool.
func (e *cliError) Error() string { return e.msg }

// Unwrap returns the error explained.
func (e *cliError) Unwrap() error { return e.err }

// causes are the errors whose own text says all that matters about why an
// operation failed. The library's errors around them repeat the operation
// and the path, which the tool's message already names. Errors such as
// zklock.ErrInvalidArgument are not here: the text around them says what
// was wrong.
var causes = []error{
	zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNotEmpty,
	zk.ErrBadVersion, zk.ErrInvalidACL, zk.ErrSessionExpired, zk.ErrNoServer,
	zk.ErrConnectionClosed, zk.ErrClosing, zklock.ErrClosed, zklock.ErrLockLost,
	context.DeadlineExceeded, context.Canceled,
}

// noAuthHint follows a zk.ErrNoAuth.
const noAuthHint = " (the node's ACL refuses this session: check -auth)"

// opError reports that op on p failed with err: "op p: cause", where the
// cause is the first of causes that err wraps, with a hint to check -auth
// when an ACL refused the session. Otherwise err's own text is the cause,
// and stands alone if it names p already, as the library's errors do. An
// error that is already the tool's own is returned as is.
func opError(op, p string, err error) error {
	var own *cliError
	if errors.As(err, &own) {
		return err
	}
	msg := fmt.Sprintf("%s %s: %s", op, p, causeText(err))
	if !isCause(err) && strings.Contains(err.Error(), p) {
		msg = err.Error()
	}
	if errors.Is(err, zk.ErrNoAuth) {
		msg += noAuthHint
	}
	return &cliError{msg: msg, err: err}
}

// causeText is the text of the first of causes that err wraps, or else
// err's own text.
func causeText(err error) string {
	for _, c := range causes {
		if errors.Is(err, c) {
			return c.Error()
		}
	}
	return err.Error()
}

// isCause reports whether err wraps one of causes.
func isCause(err error) bool {
	return slices.ContainsFunc(causes, func(c error) bool { return errors.Is(err, c) })
}

// connectError reports that no session could be made with servers.
func connectError(servers string, timeout time.Duration, err error) error {
	if errors.Is(err, zk.ErrNoServer) && errors.Is(err, context.DeadlineExceeded) {
		msg := fmt.Sprintf("connect to %s: no ZooKeeper session within %v (-connect-timeout)", servers, timeout)
		return &cliError{msg: msg + lastErrors(err.Error()), err: err}
	}
	if errors.Is(err, zk.ErrNoServer) {
		// The library's own words name each server and what it answered
		// (connection refused, no such host): keep them.
		return &cliError{msg: strings.TrimPrefix(err.Error(), "zklock: "), err: err}
	}
	return opError("connect to", servers, err)
}

// lastErrors returns, as ": <errors>", what the library's connect error
// says each server last answered ("(last errors: ...)" in its text: a
// server that accepted and never answered, a refusal), or "".
func lastErrors(msg string) string {
	const mark = " (last errors: "
	i, j := strings.Index(msg, mark), strings.LastIndex(msg, "): ")
	if i < 0 || j < i {
		return ""
	}
	return ": " + msg[i+len(mark):j]
}

// noNode reports, in the words given, that a path or node given on the
// command line does not exist (exit code 4).
func noNode(format string, args ...any) error {
	return &cliError{msg: fmt.Sprintf(format, args...), err: errNoNode}
}
