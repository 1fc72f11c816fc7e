//go:build unix

package zktest

import (
	"errors"
	"os"
	"syscall"
)

// terminate sends SIGTERM to p's process group.
func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill sends SIGKILL to p's process group.
func kill(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }

// processGone reports whether no process has the given pid.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
