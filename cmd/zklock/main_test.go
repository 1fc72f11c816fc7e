package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/zktest"
)

// binary is the zklock command, built once by TestMain.
var binary string

// buildFlags are go build's flags for the binary (race_test.go adds -race).
var buildFlags []string

// Bounds of the tests' waits.
const (
	waitTimeout = 30 * time.Second // a condition that must come true
	runTimeout  = 60 * time.Second // one run of the binary
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zklock-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "zklock")
	goTool := "go" // go test puts its own GOROOT/bin first on the test's PATH
	args := append(append([]string{"build"}, buildFlags...), "-o", binary, ".")
	if out, err := exec.Command(goTool, args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := leakcheck.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's world: the shared ZooKeeper, a root of its own (the
// public test kit's Root), an admin connection, and the Clients the test
// made. At its end, the root's clean-up checks, while those sessions are
// alive, that no ephemeral node is left under the root, and deletes the
// tree; then the Clients are closed.
type env struct {
	t       *testing.T
	servers []string
	root    string // the test's subtree
	path    string // its lock path, under root
	admin   *zk.Conn

	mu      sync.Mutex
	clients []*zklock.Client
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

func setup(t *testing.T) *env {
	t.Helper()
	cluster := zktest.Shared(t)
	e := &env{t: t, servers: cluster.Servers()}
	t.Cleanup(func() { // registered before Root's: runs after its check
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.clients {
			c.Close()
		}
	})
	e.root = cluster.Root(t)
	e.path = e.root + "/lock"
	admin, _, err := zk.Connect(e.servers, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	e.admin = admin
	return e
}

// client connects a zklock Client for the test, with a 10s session
// timeout and opts.
func (e *env) client(opts ...zklock.Option) *zklock.Client {
	e.t.Helper()
	c, err := zklock.Connect(e.servers, append([]zklock.Option{zklock.WithSessionTimeout(10 * time.Second)}, opts...)...)
	require.NoError(e.t, err)
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c
}

// command returns the binary with args, talking to the test's ZooKeeper.
func (e *env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "ZK_SERVERS="+strings.Join(e.servers, ","))
	return cmd
}

// result is a finished run of the binary.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// run runs the binary to its end (bounded) and returns what it did.
func (e *env) run(args ...string) result {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	require.NoError(e.t, cmd.Start())
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	p.wait(e.t)
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode(), time.Since(start)}
}

// proc is a run of the binary in the background.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line; closed at its end
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// start starts the binary in the background; the test reads its stdout
// line by line. It is killed if still running when the test ends.
func (e *env) start(args ...string) *proc {
	e.t.Helper()
	return e.startCmd(e.command(args...))
}

// startCmd is start with a command made by e.command and adjusted by the
// test (its process attributes, say).
func (e *env) startCmd(cmd *exec.Cmd) *proc {
	e.t.Helper()
	p := &proc{cmd: cmd, lines: make(chan string, 1024), stderr: &syncBuffer{}, done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	require.NoError(e.t, err)
	p.cmd.Stderr = p.stderr
	require.NoError(e.t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits (bounded) for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(runTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v still running after %v", p.cmd.Args, runTimeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// readUntil reads stdout lines until one matches re, and returns the
// lines read (bounded).
func (p *proc) readUntil(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var got []string
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("stdout ended before a line matching %v; read:\n%s\nstderr: %s", re, strings.Join(got, "\n"), p.stderr)
			}
			got = append(got, line)
			if re.MatchString(line) {
				return got
			}
		case <-timer.C:
			t.Fatalf("no line matching %v within %v; read:\n%s", re, waitTimeout, strings.Join(got, "\n"))
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond every 20ms until it holds, for at most waitTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// children lists p's children through the admin connection; none if p
// does not exist.
func (e *env) children(p string) []string {
	e.t.Helper()
	ch, _, err := e.admin.Children(p)
	if err == zk.ErrNoNode {
		return nil
	}
	require.NoError(e.t, err)
	return ch
}

// deleteTree deletes p and everything under it through the admin
// connection, for a test's nodes outside its root; nodes already gone are
// no error.
func (e *env) deleteTree(p string) error {
	children, _, err := e.admin.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := e.deleteTree(path.Join(p, child)); err != nil {
			return err
		}
	}
	if err := e.admin.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// ctx is a context bounded by waitTimeout, cancelled when the test ends.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return c
}
