package interop

import (
	_ "embed"
	"encoding/json"
	"errors"
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

// The kazoo peer: python/kazoo_peer.py, a Python process with one kazoo
// client, driven as the Java peer is (same protocol, same process
// handling, see process.go). Debian's python3-kazoo (kazoo 2.8) is what it
// is tested with.
//
//	k := interop.StartKazooPeer(t, servers)
//	k.NewLock("a", "/locks/x", "py-a")
//	if !k.Acquire("a", 5*time.Second) { ... }
//	k.Release("a")
//
// Without the interpreter or kazoo, StartKazooPeer skips the test, unless
// the environment variable CI is non-empty: then it fails it.
//
// Environment:
//   - ZKLOCK_KAZOO_PYTHON: the Python interpreter (default /usr/bin/python3,
//     Debian's, which python3-kazoo installs into).
//   - ZKLOCK_KAZOO_LOG_LEVEL: the peer's Python logging level (default
//     INFO). The log, which also records every protocol line, is printed
//     when a test fails.

//go:embed python/kazoo_peer.py
var kazooSource []byte

// KazooSessionTimeout is the session timeout the kazoo peer's client asks
// for, unless [WithKazooSessionTimeout] says otherwise.
const KazooSessionTimeout = 10 * time.Second

// defaultPython is Debian's interpreter, the one python3-kazoo serves.
const defaultPython = "/usr/bin/python3"

// kazooInstallHint is what to do when the kazoo peer cannot run.
const kazooInstallHint = "install python3-kazoo (apt-get install python3-kazoo), or set ZKLOCK_KAZOO_PYTHON to a Python 3 with kazoo 2.8"

// ErrCancelled is the error of a kazoo acquire (StartAcquire's result)
// that [KazooPeer.Cancel] ended: kazoo's CancelledError.
var ErrCancelled = errors.New("kazoo peer: acquire cancelled")

var (
	kazooOnce    sync.Once
	kazooPython  string
	kazooVersion string
	kazooErr     error
)

// findKazoo checks, once per test binary, that the interpreter runs and
// imports kazoo.
func findKazoo() (python, version string, err error) {
	kazooOnce.Do(func() {
		kazooPython = defaultPython
		if p := os.Getenv("ZKLOCK_KAZOO_PYTHON"); p != "" {
			kazooPython = p
		}
		if _, err := exec.LookPath(kazooPython); err != nil {
			kazooErr = fmt.Errorf("no Python interpreter %s: %w", kazooPython, err)
			return
		}
		var out strings.Builder
		cmd := exec.Command(kazooPython, "-c", "import kazoo; print(kazoo.__version__)")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := runBounded(cmd, 30*time.Second); err != nil {
			kazooErr = fmt.Errorf("%s cannot import kazoo: %v: %s", kazooPython, err, strings.TrimSpace(out.String()))
			return
		}
		kazooVersion = strings.TrimSpace(out.String())
	})
	return kazooPython, kazooVersion, kazooErr
}

// RequireKazoo skips t (or, when the environment variable CI is
// non-empty, fails it) if the kazoo peer cannot run here: no interpreter,
// or no kazoo. Call it before starting ZooKeeper, so that a machine
// without kazoo does not start one for nothing. StartKazooPeer calls it
// too.
func RequireKazoo(t testing.TB) {
	t.Helper()
	_, _, err := findKazoo()
	requireRunnable(t, "kazoo peer", err, kazooInstallHint)
}

// KazooPeer is a running kazoo_peer.py: a Python process with one kazoo
// client. Its methods that take an id act on the recipe that a New*
// method named so; each id's acquires, releases and election runs run in
// order on a thread of the id's own, so a blocked acquire does not block
// the peer. Every method waits for the reply for a bounded time and fails
// the test if none comes; those that fail the test must run on the
// test's goroutine (from others, use the Start* variants and
// [Pending.Result]).
type KazooPeer struct {
	*proc

	// Versions is what the peer reported when ready, e.g.
	// "kazoo=2.8.0 python=3.11.2".
	Versions string
}

// KazooOption configures StartKazooPeer.
type KazooOption func(*kazooConfig)

type kazooConfig struct {
	sessionTimeout time.Duration // default KazooSessionTimeout
}

// WithKazooSessionTimeout sets the session timeout the peer's client asks
// for (the servers bound it); a short one makes a killed peer's nodes go
// sooner.
func WithKazooSessionTimeout(d time.Duration) KazooOption {
	return func(c *kazooConfig) { c.sessionTimeout = d }
}

// StartKazooPeer starts a kazoo peer whose client is connected to servers,
// and stops it when t ends (see [KazooPeer.Close]). The peer's stderr
// (its log and kazoo's) goes to a file in a t.TempDir, whose tail is
// logged if t failed. It skips or fails t like [RequireKazoo] when Python
// or kazoo is missing.
func StartKazooPeer(t testing.TB, servers []string, opts ...KazooOption) *KazooPeer {
	t.Helper()
	RequireKazoo(t)
	python, _, _ := findKazoo()
	cfg := kazooConfig{sessionTimeout: KazooSessionTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.sessionTimeout <= 0 {
		t.Fatalf("interop: kazoo session timeout %v: must be positive", cfg.sessionTimeout)
	}
	script := filepath.Join(t.TempDir(), "kazoo_peer.py")
	if err := os.WriteFile(script, kazooSource, 0o644); err != nil {
		t.Fatalf("interop: %v", err)
	}
	args := []string{"-u", script, strconv.FormatInt(cfg.sessionTimeout.Milliseconds(), 10)}
	args = append(args, servers...)
	p, versions := startProc(t, procSpec{name: "kazoo peer", prog: python, args: args,
		env: []string{"PYTHONDONTWRITEBYTECODE=1"}})
	return &KazooPeer{proc: p, Versions: versions}
}

// parseAcquired reads acquire's reply: "cancelled" is ErrCancelled.
func parseAcquired(s string) (bool, error) {
	if s == "cancelled" {
		return false, ErrCancelled
	}
	return strconv.ParseBool(s)
}

// jsonList is the parser of a reply that is a JSON array of strings.
func jsonList(s string) ([]string, error) {
	var l []string
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, fmt.Errorf("kazoo peer: reply %q: %w", s, err)
	}
	if l == nil {
		l = []string{}
	}
	return l, nil
}

// doList is Do for a command whose result is a JSON list.
func (k *KazooPeer) doList(words ...string) []string {
	k.t.Helper()
	l, err := jsonList(k.Do(words...))
	if err != nil {
		k.t.Fatalf("interop: %s: %v", strings.Join(words, " "), err)
	}
	return l
}

// ---- recipes

// NewLock creates a kazoo Lock named id on path, with identifier (a word)
// as its nodes' data.
func (k *KazooPeer) NewLock(id, path, identifier string) {
	k.t.Helper()
	k.Do("lock", id, path, identifier)
}

// NewReadLock creates a kazoo ReadLock named id on path.
func (k *KazooPeer) NewReadLock(id, path, identifier string) {
	k.t.Helper()
	k.Do("rlock", id, path, identifier)
}

// NewWriteLock creates a kazoo WriteLock named id on path.
func (k *KazooPeer) NewWriteLock(id, path, identifier string) {
	k.t.Helper()
	k.Do("wlock", id, path, identifier)
}

// NewSemaphore creates a kazoo Semaphore named id on path with
// maxLeases; use StartAcquire, Acquire and Release with it. kazoo checks
// maxLeases against the pool node's data at the first acquire, which then
// fails ("ValueError: Inconsistent max leases") on a mismatch.
func (k *KazooPeer) NewSemaphore(id, path string, maxLeases int, identifier string) {
	k.t.Helper()
	k.Do("semaphore", id, path, strconv.Itoa(maxLeases), identifier)
}

// NewElection creates a kazoo Election named id on path, for identifier.
// It takes part in the election only while [KazooPeer.StartRun] runs.
func (k *KazooPeer) NewElection(id, path, identifier string) {
	k.t.Helper()
	k.Do("election", id, path, identifier)
}

// ---- lock commands (Lock, ReadLock, WriteLock, Semaphore)

// StartAcquire asks the peer to acquire lock or semaphore id, waiting up
// to timeout; the result is whether it got it, or ErrCancelled if
// [KazooPeer.Cancel] ended the wait.
func (k *KazooPeer) StartAcquire(id string, timeout time.Duration) *Pending[bool] {
	k.t.Helper()
	return &Pending[bool]{k.Send(timeout+ReplyTimeout, "acquire", id, k.ms(timeout)), parseAcquired}
}

// Acquire acquires lock or semaphore id, waiting up to timeout, and
// reports whether it got it.
func (k *KazooPeer) Acquire(id string, timeout time.Duration) bool {
	k.t.Helper()
	return k.StartAcquire(id, timeout).Wait()
}

// Release releases lock or semaphore id; the peer fails the command if
// id is not acquired.
func (k *KazooPeer) Release(id string) {
	k.t.Helper()
	k.Do("release", id)
}

// Cancel calls kazoo's cancel() on lock, semaphore or election id: an
// acquire waiting for it returns ErrCancelled (a run, false), and kazoo
// deletes its node. It does not wait for that. kazoo's Semaphore forgets a
// cancel that comes before its acquire has begun (acquire resets the
// flag), and a Lock's cancel that comes after it acquired cancels its next
// acquire: cancel a waiter once its node is seen.
func (k *KazooPeer) Cancel(id string) {
	k.t.Helper()
	k.Do("cancel", id)
}

// Contenders returns lock or election id's contenders(): the identifiers
// (node data) of the path's contenders, in kazoo's order.
func (k *KazooPeer) Contenders(id string) []string {
	k.t.Helper()
	return k.doList("contenders", id)
}

// Node returns the name of id's node: a lock's or an election's while it
// queues or holds, a semaphore's lease while it holds one; "" if none.
func (k *KazooPeer) Node(id string) string {
	k.t.Helper()
	return k.Do("node", id)
}

// LeaseHolders returns semaphore id's lease_holders(): the identifiers of
// the leases' holders, unordered.
func (k *KazooPeer) LeaseHolders(id string) []string {
	k.t.Helper()
	return k.doList("leaseholders", id)
}

// ---- elections

// StartRun runs election id (kazoo's Election.run) and returns at once.
// While it leads, the peer sends the event "leading <id>"; its term lasts
// until [KazooPeer.Resign], and ends with the event "resigned <id>"
// (written before kazoo releases the lock). The result is whether it led
// (false: [KazooPeer.Cancel] ended it first); it is awaited for at most
// within from now.
func (k *KazooPeer) StartRun(id string, within time.Duration) *Pending[bool] {
	k.t.Helper()
	return &Pending[bool]{k.Send(within, "run", id), parseBool}
}

// Resign ends election id's current term; the peer fails the command if
// it does not lead.
func (k *KazooPeer) Resign(id string) {
	k.t.Helper()
	k.Do("resign", id)
}

// Leading reports whether election id is in a term.
func (k *KazooPeer) Leading(id string) bool {
	k.t.Helper()
	return k.doBool("leading", id)
}

// ---- helpers

// Children returns the children of path as the peer's client lists them.
func (k *KazooPeer) Children(path string) []string {
	k.t.Helper()
	return k.doList("children", path)
}

// State returns the client's KazooState: "CONNECTED", "SUSPENDED" or "LOST".
func (k *KazooPeer) State() string {
	k.t.Helper()
	return k.Do("state")
}

// ExpireSession ends the client's session on the servers, as Curator's
// KillSession does (another client attaches to it and closes it): its
// ephemeral nodes go at once. The client sees the event "state LOST",
// then starts a new session ("state CONNECTED"); ExpireSession returns
// once it has.
func (k *KazooPeer) ExpireSession() {
	k.t.Helper()
	k.Do("expire")
}
