package zktest

import (
	"os"
	"testing"

	izk "github.com/zklock/zklock/internal/zktest"
)

// Main runs a test binary's tests and closes the shared cluster after
// them, if a test started it; it exits with the tests' result. Call it
// from TestMain:
//
//	func TestMain(m *testing.M) { zktest.Main(m) }
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit: it returns the exit code, for a TestMain
// that has work of its own to do after the tests, such as a leak check.
func Run(m *testing.M) int {
	return izk.Run(m)
}

// Shared returns the cluster that the tests of the binary share: one
// server (tick time 200ms, session timeouts from 400ms to 60s), started by
// the first call, or the ensemble ZK_SERVERS names. Later calls return
// the same cluster. It fails t at once if the server cannot start, or if
// TestMain does not call Main, which closes it.
//
// The shared cluster belongs to every test: its Stop, Restart and Kill
// return ErrUnsupported, and Close does nothing. Give each test a root of
// its own ([Cluster.Root]).
func Shared(t testing.TB) *Cluster {
	t.Helper()
	return &Cluster{c: izk.Shared(t), shared: true}
}
