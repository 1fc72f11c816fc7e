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

// Each session holds the lock three times, and never both at once.
func TestIntegration_Mutex(t *testing.T) {
	text := exampleenv.RunT(t, run, "")
	assert.Equal(t, 3, strings.Count(text, "alice holds the lock"))
	assert.Equal(t, 3, strings.Count(text, "bob   holds the lock"))
	assert.Contains(t, text, "done: the two sessions took turns, never both inside")
	conn := zktest.ConnectT(t, zktest.Shared(t).Servers())
	zktest.WaitNoEphemerals(t, conn, "/examples/mutex", 5*time.Second)
}
