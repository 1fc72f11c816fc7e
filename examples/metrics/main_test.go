package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The example checks its own metrics against what it did (run fails
// otherwise); its output is the exposition, labelled by recipe and
// outcome, never by path.
func TestIntegration_Metrics(t *testing.T) {
	text := exampleenv.RunT(t, run, root)
	assert.Contains(t, text, "# TYPE zklock_acquire_wait_seconds histogram\n")
	assert.Contains(t, text, `zklock_acquire_wait_seconds_count{outcome="timeout",recipe="mutex"} 1`)
	assert.Contains(t, text, `zklock_hold_seconds_count{outcome="deleted",recipe="mutex"} 1`)
	assert.NotContains(t, text, "path=", "no series per lock")
}
