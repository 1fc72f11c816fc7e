package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// The demo oversells without a lock, and sells exactly the stock with the
// Mutex and with the Semaphore.
func TestIntegration_Seckill(t *testing.T) {
	servers := zktest.Shared(t).Servers() // a real ZooKeeper server, closed by zktest.Main
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	cfg := config{stock: 20, buyers: 200, sessions: 4, leases: 3}
	require.NoError(t, run(context.Background(), &out, servers, cfg))
	text := out.String()
	t.Log(text)
	assert.Regexp(t, `no lock: OVERSOLD: \d+ items sold of 20, stock -\d+`, text)
	assert.Contains(t, text, "mutex: correct: 20 items sold of 20, stock 0")
	assert.Contains(t, text, "semaphore: correct: 20 items sold of 20, stock 0")
	assert.Contains(t, text, "200/200 buyers", "the progress reaches the end")
	assert.NotContains(t, text, "\r", "no bar redrawn out of a terminal")
}

func TestRunRefusesBadSizes(t *testing.T) {
	err := run(context.Background(), &bytes.Buffer{}, []string{"127.0.0.1:1"}, config{})
	require.Error(t, err)
}

// Out of a terminal, the progress is one line per phase, without the
// carriage returns that redraw a bar on a terminal.
func TestProgressOutOfTerminal(t *testing.T) {
	var out bytes.Buffer
	var done, sold atomic.Int64
	finish := startProgress(&out, "mutex", 200, &done, &sold)
	done.Store(200)
	sold.Store(20)
	finish()
	assert.Equal(t, "  mutex       200/200 buyers,   20 sold\n", out.String())
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, isTerminal(&bytes.Buffer{}))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w), "a pipe")
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f), "a file")
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	assert.True(t, isTerminal(null), "a character device")
}
