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

// Each node leads once, never two at once; no participant is left once
// the sessions are closed.
func TestIntegration_Election(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		assert.Equal(t, 1, strings.Count(text, name+" leads"), name)
	}
	assert.Contains(t, text, "done: three nodes led in turn, one at a time")

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	el, err := zklock.NewElection(c, electionPath, "test")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		ps, err := el.Participants(context.Background())
		return err == nil && len(ps) == 0
	}, 5*time.Second, 20*time.Millisecond, "a participant is left under %s", electionPath)
}
