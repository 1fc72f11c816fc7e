package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// sharedConfig is the configuration of the server Shared returns.
var sharedConfig = Config{
	TickTime:          200 * time.Millisecond,
	MaxSessionTimeout: 60 * time.Second,
}

var shared struct {
	mu      sync.Mutex
	inMain  bool // Main is running the tests
	started bool // a start was attempted; cluster and err hold its result
	cluster Cluster
	err     error
}

// Main runs a test binary's tests: call it from TestMain as
//
//	func TestMain(m *testing.M) { zktest.Main(m) }
//
// It runs m.Run, closes the shared cluster if a test started it with
// Shared, and exits the process with the resulting code. zklock's own
// test binaries use leakcheck.Main, which adds a goroutine-leak check.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit: it returns the exit code, for a TestMain
// that has clean-up of its own to do first.
func Run(m *testing.M) int {
	return runMain(m)
}

func runMain(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	c := shared.cluster
	shared.inMain, shared.started, shared.cluster, shared.err = false, false, nil, nil
	shared.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "zktest: close shared cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the cluster shared by all tests of the binary: a
// single server (TickTime 200ms, MaxSessionTimeout 60s, the default
// container check interval), or the ZK_SERVERS ensemble if set. The first
// call starts it; later calls return the same cluster, or fail the same
// way. It is safe for concurrent use. It fails t fatally if the cluster
// cannot start or if TestMain does not call Main, which closes it.
//
// Tests must not Stop, Start, Kill or Close the shared cluster, and should
// work under a znode path of their own.
func Shared(t testing.TB) Cluster {
	t.Helper()
	c, err := sharedCluster()
	if err != nil {
		t.Fatalf("zktest: shared cluster: %v", err)
	}
	return c
}

func sharedCluster() (Cluster, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		return nil, errors.New("zktest: Shared needs TestMain to call zktest.Main(m), which closes the shared cluster")
	}
	if !shared.started {
		shared.started = true
		ctx, cancel := context.WithTimeout(context.Background(), startTTimeout)
		defer cancel()
		shared.cluster, shared.err = Start(ctx, sharedConfig)
	}
	return shared.cluster, shared.err
}
