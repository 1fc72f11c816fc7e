package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The events happen in order: alice holds, bob asks, alice releases, bob
// holds; alice's hold ends by her release.
func TestIntegration_Revoke(t *testing.T) {
	text := exampleenv.RunT(t, run, root)
	node := `/examples/revoke/lock/_c_[0-9a-f-]{36}-lock-\d{10}`
	assert.Regexp(t, `^1\. alice holds the lock, revocable, with node `+node+`
2\. bob   finds the lock taken \(ErrLocked\); asks the holder of `+node+` to release, and waits
3\. alice is asked to release: finishes her work and releases
4\. bob   holds the lock, with node `+node+`
5\. alice sees her hold's context ended: zklock: lock released
$`, text)
}
