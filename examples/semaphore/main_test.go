package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// Every caller is served, never more than the limit at once, and no lease
// is left behind.
func TestIntegration_Semaphore(t *testing.T) {
	text := exampleenv.RunT(t, run, semPath)
	assert.Equal(t, callers, strings.Count(text, " enters with lease lease-"))
	assert.Contains(t, text, "12 calls served; max concurrency = 3 ≤ limit 3; leases left: 0")
	for _, n := range []string{"4 inside", "5 inside"} {
		assert.NotContains(t, text, n)
	}
}
