package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// Every caller is served, never more than the limit at once, and no lease
// is left behind.
func TestIntegration_Semaphore(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	assert.Equal(t, callers, strings.Count(text, " enters with lease lease-"))
	assert.Contains(t, text, "12 calls served; max concurrency = 3 ≤ limit 3; leases left: 0")
	for _, n := range []string{"4 inside", "5 inside"} {
		assert.NotContains(t, text, n)
	}

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	exists, _, err := c.Exists(context.Background(), semPath)
	require.NoError(t, err)
	assert.False(t, exists, "the example left %s behind", semPath)
}
