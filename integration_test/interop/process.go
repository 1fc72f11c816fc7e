package interop

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// What every peer shares: a child process driven over the line protocol
// that README.md describes (requests "<tag> <command> [args]", replies
// "<tag> ok [result]" or "<tag> err <message>", asynchronous lines
// "event ..."), its log, and bounded waits for all of it. [Peer] (Java
// Curator) and [KazooPeer] (Python kazoo) are this process with the
// typed methods of their recipes.

const (
	// ReplyTimeout bounds the wait for the reply to a command, beyond the
	// command's own timeout (for acquire and friends).
	ReplyTimeout = 30 * time.Second
	// startTimeout bounds the wait for the peer to connect and say it is ready.
	startTimeout = 60 * time.Second
	// stopTimeout bounds the wait for the peer to exit after quit, and after SIGKILL.
	stopTimeout = 10 * time.Second
	// logTailLines is how much of the peer's log is shown on failure.
	logTailLines = 80
)

// isFile reports whether path (after symlinks) is a regular file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// runBounded runs cmd, killing it after d.
func runBounded(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("killed after %v", d)
	}
}

// requireRunnable skips t when a peer cannot run here (err is why, hint
// what to install), or fails it when the environment variable CI is
// non-empty.
func requireRunnable(t testing.TB, what string, err error, hint string) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("interop: cannot run the %s (CI is set, so this fails instead of skipping): %v; %s", what, err, hint)
	}
	t.Skipf("interop: cannot run the %s: %v; %s", what, err, hint)
}

// procSpec is what startProc runs.
type procSpec struct {
	name string // what messages call the peer: "peer", "kazoo peer"
	prog string
	args []string
	env  []string // added to the test binary's environment
}

// proc is a running peer process: its pipes, its log, the commands
// waiting for their replies.
type proc struct {
	t          testing.TB
	name       string // see procSpec
	cmd        *exec.Cmd
	logPath    string
	stdin      *os.File
	exited     chan struct{} // closed once the process is reaped
	waitErr    error         // how it ended; read after exited is closed
	readerDone chan struct{} // closed when the stdout reader has finished
	events     chan string

	closeOnce sync.Once

	mu      sync.Mutex // guards the fields below
	nextTag int
	pending map[string]*Call
	dead    error // set when stdout ends: the peer is gone
	closed  bool  // set by Close and Kill: no more commands
}

// Call is a command sent to the peer whose reply may not have come yet.
type Call struct {
	p        *proc
	line     string
	deadline time.Time
	done     chan struct{} // closed when reply or err is set
	reply    string        // the reply's result, after "ok"
	err      error
}

// startProc starts spec's program with its stderr in a log file of a
// t.TempDir, waits (at most startTimeout) for its "event ready <v>"
// line, and returns it with v. It registers the process's Close with
// t.Cleanup; a start that fails fails t, with the log's tail.
func startProc(t testing.TB, spec procSpec) (*proc, string) {
	t.Helper()
	p := &proc{
		t:          t,
		name:       spec.name,
		logPath:    filepath.Join(t.TempDir(), strings.ReplaceAll(spec.name, " ", "-")+".log"),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		events:     make(chan string, 1024),
		pending:    make(map[string]*Call),
	}
	outR, err := p.spawn(spec)
	if err != nil {
		t.Fatalf("interop: start %s: %v", spec.prog, err)
	}
	ready := make(chan string, 1)
	go p.readLoop(outR, ready)
	t.Cleanup(p.Close)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	start := time.Now()
	select {
	case v := <-ready:
		t.Logf("interop: %s (pid %d) ready in %v: %s", p.name, p.cmd.Process.Pid, time.Since(start).Round(time.Millisecond), v)
		return p, v
	case <-p.readerDone:
		t.Fatalf("interop: %s exited before it was ready: %v (%s log below)", p.name, p.deadErr(), p.name)
	case <-timer.C:
		t.Fatalf("interop: %s not ready after %v (%s log below)", p.name, startTimeout, p.name)
	}
	return nil, ""
}

// spawn starts the process and returns the read end of its stdout.
func (p *proc) spawn(spec procSpec) (*os.File, error) {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(spec.prog, spec.args...)
	if spec.env != nil {
		cmd.Env = append(os.Environ(), spec.env...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logFile
	cmd.SysProcAttr = sysProcAttr()
	p.cmd, p.stdin = cmd, inW
	// The kernel sends the child PR_SET_PDEATHSIG (Linux) when the thread
	// that started it exits, so start and reap it on a goroutine locked to
	// its thread, which lives as long as the child.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes when the goroutine ends
		err := cmd.Start()
		started <- err
		if err != nil {
			close(p.exited)
			return
		}
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	err = <-started
	// The child has its own copies of these now (or failed to start).
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	return outR, nil
}

// readLoop reads the peer's stdout until it ends: replies go to their
// Call, events to the events channel, "event ready" to ready.
func (p *proc) readLoop(r *os.File, ready chan<- string) {
	defer close(p.readerDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		p.dispatch(sc.Text(), ready)
	}
	p.ended(sc.Err())
}

// dispatch hands one line of the peer's stdout to whoever waits for it.
func (p *proc) dispatch(line string, ready chan<- string) {
	if ev, ok := strings.CutPrefix(line, "event "); ok {
		if v, ok := strings.CutPrefix(ev, "ready "); ok {
			select {
			case ready <- v:
			default:
			}
			return
		}
		select {
		case p.events <- ev:
		default:
			p.logf("events channel full, dropped: %s", ev)
		}
		return
	}
	tag, rest, _ := strings.Cut(line, " ")
	p.mu.Lock()
	c := p.pending[tag]
	delete(p.pending, tag)
	p.mu.Unlock()
	if c == nil {
		p.logf("unexpected line on stdout: %q", line)
		return
	}
	switch {
	case rest == "ok":
	case strings.HasPrefix(rest, "ok "):
		c.reply = strings.TrimPrefix(rest, "ok ")
	case strings.HasPrefix(rest, "err "):
		c.err = fmt.Errorf("%s: %s: %s", p.name, c.line, strings.TrimPrefix(rest, "err "))
	default:
		c.err = fmt.Errorf("%s: %s: malformed reply %q", p.name, c.line, rest)
	}
	close(c.done)
}

// ended records that stdout has ended (readErr: how reading it failed),
// fails the commands still waiting, and closes the events channel.
func (p *proc) ended(readErr error) {
	// stdout ends when the process does; wait (bounded) to learn how.
	timer := time.NewTimer(stopTimeout)
	select {
	case <-p.exited:
	case <-timer.C:
	}
	timer.Stop()
	var dead error
	select {
	case <-p.exited:
		dead = fmt.Errorf("%s exited (%v)", p.name, p.waitErr)
	default:
		dead = fmt.Errorf("%s closed its stdout", p.name)
	}
	if readErr != nil {
		dead = fmt.Errorf("%w; reading its stdout: %v", dead, readErr)
	}
	p.mu.Lock()
	p.dead = dead
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, c := range pending {
		c.err = fmt.Errorf("%s: %s: %w", p.name, c.line, dead)
		close(c.done)
	}
	close(p.events)
}

func (p *proc) deadErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// logf appends a line of the Go side's own to the peer's log.
func (p *proc) logf(format string, args ...any) {
	f, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "[interop] "+format+"\n", args...)
}

// LogTail returns the last lines of the peer's log.
func (p *proc) LogTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(%s log %s: %v)", p.name, p.logPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("--- last %d lines of %s log %s ---\n%s\n--- end of %s log ---", len(lines), p.name, p.logPath, strings.Join(lines, "\n"), p.name)
}

// Send sends a command (its words, e.g. "acquire", "a", "500") and returns
// at once. The reply is awaited with Call.Result or Call.Wait, for at most
// wait from now. Commands for one lock id run in order on the peer.
func (p *proc) Send(wait time.Duration, words ...string) *Call {
	for _, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\r\n") {
			return &Call{p: p, line: strings.Join(words, " "), done: closedChan(),
				err: fmt.Errorf("%s: invalid word %q in command %q", p.name, w, words)}
		}
	}
	c := &Call{p: p, line: strings.Join(words, " "), deadline: time.Now().Add(wait), done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil || p.closed {
		c.err = fmt.Errorf("%s: %s: %s is not running (%v)", p.name, c.line, p.name, p.dead)
		close(c.done)
		return c
	}
	p.nextTag++
	tag := strconv.Itoa(p.nextTag)
	p.pending[tag] = c
	if _, err := io.WriteString(p.stdin, tag+" "+c.line+"\n"); err != nil {
		delete(p.pending, tag)
		c.err = fmt.Errorf("%s: %s: write: %w", p.name, c.line, err)
		close(c.done)
	}
	return c
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Done reports whether the reply (or an error) has come.
func (c *Call) Done() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Result waits for the reply until the call's deadline and returns its
// result (the text after "ok"). It may be called from any goroutine.
func (c *Call) Result() (string, error) {
	timer := time.NewTimer(time.Until(c.deadline))
	defer timer.Stop()
	select {
	case <-c.done:
		return c.reply, c.err
	case <-timer.C:
		return "", fmt.Errorf("%s: %s: no reply by the deadline", c.p.name, c.line)
	}
}

// Wait is Result that fails the test (with the peer's log tail) on error.
// Call it from the test's goroutine.
func (c *Call) Wait() string {
	c.p.t.Helper()
	r, err := c.Result()
	if err != nil {
		c.p.t.Fatalf("interop: %v (%s log below)", err, c.p.name)
	}
	return r
}

// Do sends a command and waits (at most ReplyTimeout) for its result,
// failing the test on error.
func (p *proc) Do(words ...string) string {
	p.t.Helper()
	return p.Send(ReplyTimeout, words...).Wait()
}

// Pending is a command whose typed result may not have come yet.
type Pending[T any] struct {
	call  *Call
	parse func(string) (T, error)
}

// Done reports whether the reply has come.
func (p *Pending[T]) Done() bool { return p.call.Done() }

// Result waits for the reply (bounded) and parses it; for any goroutine.
func (p *Pending[T]) Result() (T, error) {
	r, err := p.call.Result()
	if err != nil {
		var zero T
		return zero, err
	}
	return p.parse(r)
}

// Wait is Result that fails the test on error; for the test's goroutine.
func (p *Pending[T]) Wait() T {
	p.call.p.t.Helper()
	v, err := p.Result()
	if err != nil {
		p.call.p.t.Fatalf("interop: %v (%s log below)", err, p.call.p.name)
	}
	return v
}

func parseBool(s string) (bool, error) { return strconv.ParseBool(s) }

// ms is the peer's form of a timeout; it must be positive (the peer never
// waits forever for a test).
func (p *proc) ms(timeout time.Duration) string {
	p.t.Helper()
	if timeout <= 0 {
		p.t.Fatalf("interop: timeout %v: must be positive", timeout)
	}
	return strconv.FormatInt(timeout.Milliseconds(), 10)
}

func words(reply string) []string {
	if reply == "" {
		return []string{}
	}
	return strings.Split(reply, " ")
}

// doBool is Do for a command whose result is a boolean.
func (p *proc) doBool(words ...string) bool {
	p.t.Helper()
	v, err := strconv.ParseBool(p.Do(words...))
	if err != nil {
		p.t.Fatalf("interop: %s: %v", strings.Join(words, " "), err)
	}
	return v
}

// Barrier returns once every line the peer wrote before it read the
// barrier has been read, events included: they are in Events. (It
// sends "ping", whose reply comes after them on the peer's stdout.) It
// may be called from any goroutine.
func (p *proc) Barrier() error {
	r, err := p.Send(ReplyTimeout, "ping").Result()
	if err == nil && r != "pong" {
		err = fmt.Errorf("%s: ping: reply %q", p.name, r)
	}
	return err
}

// Events returns the channel of the peer's asynchronous lines, without
// their "event " prefix (e.g. "revoked a"). It is closed when the peer
// has exited.
func (p *proc) Events() <-chan string { return p.events }

// WaitEvent waits up to timeout for the event want, discarding (and
// logging) other events; it fails the test if want does not come.
func (p *proc) WaitEvent(want string, timeout time.Duration) {
	p.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.t.Fatalf("interop: %s exited while waiting for event %q: %v (%s log below)", p.name, want, p.deadErr(), p.name)
			}
			if ev == want {
				return
			}
			p.t.Logf("interop: skipping %s event %q while waiting for %q", p.name, ev, want)
		case <-timer.C:
			p.t.Fatalf("interop: no %s event %q within %v (%s log below)", p.name, want, timeout, p.name)
		}
	}
}

// Kill sends SIGKILL to the peer's process group and waits (bounded) for
// it to exit and its stdout to end: its ZooKeeper session is not closed,
// so its ephemeral nodes stay until the servers expire the session.
// Commands waiting for a reply fail; later ones fail at once. It fails
// the test if the process does not go.
func (p *proc) Kill() {
	p.t.Helper()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	if err := killGroup(p.cmd.Process); err != nil {
		p.t.Logf("interop: kill %s (pid %d): %v", p.name, p.cmd.Process.Pid, err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	for _, ch := range []chan struct{}{p.exited, p.readerDone} {
		select {
		case <-ch:
		case <-timer.C:
			p.t.Fatalf("interop: %s (pid %d) still there %v after SIGKILL", p.name, p.cmd.Process.Pid, stopTimeout)
		}
	}
	p.logf("killed by the test (SIGKILL)")
}

// Close stops the peer: "quit" (its client closes its session, so its
// ephemeral nodes go at once), then SIGKILL if it has not exited in
// time. It logs the peer's log tail if the test failed. It is
// idempotent, and runs when the test ends.
func (p *proc) Close() { p.closeOnce.Do(p.close) }

func (p *proc) close() {
	quit := p.Send(stopTimeout, "quit")
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_, quitErr := quit.Result()
	p.stdin.Close()
	timer := time.NewTimer(stopTimeout)
	select {
	case <-p.exited:
	case <-timer.C:
		p.t.Errorf("interop: %s (pid %d) still running %v after quit (%v); killing it", p.name, p.cmd.Process.Pid, stopTimeout, quitErr)
		_ = killGroup(p.cmd.Process)
		timer.Reset(stopTimeout)
		select {
		case <-p.exited:
		case <-timer.C:
			p.t.Errorf("interop: %s (pid %d) not reaped %v after SIGKILL", p.name, p.cmd.Process.Pid, stopTimeout)
		}
	}
	timer.Reset(stopTimeout)
	select {
	case <-p.readerDone: // stdout ends with the process
	case <-timer.C:
		p.t.Errorf("interop: %s's stdout still open %v after it exited", p.name, stopTimeout)
	}
	timer.Stop()
	if p.t.Failed() {
		p.t.Logf("interop: %s stopped (%v)\n%s", p.name, p.waitErr, p.LogTail())
	}
}
