//go:build unix && !linux

package zktest

import "syscall"

// sysProcAttr puts the server in its own process group. Outside Linux
// there is no parent-death signal: a test binary that dies without running
// its cleanups leaves its servers running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
