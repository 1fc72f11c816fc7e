package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/zklock/zklock"
)

// errTimedOut is the cause of an acquire cancelled by -timeout.
var errTimedOut = errors.New("timed out")

// runner is one exec: it acquires the lock, runs the command, releases.
type runner struct {
	f      *execFlags
	c      *zklock.Client
	path   string
	argv   []string
	sigs   <-chan os.Signal // SIGINT, SIGTERM and SIGHUP to the tool
	stdout io.Writer
	stderr io.Writer
}

// acquired is the outcome of an acquire.
type acquired struct {
	h   *holding
	err error
}

// run acquires, runs the command and releases, and returns the exit code.
func (r *runner) run() int {
	h, code := r.acquire()
	if h == nil {
		return code
	}
	return r.runHeld(h)
}

// acquire takes the lock; on failure it returns a nil hold and the exit
// code. A signal while waiting cancels the acquire, which leaves no node.
func (r *runner) acquire() (*holding, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if r.f.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, r.f.timeout, errTimedOut)
		defer cancel()
	}
	done := make(chan acquired, 1)
	go func() {
		h, err := r.f.acquire(ctx, r.c, r.path)
		done <- acquired{h, err}
	}()
	var res acquired
	select {
	case res = <-done:
	case sig := <-r.sigs:
		cancel()
		if res = <-done; res.err == nil { // granted as we were cancelled
			r.releaseQuietly(res.h)
		}
		r.errorf("interrupted by %v while waiting for lock %s", sig, r.path)
		return nil, exitSignal + signum(sig)
	}
	switch err := res.err; {
	case err == nil:
		return res.h, exitOK
	case errors.Is(err, zklock.ErrLocked):
		r.errorf("lock %s is busy", r.path)
		return nil, exitBusy
	case errors.Is(context.Cause(ctx), errTimedOut):
		r.errorf("lock %s not acquired within %v", r.path, r.f.timeout)
		return nil, exitTimeout
	default:
		r.errorf("%v", opError("acquire", r.path, err))
		return nil, exitError
	}
}

// runHeld runs the command while h holds, then releases h.
func (r *runner) runHeld(h *holding) int {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, r.stdout, r.stderr
	cmd.Env = append(os.Environ(),
		"ZKLOCK_PATH="+r.path,
		"ZKLOCK_NODE="+h.node,
		"ZKLOCK_TOKEN="+strconv.FormatInt(h.token, 10))
	if isClosed(h.revoked) {
		r.releaseQuietly(h)
		r.errorf("revocation of lock %s requested while waiting: released it without running the command", r.path)
		return exitLost
	}
	tty := foregroundTerminal(os.Stdin)
	cmd.SysProcAttr = tty.sysProcAttr()
	if err := cmd.Start(); err != nil {
		r.releaseQuietly(h)
		r.errorf("run %s: %v", r.argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitNotFound
		}
		return exitCannot
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	lost := r.supervise(cmd, h, waited)
	if err := tty.reclaim(); err != nil {
		r.errorf("%v", err)
	}
	if lost != nil {
		r.errorf("lock %s lost while the command ran: %s", r.path, causeText(lost))
		return exitLost
	}
	code := exitCode(cmd.ProcessState)
	if err := h.release(); errors.Is(err, zklock.ErrLockLost) {
		r.errorf("lock %s was lost before the command ended: %s", r.path, causeText(err))
		return exitLost
	} else if err != nil {
		r.errorf("%v (the session's end removes the node)", opError("release", r.path, err))
	}
	return code
}

// supervise forwards signals to the running command's process group until
// the command exits. If the hold is lost meanwhile, or its revocation is
// requested, it sends the group -signal, kills it after the grace period,
// and waits for the command. It returns the loss, if the hold was lost.
func (r *runner) supervise(cmd *exec.Cmd, h *holding, waited <-chan error) (lost error) {
	lostCh, revoked := h.lost, h.revoked
	var kill <-chan time.Time
	end := func(why string) {
		r.errorf("%s: sending %v to the command", why, r.f.sig)
		_ = signalGroup(cmd.Process, r.f.sig)
		if kill == nil {
			kill = time.After(r.f.killAfter)
		}
	}
	for {
		select {
		case <-waited:
			return lost
		case sig := <-r.sigs:
			_ = signalGroup(cmd.Process, sig)
		case <-lostCh:
			lostCh, revoked = nil, nil
			if lost = h.release(); lost == nil {
				lost = errors.New("hold ended")
			}
			end(fmt.Sprintf("lock %s lost", r.path))
		case <-revoked:
			revoked = nil
			end(fmt.Sprintf("revocation of lock %s requested", r.path))
		case <-kill:
			kill = nil
			r.errorf("command still running %v after %v: killing it", r.f.killAfter, r.f.sig)
			_ = signalGroup(cmd.Process, syscall.SIGKILL)
		}
	}
}

// isClosed reports whether ch, if not nil, is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// signalGroup sends sig to the process group that p leads, as a shell
// does to a job: p's own children get it too. p must have been started
// with Setpgid and not yet waited for.
func signalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	return syscall.Kill(-p.Pid, s)
}

// releaseQuietly releases h, reporting a failure.
func (r *runner) releaseQuietly(h *holding) {
	if err := h.release(); err != nil {
		r.errorf("%v", opError("release", r.path, err))
	}
}

func (r *runner) errorf(format string, args ...any) {
	fmt.Fprintf(r.stderr, "zklock exec: "+format+"\n", args...)
}

// exitCode is a finished command's exit code: its own, or 128 plus the
// signal that killed it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signum is a signal's number (1 if it has none).
func signum(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}
