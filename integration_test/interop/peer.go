// Package interop runs Apache Curator next to zklock, to show that the two
// are wire-compatible: a Go zklock lock and a Java Curator lock on the same
// ZooKeeper path exclude each other, queue together and revoke each other.
//
// [StartPeer] compiles java/ZkLockPeer.java (once per source version; the
// classes are cached in the system temp directory) against Debian's
// Curator jars (package libcurator-recipes-java, in /usr/share/java) and
// runs it as a child process that a test drives through typed methods:
//
//	p := interop.StartPeer(t, servers)
//	p.NewMutex("a", "/locks/x")
//	if !p.Acquire("a", 5*time.Second) { ... }
//	p.Release("a")
//
// Every method waits for the peer's reply for a bounded time and fails the
// test if none comes (the test never hangs on the peer). Methods that fail
// the test must run on the test's goroutine; from other goroutines, use
// the Start* variants and [Pending.Result].
//
// Without java, javac or the jars, StartPeer skips the test, unless the
// environment variable CI is non-empty: then it fails it.
//
// Environment:
//   - ZKLOCK_CURATOR_CLASSPATH: a path list of jars to use instead of
//     Debian's (to test another Curator version); it must hold Curator
//     and all its dependencies.
//   - JAVA_HOME: where java and javac are looked for first (then PATH).
//   - ZKLOCK_PEER_LOG_LEVEL: the peer's slf4j-simple log level (default
//     info, with ZooKeeper's start-up chatter at warn). The log, which
//     also records every protocol line, is printed when a test fails.
package interop

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
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

//go:embed java/ZkLockPeer.java
var peerSource []byte

const (
	// PeerSessionTimeout is the session timeout the peer's Curator client asks for.
	PeerSessionTimeout = 10 * time.Second
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

// debianJavaDir is where Debian installs jars, with unversioned symlinks.
const debianJavaDir = "/usr/share/java"

// requiredJars are Curator 5.x and what it needs at run time for the lock
// recipes (curator-framework's manifest names jackson too, which the lock
// recipes do not load).
var requiredJars = []string{
	"curator-recipes.jar",
	"curator-framework.jar",
	"curator-client.jar",
	"zookeeper.jar",
	"zookeeper-jute.jar",
	"guava.jar",
	"slf4j-api.jar",
}

// optionalJars are added when present: a logging backend for the peer's log.
var optionalJars = []string{"slf4j-simple.jar"}

// installHint is what to do when the peer cannot run.
const installHint = "install libcurator-recipes-java (apt-get install libcurator-recipes-java) and a JDK"

// javaTools are the programs and class path the peer needs.
type javaTools struct {
	java, javac string
	classpath   []string
}

// findTools locates java, javac and the jars, or says what is missing.
func findTools() (*javaTools, error) {
	var missing []string
	tools := &javaTools{}
	for _, tool := range []struct {
		name string
		dst  *string
	}{{"java", &tools.java}, {"javac", &tools.javac}} {
		if home := os.Getenv("JAVA_HOME"); home != "" {
			if p := filepath.Join(home, "bin", tool.name); isFile(p) {
				*tool.dst = p
				continue
			}
		}
		p, err := exec.LookPath(tool.name)
		if err != nil {
			missing = append(missing, tool.name+" (not in JAVA_HOME/bin or PATH)")
			continue
		}
		*tool.dst = p
	}
	if cp := os.Getenv("ZKLOCK_CURATOR_CLASSPATH"); cp != "" {
		for _, jar := range filepath.SplitList(cp) {
			if !isFile(jar) {
				missing = append(missing, jar+" (from ZKLOCK_CURATOR_CLASSPATH)")
			}
			tools.classpath = append(tools.classpath, jar)
		}
	} else {
		for _, name := range requiredJars {
			jar := filepath.Join(debianJavaDir, name)
			if !isFile(jar) {
				missing = append(missing, jar)
			}
			tools.classpath = append(tools.classpath, jar)
		}
		for _, name := range optionalJars {
			if jar := filepath.Join(debianJavaDir, name); isFile(jar) {
				tools.classpath = append(tools.classpath, jar)
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return tools, nil
}

// isFile reports whether path (after symlinks) is a regular file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

var (
	toolsOnce sync.Once
	toolsVal  *javaTools
	toolsErr  error
)

func tools() (*javaTools, error) {
	toolsOnce.Do(func() { toolsVal, toolsErr = findTools() })
	return toolsVal, toolsErr
}

// RequirePeer skips t (or, when the environment variable CI is non-empty,
// fails it) if the peer cannot run here: java, javac or a jar is missing.
// Call it before starting ZooKeeper, so that a machine without Java does
// not start one for nothing. StartPeer calls it too.
func RequirePeer(t testing.TB) {
	t.Helper()
	if _, err := tools(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("interop: cannot run the Curator peer (CI is set, so this fails instead of skipping): %v; %s", err, installHint)
		}
		t.Skipf("interop: cannot run the Curator peer: %v; %s", err, installHint)
	}
}

// compiled is the result of compiling the peer, shared by the test binary.
var compiled struct {
	mu       sync.Mutex
	done     bool
	dir      string
	err      error
	duration time.Duration // javac's run time; 0 when the cache was used
}

// classesDir compiles the peer once per test binary. The classes go to
// a directory of the system temp directory named after a hash of the
// source and the jars, made atomically, so that test binaries running
// at the same time and later runs share one compile, and a changed source
// or Curator upgrade gets its own.
func classesDir(t testing.TB, tl *javaTools) string {
	t.Helper()
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	if !compiled.done {
		compiled.done = true
		start := time.Now()
		var fresh bool
		compiled.dir, fresh, compiled.err = compile(tl)
		if fresh {
			compiled.duration = time.Since(start)
			t.Logf("interop: compiled ZkLockPeer.java in %v into %s", compiled.duration.Round(time.Millisecond), compiled.dir)
		} else if compiled.err == nil {
			t.Logf("interop: using ZkLockPeer classes compiled earlier in %s", compiled.dir)
		}
	}
	if compiled.err != nil {
		t.Fatalf("interop: %v", compiled.err)
	}
	return compiled.dir
}

// compile builds the peer's classes, or finds them built; fresh reports
// whether javac ran.
func compile(tl *javaTools) (dir string, fresh bool, err error) {
	h := sha256.New()
	h.Write(peerSource)
	fmt.Fprintf(h, "\x00%s\x00%s\x00", tl.java, tl.javac)
	for _, jar := range tl.classpath {
		fi, err := os.Stat(jar)
		if err != nil {
			return "", false, err
		}
		fmt.Fprintf(h, "%s %d %d\x00", jar, fi.Size(), fi.ModTime().UnixNano())
	}
	dir = filepath.Join(os.TempDir(), "zklock-interop-peer-"+hex.EncodeToString(h.Sum(nil))[:16])
	if isFile(filepath.Join(dir, "ZkLockPeer.class")) {
		return dir, false, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "zklock-interop-build-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	src := filepath.Join(tmp, "src", "ZkLockPeer.java")
	classes := filepath.Join(tmp, "classes")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return "", false, err
	}
	if err := os.WriteFile(src, peerSource, 0o644); err != nil {
		return "", false, err
	}
	cmd := exec.Command(tl.javac,
		"-J-Xmx256m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1",
		"--release", "17",
		"-Xlint:all,-path,-serial,-options",
		"-implicit:none", "-proc:none", // a jar on Curator's path ships .java files
		"-encoding", "UTF-8",
		"-cp", strings.Join(tl.classpath, string(os.PathListSeparator)),
		"-d", classes, src)
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := runBounded(cmd, 5*time.Minute); err != nil {
		return "", false, fmt.Errorf("javac ZkLockPeer.java: %v\n%s", err, outBuf.String())
	}
	if err := os.Rename(classes, dir); err != nil {
		// Another test binary may have won the race.
		if isFile(filepath.Join(dir, "ZkLockPeer.class")) {
			return dir, true, nil
		}
		return "", false, fmt.Errorf("install compiled peer: %w", err)
	}
	return dir, true, nil
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

// Peer is a running ZkLockPeer: a Java process with one Curator client.
type Peer struct {
	t          testing.TB
	cmd        *exec.Cmd
	logPath    string
	stdin      *os.File
	exited     chan struct{} // closed once the process is reaped
	waitErr    error         // how it ended; read after exited is closed
	readerDone chan struct{} // closed when the stdout reader has finished
	events     chan string

	// Versions is what the peer reported when ready, e.g.
	// "curator=5.4.0 zookeeper=3.8.0 java=17.0.15".
	Versions string

	closeOnce sync.Once

	mu      sync.Mutex
	nextTag int
	pending map[string]*Call
	dead    error // set when stdout ends: the peer is gone
	closed  bool
}

// Call is a command sent to the peer whose reply may not have come yet.
type Call struct {
	p        *Peer
	line     string
	deadline time.Time
	done     chan struct{} // closed when reply or err is set
	reply    string        // the reply's result, after "ok"
	err      error
}

// StartPeer compiles (once) and starts a peer whose Curator client is
// connected to servers, and stops it when t ends (see [Peer.Close]). The
// peer's stderr (Curator's and ZooKeeper's log) goes to a file in a
// t.TempDir, whose tail is logged if t failed. It skips or fails t like
// [RequirePeer] when Java or Curator is missing.
func StartPeer(t testing.TB, servers []string) *Peer {
	t.Helper()
	RequirePeer(t)
	tl, _ := tools()
	dir := classesDir(t, tl)

	logPath := filepath.Join(t.TempDir(), "peer.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("interop: peer log: %v", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatalf("interop: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatalf("interop: %v", err)
	}
	logFlags := []string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=info"}
	if level := os.Getenv("ZKLOCK_PEER_LOG_LEVEL"); level != "" {
		logFlags = []string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=" + level}
	} else {
		// Quiet ZooKeeper's start-up chatter (client environment dump).
		for _, logger := range []string{"org.apache.zookeeper.ZooKeeper", "org.apache.zookeeper.common.X509Util", "org.apache.zookeeper.ClientCnxnSocket"} {
			logFlags = append(logFlags, "-Dorg.slf4j.simpleLogger.log."+logger+"=warn")
		}
	}
	args := []string{
		"-Xmx128m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-Dorg.slf4j.simpleLogger.logFile=System.err",
		"-Dzookeeper.jmx.log4j.disable=true",
	}
	args = append(args, logFlags...)
	args = append(args,
		"-cp", strings.Join(append([]string{dir}, tl.classpath...), string(os.PathListSeparator)),
		"ZkLockPeer",
		strconv.FormatInt(PeerSessionTimeout.Milliseconds(), 10),
	)
	args = append(args, servers...)
	cmd := exec.Command(tl.java, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logFile
	cmd.SysProcAttr = sysProcAttr()

	p := &Peer{
		t:          t,
		cmd:        cmd,
		logPath:    logPath,
		stdin:      inW,
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		events:     make(chan string, 1024),
		pending:    make(map[string]*Call),
	}
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
	logFile.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		t.Fatalf("interop: start %s: %v", tl.java, err)
	}

	ready := make(chan string, 1)
	go p.readLoop(outR, ready)
	t.Cleanup(p.Close)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	start := time.Now()
	select {
	case v := <-ready:
		p.Versions = v
		t.Logf("interop: peer (pid %d) ready in %v: %s", cmd.Process.Pid, time.Since(start).Round(time.Millisecond), v)
	case <-p.readerDone:
		t.Fatalf("interop: peer exited before it was ready: %v (peer log below)", p.deadErr())
	case <-timer.C:
		t.Fatalf("interop: peer not ready after %v (peer log below)", startTimeout)
	}
	return p
}

// readLoop reads the peer's stdout until it ends: replies go to their
// Call, events to the events channel, "event ready" to ready.
func (p *Peer) readLoop(r *os.File, ready chan<- string) {
	defer close(p.readerDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event "); ok {
			if v, ok := strings.CutPrefix(ev, "ready "); ok {
				select {
				case ready <- v:
				default:
				}
				continue
			}
			select {
			case p.events <- ev:
			default:
				p.logf("events channel full, dropped: %s", ev)
			}
			continue
		}
		tag, rest, _ := strings.Cut(line, " ")
		p.mu.Lock()
		c := p.pending[tag]
		delete(p.pending, tag)
		p.mu.Unlock()
		if c == nil {
			p.logf("unexpected line on stdout: %q", line)
			continue
		}
		switch {
		case rest == "ok":
		case strings.HasPrefix(rest, "ok "):
			c.reply = strings.TrimPrefix(rest, "ok ")
		case strings.HasPrefix(rest, "err "):
			c.err = fmt.Errorf("peer: %s: %s", c.line, strings.TrimPrefix(rest, "err "))
		default:
			c.err = fmt.Errorf("peer: %s: malformed reply %q", c.line, rest)
		}
		close(c.done)
	}
	err := sc.Err()
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
		dead = fmt.Errorf("peer exited (%v)", p.waitErr)
	default:
		dead = errors.New("peer closed its stdout")
	}
	if err != nil {
		dead = fmt.Errorf("%w; reading its stdout: %v", dead, err)
	}
	p.mu.Lock()
	p.dead = dead
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, c := range pending {
		c.err = fmt.Errorf("peer: %s: %w", c.line, dead)
		close(c.done)
	}
	close(p.events)
}

func (p *Peer) deadErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// logf appends a line of the Go side's own to the peer's log.
func (p *Peer) logf(format string, args ...any) {
	f, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "[interop] "+format+"\n", args...)
}

// LogTail returns the last lines of the peer's log.
func (p *Peer) LogTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(peer log %s: %v)", p.logPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("--- last %d lines of peer log %s ---\n%s\n--- end of peer log ---", len(lines), p.logPath, strings.Join(lines, "\n"))
}

// Send sends a command (its words, e.g. "acquire", "a", "500") and returns
// at once. The reply is awaited with Call.Result or Call.Wait, for at most
// wait from now. Commands for one lock id run in order on the peer.
func (p *Peer) Send(wait time.Duration, words ...string) *Call {
	for _, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\r\n") {
			return &Call{p: p, line: strings.Join(words, " "), done: closedChan(),
				err: fmt.Errorf("peer: invalid word %q in command %q", w, words)}
		}
	}
	c := &Call{p: p, line: strings.Join(words, " "), deadline: time.Now().Add(wait), done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil || p.closed {
		c.err = fmt.Errorf("peer: %s: peer is not running (%v)", c.line, p.dead)
		close(c.done)
		return c
	}
	p.nextTag++
	tag := strconv.Itoa(p.nextTag)
	p.pending[tag] = c
	if _, err := io.WriteString(p.stdin, tag+" "+c.line+"\n"); err != nil {
		delete(p.pending, tag)
		c.err = fmt.Errorf("peer: %s: write: %w", c.line, err)
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
		return "", fmt.Errorf("peer: %s: no reply by the deadline", c.line)
	}
}

// Wait is Result that fails the test (with the peer's log tail) on error.
// Call it from the test's goroutine.
func (c *Call) Wait() string {
	c.p.t.Helper()
	r, err := c.Result()
	if err != nil {
		c.p.t.Fatalf("interop: %v (peer log below)", err)
	}
	return r
}

// Do sends a command and waits (at most ReplyTimeout) for its result,
// failing the test on error.
func (p *Peer) Do(words ...string) string {
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
		p.call.p.t.Fatalf("interop: %v (peer log below)", err)
	}
	return v
}

func parseBool(s string) (bool, error) { return strconv.ParseBool(s) }

// ms is the peer's form of a timeout; it must be positive (the peer never
// waits forever for a test).
func (p *Peer) ms(timeout time.Duration) string {
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

// ---- generic lock commands (mutex, semmutex, rwlock sides "<id>.read", "<id>.write")

// StartAcquire asks the peer to acquire lock id, waiting up to timeout;
// the result is whether it got it.
func (p *Peer) StartAcquire(id string, timeout time.Duration) *Pending[bool] {
	p.t.Helper()
	return &Pending[bool]{p.Send(timeout+ReplyTimeout, "acquire", id, p.ms(timeout)), parseBool}
}

// Acquire acquires lock id, waiting up to timeout, and reports whether it got it.
func (p *Peer) Acquire(id string, timeout time.Duration) bool {
	p.t.Helper()
	return p.StartAcquire(id, timeout).Wait()
}

// Release releases lock id once.
func (p *Peer) Release(id string) {
	p.t.Helper()
	p.Do("release", id)
}

// LockPath returns the node path of the peer's hold of lock id, "" if none.
func (p *Peer) LockPath(id string) string {
	p.t.Helper()
	return p.Do("lockpath", id)
}

// Participants returns lock id's getParticipantNodes().
func (p *Peer) Participants(id string) []string {
	p.t.Helper()
	return words(p.Do("participants", id))
}

// MakeRevocable makes lock id's next acquisition revocable: a revocation
// request then sends the event "revoked <id>". Curator forgets it at
// release, so call it before every acquire.
func (p *Peer) MakeRevocable(id string) {
	p.t.Helper()
	p.Do("revocable", id)
}

// ---- recipes

// NewMutex creates an InterProcessMutex named id on path.
func (p *Peer) NewMutex(id, path string) {
	p.t.Helper()
	p.Do("mutex", id, path)
}

// NewSemaphoreMutex creates an InterProcessSemaphoreMutex named id on
// path; use Acquire and Release with it.
func (p *Peer) NewSemaphoreMutex(id, path string) {
	p.t.Helper()
	p.Do("semmutex", id, path)
}

// NewReadWriteLock creates an InterProcessReadWriteLock named id on path.
// Its sides are also the locks "<id>.read" and "<id>.write" for the
// generic methods (LockPath, Participants, MakeRevocable, ...).
func (p *Peer) NewReadWriteLock(id, path string) {
	p.t.Helper()
	p.Do("rwlock", id, path)
}

// StartRead acquires the read lock of read/write lock id, waiting up to timeout.
func (p *Peer) StartRead(id string, timeout time.Duration) *Pending[bool] {
	p.t.Helper()
	return &Pending[bool]{p.Send(timeout+ReplyTimeout, "read", id, p.ms(timeout)), parseBool}
}

// Read acquires the read lock of id, waiting up to timeout.
func (p *Peer) Read(id string, timeout time.Duration) bool {
	p.t.Helper()
	return p.StartRead(id, timeout).Wait()
}

// StartWrite acquires the write lock of read/write lock id, waiting up to timeout.
func (p *Peer) StartWrite(id string, timeout time.Duration) *Pending[bool] {
	p.t.Helper()
	return &Pending[bool]{p.Send(timeout+ReplyTimeout, "write", id, p.ms(timeout)), parseBool}
}

// Write acquires the write lock of id, waiting up to timeout.
func (p *Peer) Write(id string, timeout time.Duration) bool {
	p.t.Helper()
	return p.StartWrite(id, timeout).Wait()
}

// Unread releases the read lock of id once.
func (p *Peer) Unread(id string) {
	p.t.Helper()
	p.Do("unread", id)
}

// Unwrite releases the write lock of id once.
func (p *Peer) Unwrite(id string) {
	p.t.Helper()
	p.Do("unwrite", id)
}

// NewSemaphore creates an InterProcessSemaphoreV2 named id on path.
func (p *Peer) NewSemaphore(id, path string, maxLeases int) {
	p.t.Helper()
	p.Do("semaphore", id, path, strconv.Itoa(maxLeases))
}

// StartLease acquires one lease of semaphore id, waiting up to timeout;
// the result is the lease's node name, "" if none was had in time.
func (p *Peer) StartLease(id string, timeout time.Duration) *Pending[string] {
	p.t.Helper()
	return &Pending[string]{p.Send(timeout+ReplyTimeout, "lease", id, p.ms(timeout)), func(s string) (string, error) {
		if s == "none" {
			return "", nil
		}
		return s, nil
	}}
}

// Lease acquires one lease of semaphore id, waiting up to timeout, and
// returns its node name, or "" if none was had in time.
func (p *Peer) Lease(id string, timeout time.Duration) string {
	p.t.Helper()
	return p.StartLease(id, timeout).Wait()
}

// ReturnLease closes the lease named name of semaphore id.
func (p *Peer) ReturnLease(id, name string) {
	p.t.Helper()
	p.Do("unlease", id, name)
}

// SemaphoreParticipants returns semaphore id's getParticipantNodes(): the
// lease node names, in ZooKeeper's order.
func (p *Peer) SemaphoreParticipants(id string) []string {
	p.t.Helper()
	return words(p.Do("semparticipants", id))
}

// ---- helpers

// Revoke calls Curator's Revoker.attemptRevoke on nodePath.
func (p *Peer) Revoke(nodePath string) {
	p.t.Helper()
	p.Do("revoke", nodePath)
}

// IsProtected reports Curator's ProtectedUtils.isProtectedZNode(name).
func (p *Peer) IsProtected(name string) bool {
	p.t.Helper()
	return p.doBool("isprotected", name)
}

// doBool is Do for a command whose result is a boolean.
func (p *Peer) doBool(words ...string) bool {
	p.t.Helper()
	v, err := strconv.ParseBool(p.Do(words...))
	if err != nil {
		p.t.Fatalf("interop: %s: %v", strings.Join(words, " "), err)
	}
	return v
}

// Barrier returns once every line the peer wrote before it read the
// barrier has been read, events included: they are in [Peer.Events]. (It
// sends "ping", whose reply comes after them on the peer's stdout.) It
// may be called from any goroutine.
func (p *Peer) Barrier() error {
	r, err := p.Send(ReplyTimeout, "ping").Result()
	if err == nil && r != "pong" {
		err = fmt.Errorf("peer: ping: reply %q", r)
	}
	return err
}

// Children returns the children of path as the peer's client lists them.
func (p *Peer) Children(path string) []string {
	p.t.Helper()
	return words(p.Do("children", path))
}

// Events returns the channel of the peer's asynchronous lines, without
// their "event " prefix (e.g. "revoked a"). It is closed when the peer
// has exited.
func (p *Peer) Events() <-chan string { return p.events }

// WaitEvent waits up to timeout for the event want, discarding (and
// logging) other events; it fails the test if want does not come.
func (p *Peer) WaitEvent(want string, timeout time.Duration) {
	p.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.t.Fatalf("interop: peer exited while waiting for event %q: %v (peer log below)", want, p.deadErr())
			}
			if ev == want {
				return
			}
			p.t.Logf("interop: skipping peer event %q while waiting for %q", ev, want)
		case <-timer.C:
			p.t.Fatalf("interop: no peer event %q within %v (peer log below)", want, timeout)
		}
	}
}

// Close stops the peer: "quit" (its client closes its session, so its
// ephemeral nodes go at once), then SIGKILL if it has not exited in
// time. It logs the peer's log tail if the test failed. It is
// idempotent, and runs when the test ends.
func (p *Peer) Close() { p.closeOnce.Do(p.close) }

func (p *Peer) close() {
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
		p.t.Errorf("interop: peer (pid %d) still running %v after quit (%v); killing it", p.cmd.Process.Pid, stopTimeout, quitErr)
		_ = killGroup(p.cmd.Process)
		timer.Reset(stopTimeout)
		select {
		case <-p.exited:
		case <-timer.C:
			p.t.Errorf("interop: peer (pid %d) not reaped %v after SIGKILL", p.cmd.Process.Pid, stopTimeout)
		}
	}
	timer.Reset(stopTimeout)
	select {
	case <-p.readerDone: // stdout ends with the process
	case <-timer.C:
		p.t.Errorf("interop: peer's stdout still open %v after it exited", stopTimeout)
	}
	timer.Stop()
	if p.t.Failed() {
		p.t.Logf("interop: peer stopped (%v)\n%s", p.waitErr, p.LogTail())
	}
}

// ---- leader latches

// NewLeaderLatch creates and starts a Curator LeaderLatch named id on path,
// for the participant participantID (a word: not empty, no spaces).
func (p *Peer) NewLeaderLatch(id, path, participantID string) {
	p.t.Helper()
	p.Do("latch", id, path, participantID)
}

// StartLatchAwait waits up to timeout for latch id to lead; the result is
// whether it leads.
func (p *Peer) StartLatchAwait(id string, timeout time.Duration) *Pending[bool] {
	p.t.Helper()
	return &Pending[bool]{p.Send(timeout+ReplyTimeout, "latchawait", id, p.ms(timeout)), parseBool}
}

// LatchHasLeadership returns latch id's hasLeadership().
func (p *Peer) LatchHasLeadership(id string) bool {
	p.t.Helper()
	return p.doBool("latchhas", id)
}

// LatchLeader returns the id of latch id's getLeader(), "" if none leads.
func (p *Peer) LatchLeader(id string) string {
	p.t.Helper()
	return p.Do("latchleader", id)
}

// LatchParticipants returns latch id's getParticipants() as ids in order,
// the leader's followed by "*".
func (p *Peer) LatchParticipants(id string) []string {
	p.t.Helper()
	return words(p.Do("latchparticipants", id))
}

// CloseLatch closes latch id (its node is deleted; no longer a participant).
func (p *Peer) CloseLatch(id string) {
	p.t.Helper()
	p.Do("latchclose", id)
}

// ---- leader selectors

// NewLeaderSelector creates and starts a Curator LeaderSelector named id on
// path, with autoRequeue, for the participant participantID (setId: the
// node's data; a word). Each term sends the event "leading <id>" when it
// begins and "resigned <id>" when it ends, before Curator releases the
// lock; a term lasts until [Peer.ResignSelector] or the selector's close.
func (p *Peer) NewLeaderSelector(id, path, participantID string) {
	p.t.Helper()
	p.Do("selector", id, path, participantID)
}

// ResignSelector ends selector id's current term (it queues again); the
// peer fails the command if the selector does not lead.
func (p *Peer) ResignSelector(id string) {
	p.t.Helper()
	p.Do("selectorresign", id)
}

// SelectorHasLeadership returns selector id's hasLeadership().
func (p *Peer) SelectorHasLeadership(id string) bool {
	p.t.Helper()
	return p.doBool("selectorhas", id)
}

// SelectorParticipants returns selector id's getParticipants() as ids in
// order, the leader's followed by "*".
func (p *Peer) SelectorParticipants(id string) []string {
	p.t.Helper()
	return words(p.Do("selectorparticipants", id))
}

// CloseSelector closes selector id: a term in progress is interrupted (and
// ends with "resigned <id>"), and its node is deleted.
func (p *Peer) CloseSelector(id string) {
	p.t.Helper()
	p.Do("selectorclose", id)
}
