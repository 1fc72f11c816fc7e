package zklock_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// env is one integration test's slice of a ZooKeeper server: a root path of
// its own, an admin connection, and the Clients it made. Its clean-up first
// checks, while every session is still alive, that no ephemeral node is left
// under the root (no orphan lock nodes), then closes the Clients.
type env struct {
	t       *testing.T
	servers []string
	cluster *kit.Cluster // the public test kit's, nil for one it cannot give (TLS)
	root    string
	admin   *zk.Conn

	mu      sync.Mutex
	clients []*zklock.Client
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// setup gives the test the shared server, through the public test kit
// (package zktest, imported here as kit), as a user's tests get it.
func setup(t *testing.T) *env {
	t.Helper()
	return setupKit(t, kit.Shared(t))
}

// setupKit gives the test the kit's cluster c.
func setupKit(t *testing.T, c *kit.Cluster) *env {
	t.Helper()
	e := setupOn(t, c.Servers())
	e.cluster = c
	return e
}

// link returns a kit Link to the test's cluster, for faults on one
// client's connection (zk.WithDialer(link.Dial)). The Link closes when the
// test ends, before the env's clean-up (its orphan check, then the
// Clients' Close), which would cut its Clients off from the deletes they
// left to the background (a wait cancelled at the test's end returns
// before its node's delete is answered): so the orphan check runs first
// also right before the Link closes, while it is up.
func (e *env) link() *kit.Link {
	e.t.Helper()
	l := kit.NewLink(e.t, e.cluster)
	e.t.Cleanup(func() { zktest.WaitNoEphemerals(e.t, e.admin, e.root, 10*time.Second) })
	return l
}

// setupOn gives the test the given cluster.
// testDigestUsers are the user:password pairs of the tests that use digest
// ACLs; the admin connection authenticates as each of them.
var testDigestUsers = []string{"owner:pw", "owner:s3cret", "wrapped:pw"}

func setupOn(t *testing.T, servers []string) *env {
	t.Helper()
	e := &env{
		t:       t,
		servers: servers,
		root:    "/zklock-test/" + unsafeChars.ReplaceAllString(t.Name(), "_"),
	}
	e.admin = zktest.ConnectT(t, e.servers)
	// The tests' digest users: the admin can clean up what an earlier run
	// (-count=2, or a long-lived ZK_SERVERS) left under a digest ACL;
	// containers outlive their last child for a while.
	for _, u := range testDigestUsers {
		require.NoError(t, e.admin.AddAuth("digest", []byte(u)))
	}
	require.NoError(t, zktest.DeleteTree(e.admin, e.root))
	// The tests' common parent, open to all: a test whose Client makes it
	// with a restricted ACL (TestIntegration_NewClientWithAuth's) would
	// otherwise lock the others out when it happens to run first.
	if _, err := e.admin.Create("/zklock-test", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		zktest.WaitNoEphemerals(t, e.admin, e.root, 10*time.Second)
		e.mu.Lock()
		clients := e.clients
		e.mu.Unlock()
		for _, c := range clients {
			c.Close()
		}
		for _, c := range clients { // nothing of a hold or a wait is left behind
			require.Eventually(t, func() bool { return followed(c) == 0 }, 5*time.Second, time.Millisecond,
				"a closed Client still follows nodes or parents: %s", zklock.Followed(c))
		}
		_ = zktest.DeleteTree(e.admin, e.root)
	})
	return e
}

// client connects a Client with a 10s session unless opts say otherwise.
func (e *env) client(opts ...zklock.Option) *zklock.Client {
	e.t.Helper()
	return e.clientTo(e.servers, opts...)
}

// clientTo is client connecting to other addresses of the test's servers,
// such as their TLS ports.
func (e *env) clientTo(servers []string, opts ...zklock.Option) *zklock.Client {
	e.t.Helper()
	c, err := zklock.Connect(servers, append([]zklock.Option{zklock.WithSessionTimeout(10 * time.Second)}, opts...)...)
	require.NoError(e.t, err)
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c
}

// mutex makes a Mutex on the test's root joined with name.
func (e *env) mutex(c *zklock.Client, name string, opts ...zklock.LockOption) *zklock.Mutex {
	e.t.Helper()
	m, err := zklock.NewMutex(c, e.root+name, opts...)
	require.NoError(e.t, err)
	return m
}

// children lists a node's children through the admin connection.
func (e *env) children(p string) []string {
	e.t.Helper()
	ch, _, err := e.admin.Children(p)
	if err == zk.ErrNoNode {
		return nil
	}
	require.NoError(e.t, err)
	return ch
}

// owner returns the session that owns the node at p, as the admin
// connection reads it: 0 for a persistent node, or one that does not
// exist.
func (e *env) owner(p string) int64 {
	e.t.Helper()
	ok, st, err := e.admin.Exists(p)
	require.NoError(e.t, err)
	if !ok {
		return 0
	}
	return st.EphemeralOwner
}

// create makes a persistent node and its missing parents.
func (e *env) create(p string) {
	e.t.Helper()
	require.NoError(e.t, zktest.CreatePath(e.admin, p))
}

// acquired is the outcome of an Acquire run in the background.
type acquired struct {
	ctx context.Context
	err error
	at  time.Time // when Acquire returned
}

// acquireAsync runs m.Acquire(ctx) on a goroutine; the test reads the
// outcome from the channel (never t.Fatal from the goroutine).
func acquireAsync(ctx context.Context, m *zklock.Mutex) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		c, err := m.Acquire(ctx)
		ch <- acquired{c, err, time.Now()}
	}()
	return ch
}

// await waits for an outcome, failing the test after d.
func await[T any](t *testing.T, ch <-chan T, d time.Duration) T {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(d):
		t.Fatalf("no outcome within %v", d)
		var zero T
		return zero
	}
}

// waitDone waits for ctx to end, failing the test after d.
func waitDone(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(d):
		t.Fatalf("context not done within %v", d)
	}
}

// waitParticipants waits until the lock has n queued nodes.
func waitParticipants(t *testing.T, m *zklock.Mutex, n int) []string {
	t.Helper()
	var got []string
	if !assert.Eventually(t, func() bool {
		p, err := m.Participants(context.Background())
		got = p
		return err == nil && len(p) == n
	}, 10*time.Second, 5*time.Millisecond) {
		p, err := m.Participants(context.Background()) // what is there now: got may still be written
		t.Fatalf("want %d participants, have %v (%v)", n, p, err)
	}
	return got
}

// waitState waits until the Client reports one of states.
func waitState(t *testing.T, c *zklock.Client, d time.Duration, states ...zklock.ConnectionState) {
	t.Helper()
	if !assert.Eventually(t, func() bool {
		s := c.State()
		for _, want := range states {
			if s == want {
				return true
			}
		}
		return false
	}, d, 5*time.Millisecond) {
		t.Fatalf("client state %v after %v, want one of %v", c.State(), d, states)
	}
}

// waitStates reads states from a Listen callback's channel until want has
// come in order, other states between them allowed (a loaded machine may
// add a suspension of its own), or fails after d.
func waitStates(t *testing.T, states <-chan zklock.ConnectionState, d time.Duration, want ...zklock.ConnectionState) {
	t.Helper()
	deadline := time.After(d)
	var seen []zklock.ConnectionState
	for len(want) > 0 {
		select {
		case s := <-states:
			seen = append(seen, s)
			if s == want[0] {
				want = want[1:]
			}
		case <-deadline:
			t.Fatalf("listener saw %v within %v; still waiting for %v in order", seen, d, want)
		}
	}
}

// faultConn wraps the real connection of a Client and injects failures the
// way a flaky network would: an operation that reached the server but whose
// response was lost, or one that failed before it got there. Every
// operation still runs against the real server.
type faultConn struct {
	zklock.ZKConn
	mu          sync.Mutex
	create      func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) // guarded by mu; nil passes through
	deleteFails int                                                                                                             // guarded by mu; deletes still to fail
	deleteLies  int                                                                                                             // guarded by mu; deletes still to report done without doing them
	listFails   int                                                                                                             // guarded by mu; children listings still to fail
	listFailErr error                                                                                                           // guarded by mu; what they fail with (nil: zk.ErrConnectionClosed)
	creates     atomic.Int32

	beforeCreate func(p string) // guarded by mu; nil does nothing
	beforeDelete func(p string) // guarded by mu; nil does nothing

	multi func(ctx context.Context, real zklock.ZKConn, ops ...any) ([]zk.MultiResponse, error) // guarded by mu; nil passes through
}

func (f *faultConn) Create(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	f.creates.Add(1)
	f.mu.Lock()
	hook, before := f.create, f.beforeCreate
	f.mu.Unlock()
	if before != nil {
		before(p)
	}
	if hook != nil {
		return hook(ctx, f.ZKConn, p, data, flags, acl)
	}
	return f.ZKConn.Create(ctx, p, data, flags, acl)
}

func (f *faultConn) Delete(ctx context.Context, p string, version int32) error {
	f.mu.Lock()
	before := f.beforeDelete
	f.mu.Unlock()
	if before != nil {
		before(p)
	}
	f.mu.Lock()
	fail, lie := f.deleteFails > 0, f.deleteLies > 0
	if fail {
		f.deleteFails--
	} else if lie {
		f.deleteLies--
	}
	f.mu.Unlock()
	switch {
	case fail:
		return zk.ErrConnectionClosed
	case lie:
		return nil
	}
	return f.ZKConn.Delete(ctx, p, version)
}

func (f *faultConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	f.mu.Lock()
	fail, failErr := f.listFails > 0, cmp.Or(f.listFailErr, zk.ErrConnectionClosed)
	if fail {
		f.listFails--
	}
	f.mu.Unlock()
	if fail {
		return nil, nil, failErr
	}
	return f.ZKConn.Children(ctx, p)
}

// Multi passes through, after the create hook's path check (a hook that
// must see every create of a path sees the guarded ones too), unless a
// multi hook is set.
func (f *faultConn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	f.mu.Lock()
	before, hook := f.beforeCreate, f.multi
	f.mu.Unlock()
	for _, op := range ops {
		if cr, ok := op.(*zk.CreateRequest); ok && before != nil {
			before(cr.Path)
		}
	}
	if hook != nil {
		return hook(ctx, f.ZKConn, ops...)
	}
	return f.ZKConn.Multi(ctx, ops...)
}

// setMulti sets the hook that every transaction goes through; nil passes
// through.
func (f *faultConn) setMulti(hook func(ctx context.Context, real zklock.ZKConn, ops ...any) ([]zk.MultiResponse, error)) {
	f.mu.Lock()
	f.multi = hook
	f.mu.Unlock()
}

// setBeforeCreate runs hook with the path of every create, plain or in a
// transaction, before it is sent.
func (f *faultConn) setBeforeCreate(hook func(p string)) {
	f.mu.Lock()
	f.beforeCreate = hook
	f.mu.Unlock()
}

func (f *faultConn) setCreate(hook func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error)) {
	f.mu.Lock()
	f.create = hook
	f.mu.Unlock()
}

// faultClient connects a Client whose connection f wraps.
func (e *env) faultClient(opts ...zklock.Option) (*zklock.Client, *faultConn) {
	f := &faultConn{}
	c := e.client(append(opts, zklock.WithConnWrapper(func(real zklock.ZKConn) zklock.ZKConn {
		f.ZKConn = real
		return f
	}))...)
	return c, f
}

// lostResponse creates the node for real, then reports a connection loss,
// once; later creates pass through.
func lostResponse(f *faultConn, lost error) func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return createVia(f, nil, lost)
}

// createVia creates the node through other, another session's connection,
// as a node of that session (nil: through the Client's own connection),
// and reports lost instead of the node if lost is not nil. Once a node is
// created, later creates pass through.
func createVia(f *faultConn, other *zk.Conn, lost error) func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return func(ctx context.Context, real zklock.ZKConn, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
		var created string
		var err error
		if other != nil {
			created, err = other.Create(p, data, flags, acl)
		} else {
			created, err = real.Create(ctx, p, data, flags, acl)
		}
		if err != nil {
			return "", err
		}
		f.setCreate(nil)
		if lost != nil {
			return "", lost
		}
		return created, nil
	}
}

// brokenPipe is what go-zookeeper hands a request whose write fails: the
// socket's own error, not zk.ErrConnectionClosed.
var brokenPipe = &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}

type syncWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// noPanic runs f on the caller's goroutine and turns a panic into a test
// error naming what was called. It reports whether f returned normally.
func noPanic(t *testing.T, what string, f func()) bool {
	t.Helper()
	if r := catchPanic(f); r != nil {
		t.Errorf("%s panicked: %v", what, r)
		return false
	}
	return true
}

// catchPanic runs f and returns what it panicked with, nil if it returned.
func catchPanic(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// noPanicWithin runs f on a goroutine of its own and turns a panic, or f
// not returning within d, into a test error naming what was called. It
// reports whether f returned normally; only then may the caller read what f
// wrote.
func noPanicWithin(t *testing.T, what string, d time.Duration, f func()) bool {
	t.Helper()
	done := make(chan any, 1)
	go func() { done <- catchPanic(f) }()
	select {
	case r := <-done:
		if r != nil {
			t.Errorf("%s panicked: %v", what, r)
			return false
		}
		return true
	case <-time.After(d):
		t.Errorf("%s did not return within %v", what, d)
		return false
	}
}

// sentinels are the package's errors that an error about bad input or a
// misused value may wrap.
var sentinels = []error{zklock.ErrInvalidArgument, zklock.ErrClosed, zklock.ErrNotHeld, zklock.ErrInvalidPath, zklock.ErrLockLost}

func isOneOf(err error, targets ...error) bool {
	for _, s := range targets {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// leased is the outcome of a Semaphore.Acquire run in the background.
type leased struct {
	lease *zklock.Lease
	err   error
}

// leaseAsync runs s.Acquire(ctx) on a goroutine; the test reads the
// outcome from the channel.
func leaseAsync(ctx context.Context, s *zklock.Semaphore) <-chan leased {
	ch := make(chan leased, 1)
	go func() {
		l, err := s.Acquire(ctx)
		ch <- leased{l, err}
	}()
	return ch
}

// waitChildren waits until the node p has n children.
func waitChildren(t *testing.T, e *env, p string, n int) {
	t.Helper()
	if !assert.Eventually(t, func() bool {
		ch, _, err := e.admin.Children(p)
		return err == nil && len(ch) == n
	}, 10*time.Second, 5*time.Millisecond) {
		ch, _, err := e.admin.Children(p)
		t.Fatalf("want %d children of %s, have %v (%v)", n, p, ch, err)
	}
}

// laggingEnsemble is a 3-node ensemble with local sessions (a session is
// opened by its server alone, and made global by its first ephemeral
// create) whose follower f can be made to lag behind the leader while it
// goes on serving its clients (zktest.Lagger): what a client on f sees
// then is what the leader and g, the other follower, saw a lag before.
type laggingEnsemble struct {
	lagger       zktest.Lagger
	servers      []string
	leader, f, g int // indexes in servers
}

// laggingSyncLimit, in ticks of the default 200ms, keeps a follower that
// lags by a second or two (a round trip of two lags) in the ensemble, with
// room to spare on a loaded machine.
const laggingSyncLimit = 50

// startLaggingEnsemble starts a laggingEnsemble for t; f and g are the
// followers, chosen once the ensemble has a leader.
func startLaggingEnsemble(t *testing.T) *laggingEnsemble {
	t.Helper()
	c := zktest.StartT(t, zktest.Config{Size: 3, LocalSessions: true, Laggable: true, SyncLimit: laggingSyncLimit})
	lg, ok := c.(zktest.Lagger)
	require.True(t, ok, "a Laggable cluster is a Lagger")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := zktest.Leader(ctx, c)
	require.NoError(t, err)
	return &laggingEnsemble{lagger: lg, servers: c.Servers(), leader: leader, f: (leader + 1) % 3, g: (leader + 2) % 3}
}

// upToDate returns the addresses of the leader and g, the servers that
// do not lag.
func (le *laggingEnsemble) upToDate() []string {
	return []string{le.servers[le.leader], le.servers[le.g]}
}

// lag makes f lag by d (0: no more).
func (le *laggingEnsemble) lag(t *testing.T, d time.Duration) {
	t.Helper()
	require.NoError(t, le.lagger.Lag(le.f, d))
}

// onF connects to f alone, to read what f shows (reads are served by the
// server a session is on).
func (le *laggingEnsemble) onF(t *testing.T) *zk.Conn {
	t.Helper()
	return zktest.ConnectT(t, le.servers[le.f:le.f+1])
}

// waitShown waits until conn's server shows the node at p, or no longer
// does (shown false).
func waitShown(t *testing.T, conn *zk.Conn, p string, shown bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, _, err := conn.Exists(p)
		return err == nil && ok == shown
	}, 10*time.Second, 5*time.Millisecond, "want %s shown %v by %s", p, shown, conn.Server())
}

// dialPlan routes a Client's connections to the servers a test chooses,
// whatever server go-zookeeper asks for, each through a proxy of its own
// (for cuts): a dial takes the next server of the plan, and the last one
// for good; while there is no plan, dials wait, as a connect that hangs
// in an outage does, until the test gives one or ends.
type dialPlan struct {
	proxies []*zktest.Proxy
	done    chan struct{} // closed when the test ends

	mu      sync.Mutex    // guards the fields below
	next    []int         // the servers of the next dials
	planned chan struct{} // closed by route; replaced by hold
	dialled []int         // the servers dialled, in order
}

// newDialPlan returns a dialPlan to servers, with no plan yet.
func newDialPlan(t *testing.T, servers []string) *dialPlan {
	t.Helper()
	d := &dialPlan{done: make(chan struct{}), planned: make(chan struct{})}
	for _, s := range servers {
		p, err := zktest.NewProxy(s)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		d.proxies = append(d.proxies, p)
	}
	t.Cleanup(func() { close(d.done) }) // first: the Clients' Close need their dials to end
	return d
}

// route makes the next dials go to servers, in order, the last one for
// good.
func (d *dialPlan) route(servers ...int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next = servers
	select {
	case <-d.planned:
	default:
		close(d.planned)
	}
}

// hold makes the next dials wait for a route.
func (d *dialPlan) hold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next = nil
	select {
	case <-d.planned:
		d.planned = make(chan struct{})
	default:
	}
}

// Dial is a zk.Dialer that follows the plan.
func (d *dialPlan) Dial(network, _ string, timeout time.Duration) (net.Conn, error) {
	for {
		d.mu.Lock()
		next, planned := d.next, d.planned
		if len(next) > 0 {
			i := next[0]
			if len(next) > 1 {
				d.next = next[1:]
			}
			d.dialled = append(d.dialled, i)
			d.mu.Unlock()
			return net.DialTimeout(network, d.proxies[i].Addr(), timeout)
		}
		d.mu.Unlock()
		select {
		case <-planned:
		case <-d.done:
			return nil, errors.New("dialPlan: the test is over")
		}
	}
}

// dials returns the servers dialled so far, in order.
func (d *dialPlan) dials() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dialled)
}
