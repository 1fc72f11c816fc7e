package zklock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// NewSyncLocker: goroutines that share the sync.Locker exclude each
// other; Unlock with nothing locked panics, as sync.Mutex's does.
func TestIntegration_SyncLocker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/sync")
	var l sync.Locker = zklock.NewSyncLocker(m)

	var inside, most int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				l.Lock()
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				mu.Lock()
				inside--
				mu.Unlock()
				l.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	await(t, done, 30*time.Second)
	assert.Equal(t, 1, most, "never two inside")
	assert.False(t, m.IsAcquiredInThisProcess())
	assert.Empty(t, e.children(e.root+"/sync"))

	r := catchPanic(l.Unlock)
	require.NotNil(t, r, "Unlock of an unlocked Locker panics")
	assert.Contains(t, r, "unlock of unlocked")

	// A closed Client cannot be locked: Lock panics, it cannot return.
	c := e.client()
	closed := zklock.NewSyncLocker(e.mutex(c, "/sync2"))
	c.Close()
	r = catchPanic(closed.Lock)
	require.NotNil(t, r)
	assert.Contains(t, r, "client closed")
}
