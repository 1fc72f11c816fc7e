package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The writer reads back each version it wrote after downgrading, and no
// reader sees keys that differ; nothing is left in ZooKeeper.
func TestIntegration_RWLock(t *testing.T) {
	text := exampleenv.RunT(t, run, root)
	for v := 1; v <= versions; v++ {
		s := strconv.Itoa(v)
		assert.Contains(t, text, "writer: wrote v"+s+" under the write lock, downgraded, read back a=v"+s+" b=v"+s+"\n")
	}
	m := regexp.MustCompile(`readers: 4 sessions made (\d+) reads; 0 saw a half-written config`).FindStringSubmatch(text)
	require.NotNil(t, m, "summary line")
	n, _ := strconv.Atoi(m[1])
	assert.Positive(t, n)
}
