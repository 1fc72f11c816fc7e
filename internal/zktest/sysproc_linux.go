//go:build linux

package zktest

import "syscall"

// sysProcAttr puts the server in its own process group (so a terminal's
// Ctrl-C reaches only the test binary, which then shuts the servers down)
// and has the kernel SIGKILL it if the thread that started it dies, which
// happens when the test binary exits in any way (see startJVM).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
