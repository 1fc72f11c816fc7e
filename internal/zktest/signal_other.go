//go:build !unix

package zktest

import (
	"os"
	"syscall"
)

// sysProcAttr has nothing to add outside Unix.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminate kills p: there is no SIGTERM outside Unix.
func terminate(p *os.Process) error { return p.Kill() }

// kill kills p.
func kill(p *os.Process) error { return p.Kill() }

// processGone cannot tell outside Unix: it says no, so nothing is swept.
func processGone(pid int) bool { return false }
