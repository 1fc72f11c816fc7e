//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// sysProcAttr puts a child in its own process group. Outside Linux there
// is no parent-death signal: a tool that dies without its clean-up leaves
// its child running until the child's time limit passes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to the child's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
