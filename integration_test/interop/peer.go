// Package interop runs Apache Curator (Java) and kazoo (Python) next to
// zklock, to show that they are wire-compatible: a Go zklock lock and a
// Java Curator lock on the same ZooKeeper path exclude each other, queue
// together and revoke each other; so do a zklock lock in kazoo's layout
// and a kazoo lock (see [StartKazooPeer]). Both peers are child processes
// driven over one line protocol (README.md), with the same bounded waits
// and log capture.
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
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:embed java/ZkLockPeer.java
var peerSource []byte

// PeerSessionTimeout is the session timeout the peer's Curator client asks for.
const PeerSessionTimeout = 10 * time.Second

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
	_, err := tools()
	requireRunnable(t, "Curator peer", err, installHint)
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

// Peer is a running ZkLockPeer: a Java process with one Curator client.
type Peer struct {
	*proc

	// Versions is what the peer reported when ready, e.g.
	// "curator=5.4.0 zookeeper=3.8.0 java=17.0.15".
	Versions string
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
	p, versions := startProc(t, procSpec{name: "peer", prog: tl.java, args: args})
	return &Peer{proc: p, Versions: versions}
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

// Children returns the children of path as the peer's client lists them.
func (p *Peer) Children(path string) []string {
	p.t.Helper()
	return words(p.Do("children", path))
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
