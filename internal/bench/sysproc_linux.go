//go:build linux

package main

import (
	"os"
	"syscall"
)

// sysProcAttr puts a child in its own process group (so a terminal's Ctrl-C
// reaches only the tool, which then shuts it down) and has the kernel
// SIGKILL it when the thread that started it exits, which happens when
// the tool exits in any way (startChild starts it from a locked thread).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the child's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
