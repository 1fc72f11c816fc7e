//go:build linux

package interop

import (
	"os"
	"syscall"
)

// sysProcAttr puts the peer in its own process group (so a terminal's
// Ctrl-C reaches only the test binary) and has the kernel SIGKILL it when
// the thread that started it exits, which happens when the test binary
// exits in any way (StartPeer starts it from a locked thread).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the peer's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
