//go:build unix && !linux

package interop

import (
	"os"
	"syscall"
)

// sysProcAttr puts the peer in its own process group. Outside Linux there
// is no parent-death signal: a test binary that dies without running its
// cleanups leaves its peer running until the peer's stdin closes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to the peer's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
