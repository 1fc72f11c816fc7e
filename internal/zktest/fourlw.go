package zktest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// fourLetterTimeout bounds one four-letter-word exchange.
const fourLetterTimeout = 2 * time.Second

// firstPollTimeout bounds the first exchange of a poll for a server to
// serve. A server that is starting sometimes accepts a four-letter word
// and never answers; retrying soon beats waiting out fourLetterTimeout.
// Each timeout doubles the next attempt's limit, up to fourLetterTimeout,
// so a slow machine still gets answers.
const firstPollTimeout = 250 * time.Millisecond

// defaultWaitTimeout bounds WaitServing and WaitStopped when ctx has no
// deadline.
const defaultWaitTimeout = 60 * time.Second

// fourLetterWord sends cmd to the server at addr and returns its reply,
// giving up after timeout. The reply ends when the server closes the
// connection or, if complete is not nil, as soon as complete(reply) is
// true: a starting ZooKeeper can answer and then fail to close the socket.
func fourLetterWord(ctx context.Context, addr, cmd string, timeout time.Duration, complete func(string) bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	var reply []byte
	buf := make([]byte, 4096)
	for len(reply) < 1<<20 {
		n, err := conn.Read(buf)
		reply = append(reply, buf[:n]...)
		if complete != nil && complete(string(reply)) {
			return string(reply), nil
		}
		if errors.Is(err, io.EOF) {
			return string(reply), nil
		}
		if err != nil {
			return string(reply), err
		}
	}
	return string(reply), nil
}

// ruokComplete reports whether a ruok reply is complete.
func ruokComplete(reply string) bool { return len(reply) >= len("imok") }

// srvrComplete reports whether a srvr reply holds what Mode needs.
func srvrComplete(reply string) bool {
	for _, marker := range []string{"\nMode: ", "not currently serving requests"} {
		if i := strings.Index(reply, marker); i >= 0 && strings.Contains(reply[i+1:], "\n") {
			return true
		}
	}
	return false
}

// Mode returns the mode the server at addr reports through the srvr
// four-letter word: "standalone", "leader", "follower" or "observer". It
// fails if the server does not answer or is not serving (for example a
// member of an ensemble without quorum). The server must whitelist srvr.
func Mode(ctx context.Context, addr string) (string, error) {
	return mode(ctx, addr, fourLetterTimeout)
}

func mode(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	reply, err := fourLetterWord(ctx, addr, "srvr", timeout, srvrComplete)
	if err != nil {
		return "", fmt.Errorf("zktest: srvr %s: %w", addr, err)
	}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			mode = strings.TrimSpace(mode)
			switch mode {
			case "standalone", "leader", "follower", "observer":
				return mode, nil
			}
			return "", fmt.Errorf("zktest: srvr %s: unexpected mode %q", addr, mode)
		}
	}
	return "", fmt.Errorf("zktest: srvr %s: not serving: %q", addr, strings.TrimSpace(reply))
}

// FourLetterWord sends the four-letter word cmd ("srvr", "dump", "cons",
// ...) to the server at addr and returns its reply, which ends when the
// server closes the connection, as a serving ZooKeeper does; it gives up
// after a few seconds. The server must whitelist cmd.
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	reply, err := fourLetterWord(ctx, addr, cmd, fourLetterTimeout, nil)
	if err != nil {
		return "", fmt.Errorf("zktest: %s %s: %w", cmd, addr, err)
	}
	return reply, nil
}

// Srvr returns the fields of the reply of the server at addr to the srvr
// four-letter word, keyed by the text before ": " ("Zookeeper version",
// "Received", "Sent", "Connections", "Outstanding", "Mode", "Node count",
// ...). The reply ends when the server closes the connection, as a
// serving ZooKeeper does. The server must whitelist srvr.
func Srvr(ctx context.Context, addr string) (map[string]string, error) {
	reply, err := FourLetterWord(ctx, addr, "srvr")
	if err != nil {
		return nil, err
	}
	fields := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if _, ok := fields["Mode"]; !ok {
		return nil, fmt.Errorf("zktest: srvr %s: not serving: %q", addr, strings.TrimSpace(reply))
	}
	return fields, nil
}

// checkServing returns nil if the server at addr answers ruok with imok and
// srvr with a serving mode, each within timeout.
func checkServing(ctx context.Context, addr string, timeout time.Duration) error {
	reply, err := fourLetterWord(ctx, addr, "ruok", timeout, ruokComplete)
	if err != nil {
		return fmt.Errorf("zktest: ruok %s: %w", addr, err)
	}
	if reply != "imok" {
		return fmt.Errorf("zktest: ruok %s: got %q, want \"imok\"", addr, reply)
	}
	_, err = mode(ctx, addr, timeout)
	return err
}

// servingCheck returns a check for poll that calls checkServing with a
// time limit growing from firstPollTimeout on each timeout.
func servingCheck(ctx context.Context, addr string) func() error {
	timeout := firstPollTimeout
	return func() error {
		err := checkServing(ctx, addr, timeout)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			timeout = min(2*timeout, fourLetterTimeout)
		}
		return err
	}
}

// WaitServing returns nil once the server at addr answers ruok with imok
// and srvr with a serving mode (standalone, leader, follower or observer),
// polling every few milliseconds. It gives up when ctx is done, or after a
// minute if ctx has no deadline, returning the last failure. The server
// must whitelist the ruok and srvr four-letter words.
func WaitServing(ctx context.Context, addr string) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	return poll(ctx, servingCheck(ctx, addr), nil)
}

// WaitStopped returns nil once connecting to addr fails other than by
// timing out (typically: connection refused), polling every few
// milliseconds. It gives up when ctx is done, or after a minute if ctx has
// no deadline.
func WaitStopped(ctx context.Context, addr string) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	return poll(ctx, func() error {
		d := net.Dialer{Timeout: fourLetterTimeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return fmt.Errorf("zktest: %s still accepts connections", addr)
		}
		var ne net.Error
		if ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("zktest: %s: %w", addr, err)
		}
		return nil
	}, nil)
}

// poll calls check every pollInterval until it returns nil or a permanent
// error, ctx is done, or abort (if not nil) is closed. On failure it returns an error wrapping
// ctx's error with check's last error (not counting a failure caused by
// ctx's end, which says nothing about what was being waited for).
func poll(ctx context.Context, check func() error, abort <-chan struct{}) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("zktest: %w", ctx.Err())
			}
			return fmt.Errorf("%w (%w)", last, ctx.Err())
		case <-abort:
			return errAborted
		case <-t.C:
		}
		err := check()
		if err == nil {
			return nil
		}
		var pe permanentError
		if errors.As(err, &pe) {
			return pe.error
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		t.Reset(pollInterval)
	}
}

var errAborted = errors.New("zktest: aborted")

// permanentError makes poll give up at once with the wrapped error.
type permanentError struct{ error }

func permanent(err error) error { return permanentError{err} }

// withDefaultTimeout bounds ctx by d if it has no deadline.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
