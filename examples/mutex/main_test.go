package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// Each session holds the lock three times, and never both at once; no
// lock node is left once the sessions are closed.
func TestIntegration_Mutex(t *testing.T) {
	text := exampleenv.RunT(t, run, "")
	assert.Equal(t, 3, strings.Count(text, "alice holds the lock"))
	assert.Equal(t, 3, strings.Count(text, "bob   holds the lock"))
	assert.Contains(t, text, "done: the two sessions took turns, never both inside")

	c, err := zklock.Connect(zktest.Shared(t).Servers())
	require.NoError(t, err)
	defer c.Close()
	m, err := zklock.NewMutex(c, "/examples/mutex")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		nodes, err := m.Participants(context.Background())
		return err == nil && len(nodes) == 0
	}, 5*time.Second, 20*time.Millisecond, "a lock node is left under /examples/mutex")
}
