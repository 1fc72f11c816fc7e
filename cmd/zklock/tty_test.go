//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openPTY opens a pseudo-terminal and returns its master and slave sides,
// closed when the test ends.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	require.NoError(t, ioctl(master.Fd(), syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)))
	var n uint32
	require.NoError(t, ioctl(master.Fd(), syscall.TIOCGPTN, unsafe.Pointer(&n)))
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

func ioctl(fd uintptr, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// In a terminal's foreground, exec hands the terminal to the command,
// which can read it and gets the terminal's Ctrl-C once, and takes it
// back after.
func TestExecInTerminalForeground(t *testing.T) {
	e := setup(t)
	master, slave := openPTY(t)
	dir := t.TempDir()
	log, ready := filepath.Join(dir, "log"), filepath.Join(dir, "ready")
	cmd := e.command("exec", e.path, "--", "sh", "-c", countINT, "sh", log, ready, "read")
	cmd.Stdin, cmd.Stdout = slave, slave
	// exec leads a session whose controlling terminal is the slave, so
	// its process group is the terminal's foreground one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})

	_, err := master.Write([]byte("hello\n"))
	require.NoError(t, err)
	waitLine(t, log, "read hello") // a background group would have stopped (SIGTTIN)
	pid, err := strconv.Atoi(fileText(t, ready))
	require.NoError(t, err)
	fg, err := tcgetpgrp(int(master.Fd()))
	require.NoError(t, err)
	assert.Equal(t, pgid(t, pid), fg, "the command's group has the terminal")
	_, err = master.Write([]byte{0x03}) // Ctrl-C
	require.NoError(t, err)
	waitLine(t, log, "int 1")
	p.signal(t, syscall.SIGHUP)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "read hello\nint 1\nints 1", fileText(t, log))
	assert.NotContains(t, p.stderr.String(), "zklock exec:", "no error, such as taking the terminal back")
}
