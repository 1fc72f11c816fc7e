package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// Bob's token is newer than alice's, both of alice's stale writes are
// rejected, and the store keeps bob's value; nothing is left in ZooKeeper.
func TestIntegration_Fencing(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	alice := regexp.MustCompile(`alice: holds the lock, fencing token (\d+)`).FindStringSubmatch(text)
	bob := regexp.MustCompile(`bob:   holds the lock once alice's session expired, fencing token (\d+)`).FindStringSubmatch(text)
	require.NotNil(t, alice)
	require.NotNil(t, bob)
	a, _ := strconv.ParseInt(alice[1], 10, 64)
	b, _ := strconv.ParseInt(bob[1], 10, 64)
	assert.Greater(t, b, a, "tokens increase from holder to holder")

	assert.Contains(t, text, "alice: guarded write (Hold.Multi: check on her lock node + set) REJECTED, lock lost: ")
	assert.Contains(t, text, "alice: fenced write REJECTED by the store: write \"alice-2\" with token "+alice[1]+": stale fencing token (the store has seen "+bob[1]+")")
	assert.Contains(t, text, "alice: her hold's context says: lost=true")
	assert.Contains(t, text, `store: "`+bob[1]+` bob-1"`)

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	exists, _, err := c.Exists(context.Background(), root)
	require.NoError(t, err)
	assert.False(t, exists, "the example left %s behind", root)
}
