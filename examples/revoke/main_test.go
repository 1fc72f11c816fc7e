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

// The events happen in order: alice holds, bob asks, alice releases, bob
// holds; alice's hold ends by her release.
func TestIntegration_Revoke(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	node := `/examples/revoke/lock/_c_[0-9a-f-]{36}-lock-\d{10}`
	assert.Regexp(t, `^1\. alice holds the lock, revocable, with node `+node+`
2\. bob   finds the lock taken \(ErrLocked\); asks the holder of `+node+` to release, and waits
3\. alice is asked to release: finishes her work and releases
4\. bob   holds the lock, with node `+node+`
5\. alice sees her hold's context ended: zklock: lock released
$`, text)

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	exists, _, err := c.Exists(context.Background(), root)
	require.NoError(t, err)
	assert.False(t, exists, "the example left %s behind", root)
}
