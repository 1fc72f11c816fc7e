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

// Every transfer completes in both directions, the total is conserved,
// and, since as many go each way, both balances end where they began.
func TestIntegration_MultiLock(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	want := strconv.Itoa(2 * sessions * transfers)
	assert.Regexp(t, regexp.MustCompile(want+` transfers done, no deadlock; A=100 B=100 total=200 \(opened with 200\)`), text)

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	exists, _, err := c.Exists(context.Background(), root)
	require.NoError(t, err)
	assert.False(t, exists, "the example left %s behind", root)
}
