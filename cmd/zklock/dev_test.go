package main

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// zklock dev serves a ZooKeeper on the port it is given that a Client
// locks on, prints its address first and the export line second, and on
// SIGINT stops it and exits 0: the server is gone after.
func TestDev(t *testing.T) {
	t.Parallel()
	e := setup(t)
	port := freePort(t)
	p := e.start("dev", "-port", strconv.Itoa(port))
	lines := p.readUntil(t, regexp.MustCompile(`^export ZK_SERVERS=`))
	require.Len(t, lines, 2, "the connect string, then the export line")
	servers := strings.Split(lines[0], ",")
	assert.Equal(t, []string{"127.0.0.1:" + strconv.Itoa(port)}, servers)
	assert.Equal(t, "export ZK_SERVERS="+lines[0], lines[1])

	c, err := zklock.Connect(servers, zklock.WithConnectTimeout(5*time.Second))
	require.NoError(t, err)
	m, err := zklock.NewMutex(c, "/dev/lock")
	require.NoError(t, err)
	hd, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, hd.Release())
	c.Close()

	p.signal(t, syscall.SIGINT)
	assert.Equal(t, exitOK, p.wait(t), "stderr: %s", p.stderr)
	_, err = zklock.Connect(servers, zklock.WithConnectTimeout(2*time.Second))
	assert.Error(t, err, "the server is stopped")
}

// A port in use fails the command at once, naming the port.
func TestDevPortInUse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	r := e.run("dev", "-port", port)
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.Contains(t, r.stderr, "client port "+port)
}

// freePort returns a TCP port that was free on 127.0.0.1.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Bad arguments are usage errors, before anything starts.
func TestDevUsage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, args := range [][]string{{"dev", "-servers", "0"}, {"dev", "-servers", "10"}, {"dev", "extra"}, {"dev", "-bogus"},
		{"dev", "-port", "-1"}, {"dev", "-servers", "3", "-port", "65534"}} {
		r := e.run(args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "zklock help dev", args)
	}
	r := e.run("help", "dev")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "Usage: zklock dev")
}
