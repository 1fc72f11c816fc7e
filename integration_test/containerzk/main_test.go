package containerzk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/integration_test/containerzk"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zktest"
)

// backend is the container backend, registered with zktest so that
// zktest.Start and zktest.Shared use it before the local process backend.
var backend *containerzk.Backend

// availableErr is the result of the first Available call, made (and the
// image built, if needed) in TestMain before any test runs.
var availableErr error

func TestMain(m *testing.M) {
	backend = containerzk.Register()
	// Build the image, if needed, before the tests: zktest bounds a
	// backend's Available call by 30s, less than a build takes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	start := time.Now()
	availableErr = backend.Available(ctx)
	cancel()
	if availableErr != nil {
		fmt.Fprintf(os.Stderr, "containerzk: container backend unavailable (after %v): %v\n",
			time.Since(start).Round(time.Millisecond), availableErr)
	}
	leakcheck.Main(m)
}

// requireBackend skips t if no Docker engine answers, and fails it if the
// engine answers but the image is missing and cannot be built.
func requireBackend(t *testing.T) {
	t.Helper()
	if availableErr == nil {
		return
	}
	if errors.Is(availableErr, containerzk.ErrNoDocker) {
		t.Skipf("no Docker engine: %v", availableErr)
	}
	t.Fatalf("container backend unavailable: %v", availableErr)
}

// startCluster starts a cluster on the container backend and removes it
// when t ends, logging the servers' last log lines if t failed.
func startCluster(t *testing.T, cfg zktest.Config) *containerzk.Cluster {
	t.Helper()
	requireBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := backend.StartCluster(ctx, cfg)
	require.NoError(t, err)
	t.Logf("%d-server container cluster serving after %v: %v", len(c.Servers()),
		time.Since(start).Round(time.Millisecond), c.Servers())
	t.Cleanup(func() {
		if t.Failed() {
			for i := range c.Servers() {
				if logs, err := c.Logs(i, 60); err == nil {
					t.Logf("server %d log tail:\n%s", i, logs)
				}
			}
		}
		require.NoError(t, c.Close())
	})
	return c
}

// client is a go-zk connection whose state changes are recorded.
type client struct {
	*zk.Conn
	mu     sync.Mutex
	cond   *sync.Cond
	states []zk.State
}

// connect opens a go-zk session to servers and waits until it has one.
func connect(t *testing.T, servers []string, sessionTimeout time.Duration) *client {
	t.Helper()
	c := &client{}
	c.cond = sync.NewCond(&c.mu)
	conn, _, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(quietLogger{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			c.mu.Lock()
			c.states = append(c.states, ev.State)
			c.cond.Broadcast()
			c.mu.Unlock()
		}))
	require.NoError(t, err)
	c.Conn = conn
	t.Cleanup(conn.Close)
	c.waitState(t, zk.StateHasSession, 30*time.Second)
	return c
}

// waitState waits until the connection has reported state (since the last
// call), failing t after timeout.
func (c *client) waitState(t *testing.T, want zk.State, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for i, s := range c.states {
			if s == want {
				c.states = c.states[i+1:]
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v within %v (states seen: %v, now %v)", want, timeout, c.states, c.State())
		}
		c.cond.Wait()
	}
}

// quietLogger drops go-zk's log lines (reconnection chatter).
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
