package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	izk "github.com/zklock/zklock/internal/zktest"
)

// prompt bounds what must happen at once: a busy -try, an interrupted
// wait, a hold loss noticed.
const prompt = 10 * time.Second

// hold takes the Mutex on the test's path with a Client of its own and
// returns its release.
func (e *env) hold() func() {
	e.t.Helper()
	m, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(e.t, err)
	h, err := m.Acquire(ctx(e.t))
	require.NoError(e.t, err)
	return func() { require.NoError(e.t, m.Release(h)) }
}

// fileText waits until file exists and ends with a newline, and returns
// its text.
func fileText(t *testing.T, file string) string {
	t.Helper()
	var text string
	waitFor(t, file, func() bool {
		b, err := os.ReadFile(file)
		text = string(b)
		return err == nil && strings.HasSuffix(text, "\n")
	})
	return strings.TrimSpace(text)
}

// untilFile is a shell loop that runs until the file $2 exists.
const untilFile = `while [ ! -e "$2" ]; do sleep 0.02; done`

func TestExecRunsHoldingTheLock(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	envFile, done := filepath.Join(dir, "env"), filepath.Join(dir, "done")
	script := `echo "$ZKLOCK_TOKEN $ZKLOCK_NODE $ZKLOCK_PATH" > "$1"; ` + untilFile
	p := e.start("exec", e.path, "--", "sh", "-c", script, "sh", envFile, done)

	fields := strings.Fields(fileText(t, envFile))
	require.Len(t, fields, 3)
	token, err := strconv.ParseInt(fields[0], 10, 64)
	require.NoError(t, err)
	node := fields[1]
	assert.Equal(t, e.path, fields[2])
	assert.Equal(t, e.path, path.Dir(node))
	_, stat, err := e.admin.Get(node)
	require.NoError(t, err)
	assert.Equal(t, stat.Czxid, token, "ZKLOCK_TOKEN is the node's czxid, as Mutex.Token")

	m, err := zklock.NewMutex(e.client(), e.path)
	require.NoError(t, err)
	_, err = m.TryAcquire(ctx(t))
	assert.ErrorIs(t, err, zklock.ErrLocked, "the lock is held while the command runs")
	v := e.inspectJSON(e.path)
	require.NotEmpty(t, v.Nodes)
	assert.Equal(t, node, v.Nodes[0].Path)
	assert.Equal(t, token, v.Nodes[0].Token)

	require.NoError(t, os.WriteFile(done, nil, 0o644))
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Empty(t, e.children(e.path), "released on exit")
}

func TestExecNeverOverlaps(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	marker, log := filepath.Join(dir, "marker"), filepath.Join(dir, "log")
	// noclobber (set -C) makes the redirection fail if the marker exists:
	// another command is inside.
	script := `set -C; if ! : > "$1"; then echo overlap >> "$2"; exit 99; fi
echo "start $$" >> "$2"; sleep 0.1; echo "end $$" >> "$2"; rm -f "$1"`
	var procs []*proc
	for range 3 {
		procs = append(procs, e.start("exec", e.path, "--", "sh", "-c", script, "sh", marker, log))
	}
	for _, p := range procs {
		assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	}
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 6, "log:\n%s", b)
	for i := 0; i < len(lines); i += 2 {
		start, end := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		assert.Equal(t, "start", start[0], "log:\n%s", b)
		assert.Equal(t, []string{"end", start[1]}, end, "log:\n%s", b)
	}
}

func TestExecExitCodes(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		argv []string
		code int
	}{
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"sh", "-c", "kill -KILL $$"}, 128 + 9},
		{[]string{"true"}, 0},
		{[]string{"/nonexistent/command"}, 127},
	} {
		r := e.run(append([]string{"exec", e.path, "--"}, tc.argv...)...)
		assert.Equal(t, tc.code, r.code, "%v: stderr: %s", tc.argv, r.stderr)
	}
	// Without "--", what follows PATH is the command.
	r := e.run("exec", "-timeout", "20s", e.path, "sh", "-c", "exit 5")
	assert.Equal(t, 5, r.code, r.stderr)
}

func TestExecTryBusy(t *testing.T) {
	e := setup(t)
	release := e.hold()
	r := e.run("exec", "-try", e.path, "--", "true")
	assert.Equal(t, 75, r.code, r.stderr)
	assert.Contains(t, r.stderr, "lock "+e.path+" is busy")
	assert.Less(t, r.took, prompt)
	assert.Len(t, e.children(e.path), 1, "no node left behind")
	release()
	r = e.run("exec", "-try", e.path, "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
}

func TestExecTimeout(t *testing.T) {
	e := setup(t)
	release := e.hold()
	defer release()
	r := e.run("exec", "-timeout", "500ms", e.path, "--", "true")
	assert.Equal(t, 124, r.code, r.stderr)
	assert.Contains(t, r.stderr, "not acquired within 500ms")
	assert.GreaterOrEqual(t, r.took, 500*time.Millisecond)
	assert.Len(t, e.children(e.path), 1, "no node left behind")
}

func TestExecInterruptedWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			e := setup(t)
			release := e.hold()
			defer release()
			p := e.start("exec", e.path, "--", "true")
			waitFor(t, "exec's node queued", func() bool { return len(e.children(e.path)) == 2 })
			sent := time.Now()
			p.signal(t, tc.sig)
			assert.Equal(t, tc.code, p.wait(t), "stderr: %s", p.stderr)
			assert.Less(t, time.Since(sent), prompt)
			assert.Len(t, e.children(e.path), 1, "the cancelled acquire left no node")
		})
	}
}

func TestExecHoldLost(t *testing.T) {
	for _, tc := range []struct {
		name, trap string
		killed     bool
	}{
		{"term", `trap 'echo TERM > "$1"; exit 0' TERM`, false},
		{"kill", `trap 'echo TERM > "$1"' TERM`, true}, // ignores TERM: SIGKILL after the grace
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			dir := t.TempDir()
			got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
			script := tc.trap + `; touch "$2"; while :; do sleep 0.02; done`
			p := e.start("exec", "-kill-after", "500ms", e.path, "--", "sh", "-c", script, "sh", got, ready)
			waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
			nodes := e.children(e.path)
			require.Len(t, nodes, 1)
			require.NoError(t, e.admin.Delete(path.Join(e.path, nodes[0]), -1))

			assert.Equal(t, 3, p.wait(t), "stderr: %s", p.stderr)
			assert.Equal(t, "TERM", fileText(t, got), "the command got SIGTERM")
			assert.Contains(t, p.stderr.String(), "lock "+e.path+" lost")
			if tc.killed {
				assert.Contains(t, p.stderr.String(), "killing it")
			}
		})
	}
}

func TestExecForwardsSignals(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
	script := `trap 'echo HUP > "$1"; exit 9' HUP; touch "$2"; while :; do sleep 0.02; done`
	p := e.start("exec", e.path, "--", "sh", "-c", script, "sh", got, ready)
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
	p.signal(t, syscall.SIGHUP)
	assert.Equal(t, 9, p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "HUP", fileText(t, got))
}

func TestExecSemaphoreAndReadWrite(t *testing.T) {
	e := setup(t)
	s, err := zklock.NewSemaphore(e.client(), e.path, 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx(t))
	require.NoError(t, err)
	r := e.run("exec", "-n", "2", "-try", e.path, "--", "sh", "-c", `echo "$ZKLOCK_NODE"`)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, e.path+"/leases", path.Dir(strings.TrimSpace(r.stdout)))
	r = e.run("exec", "-n", "1", "-try", e.path, "--", "true")
	assert.Equal(t, 75, r.code, "one lease of one is taken: %s", r.stderr)
	require.NoError(t, lease.Release())

	rwPath := e.root + "/rw"
	rw, err := zklock.NewReadWriteLock(e.client(), rwPath)
	require.NoError(t, err)
	h, err := rw.ReadLock().Acquire(ctx(t))
	require.NoError(t, err)
	r = e.run("exec", "-read", "-try", rwPath, "--", "sh", "-c", `echo "$ZKLOCK_NODE"`)
	assert.Equal(t, 0, r.code, "readers share: %s", r.stderr)
	assert.Contains(t, r.stdout, "__READ__")
	r = e.run("exec", "-write", "-try", rwPath, "--", "true")
	assert.Equal(t, 75, r.code, "a writer excludes readers: %s", r.stderr)
	require.NoError(t, rw.ReadLock().Release(h))
}

func TestExecBadInput(t *testing.T) {
	e := setup(t)
	for _, args := range [][]string{
		{"exec", e.path},
		{"exec", e.path, "--"},
		{"exec", "-read", "-write", e.path, "--", "true"},
		{"exec", "-n", "-1", e.path, "--", "true"},
		{"exec", "-n", "2", "-read", e.path, "--", "true"},
		{"exec", "-signal", "BOGUS", e.path, "--", "true"},
		{"exec", "-try", "-timeout", "1s", e.path, "--", "true"},
		{"exec", "-kill-after", "0s", e.path, "--", "true"},
		{"exec", "rel", "--", "true"},
	} {
		r := e.run(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "zklock exec: ", args)
	}
	r := e.run("help", "exec")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "ZKLOCK_TOKEN")
	assert.Contains(t, r.stdout, "124")
	r = e.run("nosuch")
	assert.Equal(t, 2, r.code)
	r = e.run()
	assert.Equal(t, 2, r.code)
}

// countINT is a command that logs to the file $1 each SIGINT it gets
// ("int N") and, once a SIGHUP has come, how many it got ("ints N"): exec
// forwards signals in order, so a SIGINT it forwarded before the SIGHUP is
// counted. With $3 set, it first reads a line from stdin ("read LINE"). It
// writes its process id to $2 when ready.
const countINT = `n=0; hup=
trap 'n=$((n+1)); echo "int $n" >> "$1"' INT
trap 'hup=1' HUP
if [ -n "$3" ]; then read line; echo "read $line" >> "$1"; fi
echo $$ > "$2"
while [ -z "$hup" ]; do sleep 0.02; done
echo "ints $n" >> "$1"`

// waitLine waits until file has the line.
func waitLine(t *testing.T, file, line string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%q in %s", line, file), func() bool {
		b, _ := os.ReadFile(file)
		return slices.Contains(strings.Split(string(b), "\n"), line)
	})
}

// A Ctrl-C goes to the whole foreground process group: exec's, not the
// command's, which exec forwards it to: the command gets it once.
func TestExecSignalToGroupReachesCommandOnce(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	log, ready := filepath.Join(dir, "log"), filepath.Join(dir, "ready")
	cmd := e.command("exec", e.path, "--", "sh", "-c", countINT, "sh", log, ready)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a job of its own, as a shell starts it
	p := e.startCmd(cmd)
	pid, err := strconv.Atoi(fileText(t, ready))
	require.NoError(t, err)
	assert.Equal(t, pid, pgid(t, pid), "the command leads a process group of its own")
	require.NoError(t, syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT))
	waitLine(t, log, "int 1")
	p.signal(t, syscall.SIGHUP)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "int 1\nints 1", fileText(t, log))
}

// Signals go to the command's process group: its children get them too.
func TestExecSignalsReachCommandsChildren(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	got, ready, stop := filepath.Join(dir, "got"), filepath.Join(dir, "ready"), filepath.Join(dir, "stop")
	// The child shell runs in the background of sh -c, with no stdout or
	// stderr of exec's: only a signal to the group reaches it. It ends
	// when the test does, or after a minute, even if the signal never comes.
	child := `trap 'echo TERM > "$1"; exit 0' TERM; touch "$2"; i=0; while [ ! -e "$3" ] && [ $i -lt 3000 ]; do i=$((i+1)); sleep 0.02; done`
	script := `sh -c "$0" sh "$1" "$2" "$3" >/dev/null 2>&1 & wait`
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o644) })
	p := e.start("exec", e.path, "--", "sh", "-c", script, child, got, ready, stop)
	waitFor(t, "the command's child to start", func() bool { _, err := os.Stat(ready); return err == nil })
	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 128+int(syscall.SIGTERM), p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "TERM", fileText(t, got), "the command's child got SIGTERM")
}

// pgid returns the process group of the process pid.
func pgid(t *testing.T, pid int) int {
	t.Helper()
	g, err := syscall.Getpgid(pid)
	require.NoError(t, err)
	return g
}

// A hold lost by session expiry, not by a deletion: exec talks to
// ZooKeeper through a proxy that goes silent for longer than the session
// timeout, so the server expires the session and its node. The proxy is
// the harness's: the binary is another process, which needs the proxy's
// address (the kit's Link gives only a dialer, for a client in the test).
func TestExecHoldLostBySessionExpiry(t *testing.T) {
	for _, policy := range []string{"standard", "session"} {
		t.Run(policy, func(t *testing.T) {
			e := setup(t)
			proxy, err := izk.NewProxy(e.servers[0])
			require.NoError(t, err)
			t.Cleanup(func() { proxy.Resume(); assert.NoError(t, proxy.Close()) })
			dir := t.TempDir()
			got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
			script := `trap 'echo TERM > "$1"; exit 0' TERM; touch "$2"; while :; do sleep 0.02; done`
			p := e.start("exec", "-servers", proxy.Addr(), "-session-timeout", "2s", "-policy", policy,
				e.path, "--", "sh", "-c", script, "sh", got, ready)
			waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
			require.Len(t, e.children(e.path), 1)

			proxy.Pause()
			assert.Equal(t, 3, p.wait(t), "stderr: %s", p.stderr)
			assert.Equal(t, "TERM", fileText(t, got), "the command got SIGTERM")
			assert.Contains(t, p.stderr.String(), "lock "+e.path+" lost")
			// Still paused: only the session's expiry can remove the node.
			waitFor(t, "the expired session's node to go", func() bool { return len(e.children(e.path)) == 0 })
			proxy.Resume()
			assert.Empty(t, e.children(e.path), "no node left")
		})
	}
}
