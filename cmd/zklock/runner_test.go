package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// finished runs sh -c script to its end and returns its state.
func finished(t *testing.T, script string) *os.ProcessState {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		require.NoError(t, err)
	}
	return cmd.ProcessState
}

func TestExitCodeMapping(t *testing.T) {
	assert.Equal(t, 0, exitCode(finished(t, "true")))
	assert.Equal(t, 7, exitCode(finished(t, "exit 7")))
	assert.Equal(t, 128+9, exitCode(finished(t, "kill -KILL $$")))
	assert.Equal(t, 128+15, exitCode(finished(t, "kill -TERM $$")))
	assert.Equal(t, 2, signum(syscall.SIGINT))
	assert.Equal(t, 1, signum(fakeSignal{}), "a signal without a number")
}

// fakeSignal is an os.Signal that is not a syscall.Signal.
type fakeSignal struct{}

// String names the signal.
func (fakeSignal) String() string { return "fake" }

// Signal marks fakeSignal as an os.Signal.
func (fakeSignal) Signal() {}

// startGroup starts sh -c script in a process group of its own, as
// runHeld does, and waits for it in the background. It is killed if still
// running when the test ends.
func startGroup(t *testing.T, script string, args ...string) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = (*terminal)(nil).sysProcAttr()
	require.NoError(t, cmd.Start())
	waited, done := make(chan error, 1), make(chan struct{})
	go func() { waited <- cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return cmd, waited
}

// testRunner is a runner whose hold is synthetic: supervise needs only
// its loss channel and release.
func testRunner(sigs chan os.Signal) (*runner, *syncBuffer) {
	stderr := &syncBuffer{}
	f := &execFlags{sig: syscall.SIGTERM, killAfter: 200 * time.Millisecond}
	return &runner{f: f, path: "/a", sigs: sigs, stderr: stderr}, stderr
}

func readyFile(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ready")
}

func TestSuperviseForwardsSignalsToTheGroup(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	r, _ := testRunner(sigs)
	ready := readyFile(t)
	// USR1, not HUP: a shell cannot trap a signal ignored when it started,
	// and a test run under nohup starts its commands with HUP ignored.
	cmd, waited := startGroup(t, `trap 'exit 9' USR1; touch "$1"; while :; do sleep 0.02; done`, ready)
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
	sigs <- syscall.SIGUSR1
	h := &holding{lost: make(chan struct{}), release: func() error { return nil }}
	assert.NoError(t, r.supervise(cmd, h, waited))
	assert.Equal(t, 9, exitCode(cmd.ProcessState))
}

// On a loss, supervise sends -signal, then SIGKILL after -kill-after to a
// command that ignores it, and returns the loss that release reports.
func TestSuperviseLossKills(t *testing.T) {
	r, stderr := testRunner(make(chan os.Signal))
	ready := readyFile(t)
	cmd, waited := startGroup(t, `trap '' TERM; touch "$1"; while :; do sleep 0.02; done`, ready)
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
	lost := make(chan struct{})
	close(lost)
	h := &holding{lost: lost, release: func() error { return zklock.ErrLockLost }}
	assert.ErrorIs(t, r.supervise(cmd, h, waited), zklock.ErrLockLost)
	assert.Equal(t, 128+9, exitCode(cmd.ProcessState))
	assert.Contains(t, stderr.String(), "lock /a lost: sending terminated to the command")
	assert.Contains(t, stderr.String(), "killing it")
}
