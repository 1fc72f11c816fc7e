package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zklock/zklock"
)

// The test binary plays two more roles, chosen by its first argument:
// "withzk" is the command itself, "probe" the command it runs.
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == "withzk":
		os.Exit(run(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	case len(os.Args) > 2 && os.Args[1] == "probe":
		os.Exit(probe(os.Args[2]))
	}
	goleak.VerifyTestMain(m)
}

// probe locks on the servers in ZK_SERVERS, prints "serving" and them,
// and then, as how says, exits 3 or waits for a SIGTERM and exits 7.
func probe(how string) int {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	servers := os.Getenv("ZK_SERVERS")
	c, err := zklock.Connect([]string{servers})
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	defer c.Close()
	m, err := zklock.NewMutex(c, "/withzk/probe")
	if err == nil {
		err = m.Do(context.Background(), func(context.Context) error { return nil })
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	fmt.Println("serving", servers)
	if how == "exit3" {
		return 3
	}
	<-terms
	fmt.Println("terminated")
	return 7
}

// withzk starts the test binary as withzk, running args, with env added
// to an environment without ZK_SERVERS. The lines of its standard output
// come on the returned channel, closed at its end; its standard error goes
// to stderr.
func withzk(t *testing.T, env []string, stderr io.Writer, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"withzk"}, args...)...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ZK_SERVERS=") }), env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the command too, for the clean-up
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// After a failure, nothing of it is left running: withzk, its command,
	// and (by its parent-death signal) the server.
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait() // if waitExit did not: an error then
	})
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// next returns the next line of lines, or "" at their end; it fails t if
// none comes within a minute.
func next(t *testing.T, lines <-chan string, stderr *bytes.Buffer) string {
	t.Helper()
	select {
	case line := <-lines:
		return line
	case <-time.After(time.Minute):
		t.Fatalf("no line from the command in a minute; stderr:\n%s", stderr)
		return ""
	}
}

// waitExit waits, up to a minute, for cmd to exit (after its output has
// been read to its end) and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, lines <-chan string) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() {
		for range lines { // Wait closes the pipe: read it first
		}
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		return status(err, io.Discard)
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatal("withzk did not exit")
		return -1
	}
}

// serving reads the probe's "serving" line and returns the address in it.
func serving(t *testing.T, lines <-chan string, stderr *bytes.Buffer) string {
	t.Helper()
	line := next(t, lines, stderr)
	addr, ok := strings.CutPrefix(line, "serving ")
	require.True(t, ok, "want the probe's serving line, got %q; stderr:\n%s", line, stderr)
	require.NotEmpty(t, addr)
	return addr
}

// assertStopped checks that nothing listens at addr any more.
func assertStopped(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		conn.Close()
	}
	assert.Error(t, err, "ZooKeeper at %s still serves after withzk exited", addr)
}

// Without ZK_SERVERS, the command finds a ZooKeeper it can lock on in
// ZK_SERVERS; withzk exits with the command's status, and the server is
// gone by then.
func TestServerForTheCommand(t *testing.T) {
	var stderr bytes.Buffer
	cmd, out := withzk(t, nil, &stderr, os.Args[0], "probe", "exit3")
	addr := serving(t, out, &stderr)
	assert.Equal(t, 3, waitExit(t, cmd, out), "the command's status; stderr:\n%s", &stderr)
	assert.Contains(t, stderr.String(), "withzk: ZooKeeper at "+addr)
	assertStopped(t, addr)
}

// A SIGTERM to withzk reaches the command; withzk waits for it to exit,
// then stops the server, and exits with the command's status.
func TestSignalPassedOn(t *testing.T) {
	var stderr bytes.Buffer
	cmd, out := withzk(t, nil, &stderr, os.Args[0], "probe", "await-term")
	addr := serving(t, out, &stderr)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, "terminated", next(t, out, &stderr), "the command got the signal")
	assert.Equal(t, 7, waitExit(t, cmd, out), "stderr:\n%s", &stderr)
	assertStopped(t, addr)
}

// With ZK_SERVERS set, the command runs with it as it is, and withzk
// starts nothing.
func TestZKServersKept(t *testing.T) {
	var stderr bytes.Buffer
	cmd, out := withzk(t, []string{"ZK_SERVERS=zk1.example.com:2181"}, &stderr, "sh", "-c", `echo "$ZK_SERVERS"`)
	assert.Equal(t, "zk1.example.com:2181", next(t, out, &stderr))
	assert.Equal(t, 0, waitExit(t, cmd, out))
	assert.Empty(t, stderr.String())
}

// Where no ZooKeeper can start, withzk says why, runs nothing and exits 1.
func TestNoZooKeeper(t *testing.T) {
	var stderr bytes.Buffer
	home := t.TempDir() // a ZOOKEEPER_HOME without jars
	cmd, out := withzk(t, []string{"ZOOKEEPER_HOME=" + home}, &stderr, "sh", "-c", "echo ran")
	assert.Empty(t, next(t, out, &stderr), "the command ran")
	assert.Equal(t, 1, waitExit(t, cmd, out))
	assert.Contains(t, stderr.String(), "withzk: start ZooKeeper (make deps installs it): zktest: ZOOKEEPER_HOME="+home)
}

func TestNoCommand(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(nil, nil, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "usage: withzk command")
}
