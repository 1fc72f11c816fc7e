// Package leakcheck is the TestMain of zklock's own test binaries: the
// public test kit's Run (which closes the shared ZooKeeper cluster) under
// a goroutine-leak check. It is apart from the kit so that the kit
// (package zktest), which users import, pulls in no leak checker.
package leakcheck

import (
	"fmt"
	"os"
	"testing"

	"github.com/zklock/zklock/zktest"
	"go.uber.org/goleak"
)

// Main runs a test binary's tests: call it from TestMain as
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
//
// It runs zktest.Run(m) (the tests, then closing the shared cluster if a
// test started it with zktest.Shared), and then, if they passed, fails the
// run if goroutines that did not exist before are still running (goleak;
// go-zk connections are not exempt: a connection a test forgot to close is
// a leak). It exits the process with the resulting code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit: it returns the exit code, for a TestMain
// that has clean-up of its own to do first.
func Run(m *testing.M) int {
	ignore := goleak.IgnoreCurrent()
	code := zktest.Run(m)
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintf(os.Stderr, "zktest: goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	return code
}
