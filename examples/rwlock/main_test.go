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

// The writer reads back each version it wrote after downgrading, and no
// reader sees keys that differ; nothing is left in ZooKeeper.
func TestIntegration_RWLock(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	require.NoError(t, err)
	text := out.String()
	for v := 1; v <= versions; v++ {
		s := strconv.Itoa(v)
		assert.Contains(t, text, "writer: wrote v"+s+" under the write lock, downgraded, read back a=v"+s+" b=v"+s+"\n")
	}
	m := regexp.MustCompile(`readers: 4 sessions made (\d+) reads; 0 saw a half-written config`).FindStringSubmatch(text)
	require.NotNil(t, m, "summary line")
	n, _ := strconv.Atoi(m[1])
	assert.Positive(t, n)

	c, err := zklock.Connect(servers)
	require.NoError(t, err)
	defer c.Close()
	exists, _, err := c.Exists(context.Background(), root)
	require.NoError(t, err)
	assert.False(t, exists, "the example left %s behind", root)
}
