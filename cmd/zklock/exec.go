package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zklock/zklock"
)

// execFlags are exec's command line.
type execFlags struct {
	*common
	leases      int
	read, write bool
	try         bool
	timeout     time.Duration
	signal      string
	killAfter   time.Duration
	policy      string
	revocable   bool
	owner       string
	latch       string // participant id, with -latch: campaign in an Election

	sig syscall.Signal // parsed -signal
}

const execUsage = `Usage: zklock exec [flags] PATH -- CMD [ARGS...]

Acquires the lock at PATH, runs CMD while holding it, and releases it when
CMD exits; the exit code is CMD's. Like 'etcdctl lock' and 'consul lock',
on zklock's and Apache Curator's locks alike. The lock is a Mutex
(Curator's InterProcessMutex), or with -read/-write a side of a
ReadWriteLock, or with -n a lease of a Semaphore (InterProcessSemaphoreV2).

CMD's environment has ZKLOCK_PATH (the lock path), ZKLOCK_NODE (the path of
the lock or lease node held) and ZKLOCK_TOKEN (the fencing token: the
node's creation zxid, which grows from one holder to the next).

While waiting for the lock, SIGINT and SIGTERM (and SIGHUP) cancel the
wait, leaving no node behind. While CMD runs, they are forwarded to it. If
the hold is lost while CMD runs (session expired, connection suspended,
node deleted), CMD gets -signal, then SIGKILL after -kill-after, and exec
exits with code 3.

With -revocable, the holder honours 'zklock revoke' (and Curator's
Revoker): when asked to release, exec sends CMD -signal (then SIGKILL
after -kill-after), and releases the lock when CMD exits; the exit code is
CMD's. A request that comes while exec still waits is honoured when the
lock is granted: exec releases it at once without running CMD, and exits
with code 3. Semaphore leases cannot be revoked: -revocable excludes -n.

-owner sets the lock node's data, which 'zklock inspect' shows as the
owner (default: the host's address).

With -latch ID, exec runs CMD only while it leads the election at PATH
(zklock's Election, Curator's LeaderLatch), as participant ID: it
campaigns, runs CMD once it leads, and resigns when CMD exits. A lost
leadership is a lost hold (CMD gets -signal, exit code 3); ZKLOCK_TOKEN
fences CMD's writes. -latch excludes -n, -read, -write, -try, -revocable
and -owner (the node's data is ID).

-policy standard (the default) tells CMD at the first disconnect, so that
CMD never runs while exec cannot know that it holds the lock, but any blip
(a server restart) ends CMD. -policy session rides out disconnects that
reconnect within a third of -session-timeout less a tenth (7s of 30s), at the price of CMD
running on, meanwhile, unsure of its hold (safe if the ensemble's syncLimit
times tickTime is well under the session timeout; use ZKLOCK_TOKEN to fence).
`

func newExecFlags() *execFlags {
	f := &execFlags{common: newCommon("exec", execUsage)}
	f.fs.IntVar(&f.leases, "n", 0, "take one lease of a Semaphore of `LEASES` leases (at least 1) instead of a Mutex")
	f.fs.BoolVar(&f.read, "read", false, "take the read side of a ReadWriteLock")
	f.fs.BoolVar(&f.write, "write", false, "take the write side of a ReadWriteLock")
	f.fs.BoolVar(&f.try, "try", false, "try once: exit 75 at once if the lock is busy")
	f.fs.DurationVar(&f.timeout, "timeout", 0, "give up acquiring after this long, exit 124 (0: wait for ever)")
	f.fs.StringVar(&f.signal, "signal", "SIGTERM", "signal sent to the command when the hold is lost")
	f.fs.DurationVar(&f.killAfter, "kill-after", 10*time.Second, "then SIGKILL after this long")
	f.fs.BoolVar(&f.revocable, "revocable", false, "honour revocation requests: send -signal to the command, release when it exits")
	f.fs.StringVar(&f.owner, "owner", "", "the lock node's data, shown as its owner by inspect (default the host's address)")
	f.fs.StringVar(&f.latch, "latch", "", "run CMD only while leading the election at PATH, as participant `ID`")
	f.fs.StringVar(&f.policy, "policy", "standard", "when the hold ends: `standard|session`: at the first disconnect, or when the session is lost")
	return f
}

// runExec is the exec command.
func runExec(args []string, stdout, stderr io.Writer) int {
	f := newExecFlags()
	lockPath, argv, err := f.parseExec(args)
	if err != nil {
		return f.exitFor(err, stdout, stderr)
	}
	client, err := f.connect()
	if err != nil {
		return f.exitFor(err, stdout, stderr)
	}
	defer client.Close()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	r := &runner{f: f, c: client, path: lockPath, argv: argv, sigs: sigs, stdout: stdout, stderr: stderr}
	return r.run()
}

// parseExec parses the command line and returns PATH, and CMD and its
// arguments.
func (f *execFlags) parseExec(args []string) (string, []string, error) {
	pos, argv, err := f.parse(args, argPath)
	if err != nil {
		return "", nil, err
	}
	if err := checkPath(pos[0]); err != nil {
		return "", nil, err
	}
	if err := f.check(argv); err != nil {
		return "", nil, err
	}
	return pos[0], argv, nil
}

// check validates the flags and the command.
func (f *execFlags) check(argv []string) error {
	switch {
	case len(argv) == 0:
		return fmt.Errorf("%w: missing CMD (the command to run): want PATH -- CMD [ARGS...]", errUsage)
	case f.read && f.write:
		return fmt.Errorf("%w: -read and -write exclude each other", errUsage)
	case f.isSet("n") && f.leases <= 0:
		return fmt.Errorf("%w: -n %d: want a positive number of leases", errUsage, f.leases)
	case f.leases != 0 && (f.read || f.write):
		return fmt.Errorf("%w: -n and -read/-write exclude each other", errUsage)
	case f.leases != 0 && f.revocable:
		return fmt.Errorf("%w: -revocable and -n exclude each other: semaphore leases cannot be revoked", errUsage)
	case f.timeout < 0 || (f.try && f.timeout > 0):
		return fmt.Errorf("%w: -timeout %v: want a positive duration, without -try", errUsage, f.timeout)
	case f.killAfter <= 0:
		return fmt.Errorf("%w: -kill-after %v: want a positive duration", errUsage, f.killAfter)
	case f.isSet("latch") && (f.leases != 0 || f.read || f.write || f.try || f.revocable || f.isSet("owner")):
		return fmt.Errorf("%w: -latch excludes -n, -read, -write, -try, -revocable and -owner", errUsage)
	}
	policy, err := parsePolicy(f.policy)
	if err != nil {
		return err
	}
	f.extra = append(f.extra, zklock.WithErrorPolicy(policy))
	if f.isSet("owner") {
		f.extra = append(f.extra, zklock.WithNodeData([]byte(f.owner)))
	}
	sig, err := parseSignal(f.signal)
	f.sig = sig
	return err
}

// parsePolicy parses -policy: "standard" or "session".
func parsePolicy(s string) (zklock.ErrorPolicy, error) {
	switch strings.ToLower(s) {
	case "standard":
		return zklock.StandardPolicy, nil
	case "session":
		return zklock.SessionPolicy, nil
	}
	return 0, fmt.Errorf("%w: -policy %q: want standard or session", errUsage, s)
}

// signalNames are the signals -signal accepts by name.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "TERM": syscall.SIGTERM,
}

// parseSignal parses "SIGTERM", "TERM" or "15".
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	if sig, ok := signalNames[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("%w: -signal %q: want a signal such as SIGTERM, HUP or 15", errUsage, s)
}

// holding is a hold of any recipe, as exec needs it.
type holding struct {
	node    string          // path of the node held, relative to the namespace
	token   int64           // fencing token
	lost    <-chan struct{} // closed when the hold ends
	revoked <-chan struct{} // closed when revocation is requested; nil if not revocable
	release func() error    // releases; returns the loss if the hold was lost
}

// acquire takes the lock the flags name, as a hold.
func (f *execFlags) acquire(ctx context.Context, c *zklock.Client, p string) (*holding, error) {
	if f.leases > 0 {
		return f.acquireLease(ctx, c, p)
	}
	if f.isSet("latch") {
		return f.campaign(ctx, c, p)
	}
	m, err := f.mutex(c, p)
	if err != nil {
		return nil, err
	}
	revoked := f.makeRevocable(m)
	take := m.Acquire
	if f.try {
		take = m.TryAcquire
	}
	hctx, err := take(ctx)
	if err != nil {
		return nil, err
	}
	h := &holding{node: m.LockPath(hctx), lost: hctx.Done(), revoked: revoked,
		release: func() error { return m.Release(hctx) }}
	if h.token, err = m.Token(hctx); err != nil {
		return nil, errors.Join(err, h.release())
	}
	return h, nil
}

// mutex makes the Mutex the flags name: a Mutex, or a side of a
// ReadWriteLock.
func (f *execFlags) mutex(c *zklock.Client, p string) (*zklock.Mutex, error) {
	if !f.read && !f.write {
		return zklock.NewMutex(c, p)
	}
	rw, err := zklock.NewReadWriteLock(c, p)
	if err != nil {
		return nil, err
	}
	if f.read {
		return rw.ReadLock(), nil
	}
	return rw.WriteLock(), nil
}

// makeRevocable makes m revocable if the flags say so, and returns a
// channel closed at the first revocation request; nil if not revocable.
func (f *execFlags) makeRevocable(m *zklock.Mutex) <-chan struct{} {
	if !f.revocable {
		return nil
	}
	revoked := make(chan struct{})
	var once sync.Once
	m.MakeRevocable(func(*zklock.Mutex) { once.Do(func() { close(revoked) }) })
	return revoked
}

// acquireLease takes one lease of a Semaphore of f.leases leases.
func (f *execFlags) acquireLease(ctx context.Context, c *zklock.Client, p string) (*holding, error) {
	s, err := zklock.NewSemaphore(c, p, f.leases)
	if err != nil {
		return nil, err
	}
	take := s.Acquire
	if f.try {
		take = s.TryAcquire
	}
	l, err := take(ctx)
	if err != nil {
		return nil, err
	}
	return &holding{node: l.Path(), token: l.Token(), lost: l.Done(), release: l.Release}, nil
}

// campaign waits until participant f.latch leads the election at p.
func (f *execFlags) campaign(ctx context.Context, c *zklock.Client, p string) (*holding, error) {
	el, err := zklock.NewElection(c, p, f.latch)
	if err != nil {
		return nil, err
	}
	hd, err := el.Campaign(ctx)
	if err != nil {
		return nil, err
	}
	h := &holding{node: hd.Path(), lost: hd.Done(), release: hd.Release}
	if h.token, err = hd.Token(); err != nil {
		return nil, errors.Join(err, h.release())
	}
	return h, nil
}
