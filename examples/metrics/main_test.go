package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// The example checks its own metrics against what it did (run fails
// otherwise); its output is the exposition, labelled by recipe and
// outcome, never by path; nothing is left in ZooKeeper.
func TestIntegration_Metrics(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	assert.Contains(t, text, "# TYPE zklock_acquire_wait_seconds histogram\n")
	assert.Contains(t, text, `zklock_acquire_wait_seconds_count{outcome="timeout",recipe="mutex"} 1`)
	assert.Contains(t, text, `zklock_hold_seconds_count{outcome="deleted",recipe="mutex"} 1`)
	assert.NotContains(t, text, "path=", "no series per lock")

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	exists, _, err := c.Exists(context.Background(), root)
	require.NoError(t, err)
	assert.False(t, exists, "the example left %s behind", root)
}
