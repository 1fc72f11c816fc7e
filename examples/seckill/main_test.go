package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The demo oversells without a lock, and sells exactly the stock with the
// Mutex and with the Semaphore.
func TestIntegration_Seckill(t *testing.T) {
	servers := zktest.Shared(t).Servers()
	var out bytes.Buffer
	cfg := config{stock: 20, buyers: 200, sessions: 4, leases: 3}
	require.NoError(t, run(context.Background(), &out, servers, cfg))
	text := out.String()
	t.Log(text)
	assert.Regexp(t, `no lock: OVERSOLD: \d+ items sold of 20, stock -\d+`, text)
	assert.Contains(t, text, "mutex: correct: 20 items sold of 20, stock 0")
	assert.Contains(t, text, "semaphore: correct: 20 items sold of 20, stock 0")
	assert.Contains(t, text, "200/200 buyers", "the progress bar reaches the end")
}

func TestRunRefusesBadSizes(t *testing.T) {
	err := run(context.Background(), &bytes.Buffer{}, []string{"127.0.0.1:1"}, config{})
	require.Error(t, err)
}
