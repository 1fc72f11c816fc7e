package interop_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/internal/zktest"
)

// cli is the zklock command-line tool, built for one test, talking to
// the test's ZooKeeper.
type cli struct {
	t       *testing.T
	bin     string
	servers []string
}

// buildCLI builds cmd/zklock from the root module (through the replace
// directive) into the test's temporary directory.
func buildCLI(t *testing.T) *cli {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zklock")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/zklock/zklock/cmd/zklock").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return &cli{t: t, bin: bin, servers: zktest.Shared(t).Servers()}
}

// command returns the tool with args.
func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), "ZK_SERVERS="+strings.Join(c.servers, ","))
	return cmd
}

// run runs the tool to its end (bounded) and returns stdout, stderr and
// the exit code.
func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	cmd := c.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(c.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(holdTimeout + 30*time.Second):
		_ = cmd.Process.Kill()
		<-done
		c.t.Fatalf("%v did not exit", args)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// cliView is the part of inspect -json these tests read.
type cliView struct {
	Recipe  string `json:"recipe"`
	Holders int    `json:"holders"`
	Nodes   []struct {
		Kind string `json:"kind"`
		Role string `json:"role"`
		Path string `json:"path"`
		Name string `json:"name"`
	} `json:"nodes"`
}

func (c *cli) inspect(p string) cliView {
	c.t.Helper()
	out, errOut, code := c.run("inspect", "-json", p)
	require.Equal(c.t, 0, code, errOut)
	var v cliView
	require.NoError(c.t, json.Unmarshal([]byte(out), &v), out)
	return v
}

// waitFile waits until file exists.
func waitFile(t *testing.T, file string) {
	t.Helper()
	deadline := time.Now().Add(holdTimeout)
	for {
		if _, err := os.Stat(file); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not created within %v", file, holdTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zklock exec and a Curator InterProcessMutex exclude each other on one
// path, both ways.
func TestIntegration_CLIExecExcludesCurator(t *testing.T) {
	e := setup(t)
	c := buildCLI(t)
	p := e.peer
	p.NewMutex("j", e.path)
	require.True(t, p.Acquire("j", holdTimeout))
	_, errOut, code := c.run("exec", "-timeout", "500ms", e.path, "--", "true")
	require.Equal(t, 124, code, "zklock exec ran while Curator holds the lock: %s", errOut)
	_, errOut, code = c.run("exec", "-try", e.path, "--", "true")
	require.Equal(t, 75, code, errOut)
	p.Release("j")

	dir := t.TempDir()
	ready, done := filepath.Join(dir, "ready"), filepath.Join(dir, "done")
	cmd := c.command("exec", e.path, "--", "sh", "-c", `touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`, "sh", ready, done)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFile(t, ready)
	require.False(t, p.Acquire("j", shortTimeout), "Curator acquired while zklock exec holds the lock")
	j := p.StartAcquire("j", holdTimeout)
	time.Sleep(settle) // Curator queues; it must not get the lock meanwhile
	require.False(t, j.Done(), "Curator acquired while zklock exec holds the lock")

	require.NoError(t, os.WriteFile(done, nil, 0o644))
	select {
	case err := <-exited:
		require.NoError(t, err, errb.String())
	case <-time.After(holdTimeout):
		t.Fatalf("zklock exec did not exit")
	}
	require.True(t, j.Wait(), "Curator did not get the lock after zklock exec released it")
	p.Release("j")
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}

// zklock inspect shows Curator's holders and waiters: a mutex, and a
// semaphore's leases.
func TestIntegration_CLIInspectCuratorLocks(t *testing.T) {
	e := setup(t)
	c := buildCLI(t)
	p := e.peer
	p.NewMutex("j", e.path)
	require.True(t, p.Acquire("j", holdTimeout))
	m := e.mutex(t)
	a := startGoAcquire(m, holdTimeout)
	waitQueueLen(t, m, 2)

	v := c.inspect(e.path)
	assert.Equal(t, "mutex", v.Recipe)
	require.Len(t, v.Nodes, 2)
	assert.Equal(t, p.LockPath("j"), v.Nodes[0].Path, "Curator's node holds")
	assert.Equal(t, []string{"holder", "waiter"}, []string{v.Nodes[0].Role, v.Nodes[1].Role})
	p.Release("j")
	release(t, m, a.wait(t))

	semPath := e.root + "/sem"
	p.NewSemaphore("s", semPath, 2)
	lease := p.Lease("s", holdTimeout)
	require.NotEmpty(t, lease)
	v = c.inspect(semPath)
	assert.Equal(t, "semaphore", v.Recipe)
	require.NotEmpty(t, v.Nodes)
	assert.Equal(t, path.Join(semPath, "leases", lease), v.Nodes[0].Path)
	assert.Equal(t, "holder", v.Nodes[0].Role)
	p.ReturnLease("s", lease)
	zktest.WaitNoEphemerals(t, e.conn, e.root, cleanTimeout)
}
