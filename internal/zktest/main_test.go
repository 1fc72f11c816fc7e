package zktest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the harness's own tests under Run and a goroutine-leak
// check, as leakcheck.Main does for the other test binaries (which this
// package's tests cannot import: it imports this package).
func TestMain(m *testing.M) {
	ignore := goleak.IgnoreCurrent()
	code := Run(m)
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintf(os.Stderr, "zktest: goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
