package zktest

import "testing"

// TestMain runs the harness's own tests under Main, so its leak check
// covers the harness.
func TestMain(m *testing.M) { Main(m) }
