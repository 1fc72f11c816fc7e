package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds of the Java child.
const (
	// killGrace is how long past the time limit the child may take to
	// report its DNF (it closes its sessions first) before it is killed.
	killGrace = 30 * time.Second
	// exitTimeout bounds the wait for the child to exit once it has
	// reported, and for a killed child to be reaped.
	exitTimeout = 30 * time.Second
	// logLines is how much of the child's log an error shows.
	logLines = 30
)

// curatorLib runs workloads with Apache Curator: each run is a child JVM
// running the harness (java/BenchCurator.java).
type curatorLib struct {
	tools          *javaTools
	classes        string // compiled harness
	logDir         string // the children's logs
	sessionTimeout time.Duration
	runs           int          // runs so far, to name the logs
	versions       string       // what the last child reported, e.g. "curator=5.4.0 ..."
	pid            atomic.Int64 // the running child's process id, 0 if none
}

// process implements library: the running harness.
func (c *curatorLib) process() int { return int(c.pid.Load()) }

// newCuratorLib finds Java and Curator and compiles the harness (or reuses
// an earlier compile). logDir receives one log per child.
func newCuratorLib(sessionTimeout time.Duration, logDir string) (*curatorLib, error) {
	tl, err := findJavaTools()
	if err != nil {
		return nil, err
	}
	dir, _, err := compileHarness(tl)
	if err != nil {
		return nil, err
	}
	return &curatorLib{tools: tl, classes: dir, logDir: logDir, sessionTimeout: sessionTimeout}, nil
}

// name implements library.
func (c *curatorLib) name() string { return libCurator }

// supports implements library: Curator runs every workload.
func (c *curatorLib) supports(string) bool { return true }

// args returns the java command line for sp, with limit as its time limit.
func (c *curatorLib) args(sp spec, ep endpoints, limit time.Duration) []string {
	args := []string{
		"-Xss256k", "-Xms256m", "-Xmx2g", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.logFile=System.err",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", strings.Join(append([]string{c.classes}, c.tools.classpath...), string(os.PathListSeparator)),
		"BenchCurator",
		strconv.FormatInt(c.sessionTimeout.Milliseconds(), 10),
		strconv.FormatInt(limit.Milliseconds(), 10),
		strings.Join(ep.Servers, ","), strings.Join(ep.Gate, ","),
		sp.Workload, sp.Path, sp.WarmPath,
	}
	itoa := strconv.Itoa
	ms := strconv.FormatInt(sp.Dur.Milliseconds(), 10)
	switch sp.Workload {
	case wFloor, wUncontended:
		return append(args, itoa(sp.N), itoa(sp.Warmup))
	case wHandoff:
		return append(args, itoa(sp.N), itoa(sp.Warmup), itoa(sp.reps()))
	case wFailover:
		return append(args, itoa(sp.N), sp.Mode, itoa(sp.Warmup), itoa(sp.WarmReps), itoa(sp.reps()))
	case wSemaphore:
		return append(args, itoa(sp.C), itoa(sp.Leases), ms, itoa(sp.Warmup))
	case wManyLocks:
		return append(args, itoa(sp.N), itoa(sp.goroutines()), itoa(sp.Warmup))
	}
	return append(args, itoa(sp.C), ms, itoa(sp.Warmup))
}

// run implements library: it runs the harness, answers its phases, and
// kills it if it has not reported killGrace after ctx's deadline.
func (c *curatorLib) run(ctx context.Context, sp spec, ep endpoints, ph phaser) (raw, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return raw{}, errors.New("curator: run needs a deadline")
	}
	c.runs++
	logPath := filepath.Join(c.logDir, fmt.Sprintf("curator-%02d-%s.log", c.runs, sp.Workload))
	ch, err := startChild(c.tools.java, c.args(sp, ep, time.Until(deadline)), logPath)
	if err != nil {
		return raw{}, err
	}
	c.pid.Store(int64(ch.cmd.Process.Pid))
	r, err := c.converse(ctx, ch, ph, deadline.Add(killGrace))
	c.pid.Store(0)
	wait := exitTimeout
	if errors.Is(ctx.Err(), context.Canceled) {
		wait = time.Second // interrupted: no need to let it close its sessions
	}
	if werr := ch.finish(wait); werr != nil && err == nil {
		err = werr
	}
	if err == nil && r.DNF {
		err = fmt.Errorf("%w: curator: %s", errDNF, r.Error)
	} else if err == nil && r.Error != "" {
		err = fmt.Errorf("curator: %s", r.Error)
	}
	if err != nil && !errors.Is(err, errDNF) {
		err = fmt.Errorf("%w\n--- tail of %s ---\n%s", err, logPath, logTail(logPath, logLines))
	}
	return r, err
}

// converse reads the child's lines until its result, answering each phase
// once ph returns; it gives up (and the caller kills the child) at
// killAt, when ph fails, or at once when ctx is cancelled (not when its
// deadline passes: the child then has until killAt to report its DNF).
func (c *curatorLib) converse(ctx context.Context, ch *child, ph phaser, killAt time.Time) (raw, error) {
	timer := time.NewTimer(time.Until(killAt))
	defer timer.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case <-cancelled:
			if errors.Is(ctx.Err(), context.Canceled) {
				return raw{}, fmt.Errorf("curator: %w", ctx.Err())
			}
			cancelled = nil // the deadline: wait for the child's report
		case line, ok := <-ch.lines:
			if !ok {
				return raw{}, fmt.Errorf("curator: harness exited without a result: %w", ch.exitErr())
			}
			r, done, err := c.handleLine(ctx, ch, ph, line)
			if err != nil || done {
				return r, err
			}
		case <-timer.C:
			return raw{}, fmt.Errorf("%w: curator: harness killed %v after the time limit", errDNF, killGrace)
		}
	}
}

// handleLine acts on one line of the child; done reports the result.
func (c *curatorLib) handleLine(ctx context.Context, ch *child, ph phaser, line string) (r raw, done bool, err error) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "versions":
		c.versions = rest
	case "phase":
		if err := ph(ctx, rest); err != nil {
			return raw{}, false, dnf(ctx, fmt.Errorf("curator: phase %s: %w", rest, err))
		}
		if _, err := io.WriteString(ch.stdin, "go\n"); err != nil {
			return raw{}, false, fmt.Errorf("curator: phase %s: %w", rest, err)
		}
	case "result":
		if err := json.Unmarshal([]byte(rest), &r); err != nil {
			return raw{}, false, fmt.Errorf("curator: bad result %q: %w", rest, err)
		}
		return r, true, nil
	default:
		return raw{}, false, fmt.Errorf("curator: unexpected line %q", line)
	}
	return raw{}, false, nil
}

// child is a running harness process.
type child struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string   // stdout, line by line; closed at its end
	exited  chan struct{} // closed once the process has been reaped
	waitErr error         // how it ended; read after exited is closed
}

// startChild starts java with args, its stderr appended to logPath, in its
// own process group. On Linux the kernel kills it if the thread that
// started it exits (PR_SET_PDEATHSIG), so it is started from a goroutine
// locked to its thread that stays until the child has been reaped.
func startChild(java string, args []string, logPath string) (*child, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("curator: log: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	cmd := exec.Command(java, args...)
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	ch := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16), exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			close(ch.exited)
			return
		}
		started <- nil
		ch.readLines(stdout)
		ch.waitErr = cmd.Wait()
		close(ch.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("curator: start %s: %w", java, err)
	}
	return ch, nil
}

// readLines sends stdout's lines to ch.lines until it ends. Wait must not
// run before stdout is read to its end, so this runs first.
func (ch *child) readLines(stdout io.Reader) {
	defer close(ch.lines)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		ch.lines <- sc.Text()
	}
	_, _ = io.Copy(io.Discard, stdout) // a line too long: drain so the child can exit
}

// exitErr describes how the child ended (waiting up to exitTimeout).
func (ch *child) exitErr() error {
	select {
	case <-ch.exited:
		if ch.waitErr == nil {
			return errors.New("exit status 0")
		}
		return ch.waitErr
	case <-time.After(exitTimeout):
		return errors.New("still running")
	}
}

// finish closes the child's stdin and waits up to d for it to exit, then
// kills its process group and waits up to d again.
func (ch *child) finish(d time.Duration) error {
	ch.stdin.Close()
	go func() { // unblock readLines if nobody reads anymore
		for range ch.lines {
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch.exited:
		return nil
	case <-t.C:
	}
	_ = killGroup(ch.cmd.Process)
	t.Reset(d)
	select {
	case <-ch.exited:
		return nil
	case <-t.C:
		return fmt.Errorf("curator: harness pid %d not reaped %v after SIGKILL", ch.cmd.Process.Pid, d)
	}
}
