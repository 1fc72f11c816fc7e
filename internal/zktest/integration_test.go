package zktest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// recorder records a connection's session events, for use with
// zk.WithEventCallback.
type recorder struct {
	mu      sync.Mutex
	events  []zk.Event
	changed chan struct{} // closed and replaced on every event
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) callback(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
}

// mark returns the position of the next event.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *recorder) states(from int) []zk.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []zk.State
	for _, ev := range r.events[from:] {
		s = append(s, ev.State)
	}
	return s
}

// waitFor waits up to timeout for an event with state at or after
// position from, and returns the position after it.
func (r *recorder) waitFor(t *testing.T, from int, state zk.State, timeout time.Duration) int {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if r.events[i].State == state {
				r.mu.Unlock()
				return i + 1
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %v within %v; states since: %v", state, timeout, r.states(from))
		}
	}
}

func mustCreate(t *testing.T, conn *zk.Conn, path string, data []byte, flags int32) {
	t.Helper()
	if _, err := conn.Create(path, data, flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

func mustGet(t *testing.T, conn *zk.Conn, path, want string) {
	t.Helper()
	got, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if string(got) != want {
		t.Fatalf("get %s = %q, want %q", path, got, want)
	}
}

// testRoot returns a fresh znode path for t on a shared server.
func testRoot(t *testing.T, conn *zk.Conn) string {
	t.Helper()
	root := "/zktest-" + strings.ReplaceAll(t.Name(), "/", "-")
	if err := DeleteTree(conn, root); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, conn, root, nil, 0)
	t.Cleanup(func() {
		if err := DeleteTree(conn, root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return root
}

func needProcess(t *testing.T, c Cluster) {
	t.Helper()
	if c.Backend() == "external" {
		t.Skip("needs servers the harness controls; ZK_SERVERS is set")
	}
}

func TestIntegration_SharedAndTreeHelpers(t *testing.T) {
	c := Shared(t)
	if Shared(t) != c {
		t.Fatal("Shared returned a different cluster on the second call")
	}
	if len(c.Servers()) == 0 {
		t.Fatal("no servers")
	}
	conn := ConnectT(t, c.Servers())
	root := testRoot(t, conn)

	if got, err := Ephemerals(conn, root+"/missing"); err != nil || len(got) != 0 {
		t.Fatalf("Ephemerals(missing) = %v, %v; want none", got, err)
	}
	mustCreate(t, conn, root+"/a", []byte("x"), 0)
	mustCreate(t, conn, root+"/a/b", nil, 0)
	other := ConnectT(t, c.Servers())
	mustCreate(t, other, root+"/a/b/e1", nil, zk.FlagEphemeral)
	mustCreate(t, other, root+"/e0", nil, zk.FlagEphemeral)
	got, err := Ephemerals(conn, root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{root + "/a/b/e1", root + "/e0"}; !slices.Equal(got, want) {
		t.Fatalf("Ephemerals = %v, want %v", got, want)
	}

	other.Close()
	WaitNoEphemerals(t, conn, root, 10*time.Second)
	mustGet(t, conn, root+"/a", "x")

	if err := DeleteTree(conn, root+"/a"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := conn.Exists(root + "/a"); err != nil || ok {
		t.Fatalf("after DeleteTree: exists = %v, %v", ok, err)
	}
	if err := DeleteTree(conn, root+"/a"); err != nil {
		t.Fatalf("DeleteTree of a missing node: %v", err)
	}
}

func TestIntegration_ProcessStandalone(t *testing.T) {
	c := StartT(t, Config{})
	needProcess(t, c)
	if c.Backend() != "process" {
		t.Logf("backend %s", c.Backend())
	}
	servers := c.Servers()
	if len(servers) != 1 {
		t.Fatalf("Servers() = %v, want one", servers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A single server is an ensemble of one (see ZooCfg).
	if mode, err := Mode(ctx, servers[0]); err != nil || mode != "leader" {
		t.Fatalf("Mode = %q, %v; want leader", mode, err)
	}

	rec := newRecorder()
	conn := ConnectT(t, servers, zk.WithEventCallback(rec.callback))
	mustCreate(t, conn, "/a", []byte("x"), 0)
	mustGet(t, conn, "/a", "x")

	m := rec.mark()
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(0); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	m = rec.waitFor(t, m, zk.StateDisconnected, 10*time.Second)
	if err := c.Start(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(0); err == nil {
		t.Fatal("Start of a running server: no error")
	}
	rec.waitFor(t, m, zk.StateHasSession, 20*time.Second)
	mustGet(t, conn, "/a", "x")
	if _, err := conn.Set("/a", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}

	m = rec.mark()
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := WaitStopped(ctx, servers[0]); err != nil {
		t.Fatal(err)
	}
	m = rec.waitFor(t, m, zk.StateDisconnected, 10*time.Second)
	if err := c.Kill(0); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if err := c.Start(0); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, m, zk.StateHasSession, 20*time.Second)
	mustGet(t, conn, "/a", "y")

	for _, i := range []int{-1, 1} {
		if err := c.Stop(i); err == nil {
			t.Errorf("Stop(%d): no error", i)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := WaitStopped(ctx, servers[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(0); err == nil {
		t.Fatal("Start after Close: no error")
	}
}

func TestIntegration_DataDir(t *testing.T) {
	parent := t.TempDir()
	c := StartT(t, Config{DataDir: parent})
	conn := ConnectT(t, c.Servers())
	mustCreate(t, conn, "/datadir", nil, 0)
	logs, err := filepath.Glob(filepath.Join(parent, tempDirPrefix+"*", "server1", "data", "version-2", "log.*"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no transaction log under %s: %v, %v", parent, logs, err)
	}
	if err := conn.Delete("/datadir", -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) > 0 {
		t.Errorf("Close left %v in DataDir", left)
	}
}

func TestIntegration_Ensemble(t *testing.T) {
	c := StartT(t, Config{Size: 3})
	servers := c.Servers()
	if len(servers) != 3 {
		t.Fatalf("Servers() = %v, want three", servers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := -1
	for i, s := range servers {
		mode, err := Mode(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if mode == "leader" {
			leader = i
		} else if mode != "follower" {
			t.Fatalf("server %d mode %q", i, mode)
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}

	conn0 := ConnectT(t, servers[:1])
	conn2 := ConnectT(t, servers[2:])
	mustCreate(t, conn0, "/e", []byte("hello"), 0)
	if _, err := conn2.Sync("/e"); err != nil {
		t.Fatal(err)
	}
	mustGet(t, conn2, "/e", "hello")

	// Stop the leader: the others elect a new one and keep serving.
	if err := c.Stop(leader); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for i, s := range servers {
		if i != leader {
			rest = append(rest, s)
			if err := WaitServing(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	conn := ConnectT(t, rest)
	if _, err := conn.Set("/e", []byte("after"), -1); err != nil {
		t.Fatal(err)
	}

	if err := c.Start(leader); err != nil {
		t.Fatal(err)
	}
	back := ConnectT(t, servers[leader:leader+1])
	if _, err := back.Sync("/e"); err != nil {
		t.Fatal(err)
	}
	mustGet(t, back, "/e", "after")

	// Restart the whole ensemble, one server at a time: the first Start
	// cannot wait for a quorum.
	for i := range servers {
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range servers {
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range servers {
		if err := WaitServing(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, ConnectT(t, servers), "/e", "after")
}

func TestIntegration_ContainerReaping(t *testing.T) {
	c := StartT(t, Config{ContainerCheckInterval: 100 * time.Millisecond})
	conn := ConnectT(t, c.Servers())
	if _, err := conn.CreateContainer("/c", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, conn, "/c/child", nil, 0)
	if err := conn.Delete("/c/child", -1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, _, err := conn.Exists("/c")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("empty container /c not reaped within 15s")
		}
		time.Sleep(pollInterval)
	}
}

func TestIntegration_ProxyShortPauseKeepsSession(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	f := NewFaultsT(t, c.Servers())
	rec := newRecorder()
	// go-zk notices silence after 2/3 of the session timeout and, with one
	// server, redials after a 1s back-off: the session must outlive both.
	conn := ConnectTimeoutT(t, c.Servers(), 8*time.Second, zk.WithDialer(f.Dial), zk.WithEventCallback(rec.callback))
	root := testRoot(t, conn)
	sid := conn.SessionID()

	m := rec.mark()
	f.Pause()
	m2 := rec.waitFor(t, m, zk.StateDisconnected, 15*time.Second)
	f.Resume()
	rec.waitFor(t, m2, zk.StateHasSession, 15*time.Second)
	if slices.Contains(rec.states(m), zk.StateExpired) {
		t.Fatalf("session expired: %v", rec.states(m))
	}
	if got := conn.SessionID(); got != sid {
		t.Fatalf("SessionID = %#x after a short pause, want %#x", got, sid)
	}
	mustCreate(t, conn, root+"/after", nil, 0)
}

func TestIntegration_ProxyLongPauseExpiresSession(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	f := NewFaultsT(t, c.Servers())
	direct := ConnectT(t, c.Servers())
	root := testRoot(t, direct)
	rec := newRecorder()
	conn := ConnectTimeoutT(t, c.Servers(), 1500*time.Millisecond, zk.WithDialer(f.Dial), zk.WithEventCallback(rec.callback))
	sid := conn.SessionID()
	mustCreate(t, conn, root+"/eph", nil, zk.FlagEphemeral)

	m := rec.mark()
	f.Pause()
	rec.waitFor(t, m, zk.StateDisconnected, 10*time.Second)
	// The server has expired the session once its ephemeral node is gone.
	WaitNoEphemerals(t, direct, root, 20*time.Second)
	if t.Failed() {
		t.FailNow()
	}
	f.Resume()
	m2 := rec.waitFor(t, m, zk.StateExpired, 20*time.Second)
	rec.waitFor(t, m2, zk.StateHasSession, 20*time.Second)
	if got := conn.SessionID(); got == sid || got == 0 {
		t.Fatalf("SessionID = %#x after expiry, want a new one (old %#x)", got, sid)
	}
	mustCreate(t, conn, root+"/eph", nil, zk.FlagEphemeral)
}

func TestIntegration_ProxyCut(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	f := NewFaultsT(t, c.Servers())
	rec := newRecorder()
	conn := ConnectT(t, c.Servers(), zk.WithDialer(f.Dial), zk.WithEventCallback(rec.callback))
	root := testRoot(t, conn)
	sid := conn.SessionID()

	m := rec.mark()
	f.Cut()
	// Well before go-zk's read timeout (2/3 of 10s) would notice silence.
	m = rec.waitFor(t, m, zk.StateDisconnected, 3*time.Second)
	rec.waitFor(t, m, zk.StateHasSession, 15*time.Second)
	if got := conn.SessionID(); got != sid {
		t.Fatalf("SessionID = %#x after Cut, want %#x", got, sid)
	}
	mustCreate(t, conn, root+"/after", nil, 0)
}

func TestIntegration_ExternalBackend(t *testing.T) {
	c := Shared(t)
	t.Setenv(serversEnv, strings.Join(c.Servers(), ","))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ext, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	if ext.Backend() != "external" || !slices.Equal(ext.Servers(), c.Servers()) {
		t.Fatalf("Backend %s, Servers %v", ext.Backend(), ext.Servers())
	}
	for name, f := range map[string]func(int) error{"Stop": ext.Stop, "Start": ext.Start, "Kill": ext.Kill} {
		if err := f(0); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s = %v, want ErrUnsupported", name, err)
		}
	}
	for _, cfg := range []Config{{Size: 3}, {ContainerCheckInterval: time.Second}, {DataDir: t.TempDir()}, {Isolatable: true}} {
		if _, err := Start(ctx, cfg); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Start(%+v) = %v, want ErrUnsupported", cfg, err)
		}
	}
	t.Run("StartT skips", func(t *testing.T) {
		StartT(t, Config{Size: 3})
		t.Error("StartT did not skip")
	})
}

// fakeBackend is a registered backend for TestIntegration_RegisteredBackends.
type fakeBackend struct {
	name     string
	avail    error
	startErr error
	started  int
}

type fakeCluster struct{ externalCluster }

func (*fakeCluster) Backend() string { return "fake" }

func (b *fakeBackend) Name() string                        { return b.name }
func (b *fakeBackend) Available(ctx context.Context) error { return b.avail }
func (b *fakeBackend) Start(ctx context.Context, cfg Config) (Cluster, error) {
	b.started++
	if b.startErr != nil {
		return nil, b.startErr
	}
	return &fakeCluster{}, nil
}

// clearRegistry empties the backend registry for t's test and restores it
// when the test ends.
func clearRegistry(t *testing.T) {
	t.Helper()
	registry.mu.Lock()
	saved := registry.backends
	registry.backends = nil
	registry.mu.Unlock()
	t.Cleanup(func() {
		registry.mu.Lock()
		registry.backends = saved
		registry.mu.Unlock()
	})
}

func TestIntegration_RegisteredBackends(t *testing.T) {
	if len(externalServers()) > 0 {
		t.Skip("ZK_SERVERS is set")
	}
	clearRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	down := &fakeBackend{name: "down", avail: errors.New("no docker")}
	broken := &fakeBackend{name: "broken", startErr: fmt.Errorf("pull failed\nsecond line")}
	RegisterBackend(down)
	RegisterBackend(broken)
	c, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Backend() != "process" || down.started != 0 || broken.started != 1 {
		t.Fatalf("backend %s, starts down=%d broken=%d; want a process fallback after one broken start",
			c.Backend(), down.started, broken.started)
	}

	ok := &fakeBackend{name: "fake"}
	RegisterBackend(ok)
	c2, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Backend() != "fake" || ok.started != 1 {
		t.Fatalf("backend %s, fake starts %d; want the registered backend", c2.Backend(), ok.started)
	}
}

func TestIntegration_FaultsLeftPaused(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	start := time.Now()
	t.Run("paused at end", func(t *testing.T) {
		f := NewFaultsT(t, c.Servers())
		rec := newRecorder()
		ConnectTimeoutT(t, c.Servers(), 1500*time.Millisecond, zk.WithDialer(f.Dial), zk.WithEventCallback(rec.callback))
		m := rec.mark()
		f.Pause()
		m = rec.waitFor(t, m, zk.StateDisconnected, 10*time.Second)
		// Redialled: now in its handshake, through the paused proxy.
		rec.waitFor(t, m, zk.StateConnected, 10*time.Second)
	})
	// Without the resume registered by Pause, closing the connection
	// would wait out go-zk's 10s handshake timeout.
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("test with a paused proxy took %v to clean up", d)
	}
}
