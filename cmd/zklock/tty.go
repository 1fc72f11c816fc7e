package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// terminal is the terminal on exec's stdin, when exec runs in its
// foreground: exec hands the foreground to the command's process group,
// so that the command can read the terminal and the terminal's signals
// (Ctrl-C) reach the command alone, and takes it back when the command
// has exited.
type terminal struct {
	fd   int // exec's stdin
	pgrp int // exec's own process group
}

// foregroundTerminal returns the terminal on f if f is one and exec's
// process group is its foreground group; nil otherwise (not a terminal,
// or exec runs in the background).
func foregroundTerminal(f *os.File) *terminal {
	fd := int(f.Fd())
	fg, err := tcgetpgrp(fd)
	if err != nil || fg != syscall.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: fg}
}

// sysProcAttr puts the command in a process group of its own and, with a
// terminal, in the terminal's foreground.
func (t *terminal) sysProcAttr() *syscall.SysProcAttr {
	if t == nil {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: t.fd}
}

// reclaim puts exec's process group back in the terminal's foreground. A
// background group that does so gets SIGTTOU, which stops it unless it is
// ignored: it is ignored meanwhile.
func (t *terminal) reclaim() error {
	if t == nil {
		return nil
	}
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	if err := tcsetpgrp(t.fd, t.pgrp); err != nil {
		return fmt.Errorf("take the terminal back: %w", err)
	}
	return nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), ioctlGetTermios, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

// tcgetpgrp returns the foreground process group of the terminal fd.
func tcgetpgrp(fd int) (int, error) {
	var pgrp int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp)))
	if errno != 0 {
		return 0, errno
	}
	return int(pgrp), nil
}

// tcsetpgrp makes pgrp the foreground process group of the terminal fd.
func tcsetpgrp(fd, pgrp int) error {
	p := int32(pgrp)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p)))
	if errno != 0 {
		return errno
	}
	return nil
}
