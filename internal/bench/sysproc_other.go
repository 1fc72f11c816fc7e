//go:build !unix

package main

import (
	"os"
	"syscall"
)

// sysProcAttr has nothing to set outside Unix.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the child.
func killGroup(p *os.Process) error { return p.Kill() }
