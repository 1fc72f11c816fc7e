package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// Each node leads once, never two at once.
func TestIntegration_Election(t *testing.T) {
	text := exampleenv.RunT(t, run, "")
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		assert.Equal(t, 1, strings.Count(text, name+" leads"), name)
	}
	assert.Contains(t, text, "done: three nodes led in turn, one at a time")
	conn := zktest.ConnectT(t, zktest.Shared(t).Servers())
	zktest.WaitNoEphemerals(t, conn, electionPath, 5*time.Second)
}
