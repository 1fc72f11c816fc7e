package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// Each session holds the lock three times, and never both at once; no
// lock node is left once the sessions are closed.
func TestIntegration_Mutex(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	assert.Equal(t, 3, strings.Count(text, "alice holds the lock"))
	assert.Equal(t, 3, strings.Count(text, "bob   holds the lock"))
	assert.Contains(t, text, "done: the two sessions took turns, never both inside")

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	m, err := zklock.NewMutex(c, "/examples/mutex")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		nodes, err := m.Participants(context.Background())
		return err == nil && len(nodes) == 0
	}, 5*time.Second, 20*time.Millisecond, "a lock node is left under /examples/mutex")
}
