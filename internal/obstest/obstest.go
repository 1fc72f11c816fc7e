// Package obstest drives the lock stories that the observability
// adapters' tests (zklockprom, zklockotel) count, on a real ZooKeeper
// from the public test kit.
package obstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

// Observed connects a Client to cluster whose events go to observe, and
// returns it with a channel that receives each event once observe has
// returned. The Client is closed when t ends.
func Observed(t testing.TB, cluster *zktest.Cluster, observe func(zklock.Event)) (*zklock.Client, <-chan zklock.Event) {
	t.Helper()
	events := make(chan zklock.Event, 1000)
	c, err := zklock.Connect(cluster.Servers(), zklock.WithObserver(func(ev zklock.Event) {
		observe(ev)
		events <- ev
	}))
	if err != nil {
		t.Fatalf("obstest: connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, events
}

// Until returns the next event of kind, skipping others, failing t after
// ten seconds.
func Until(t testing.TB, events <-chan zklock.Event, kind zklock.EventKind) zklock.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("obstest: no %v event", kind)
			return zklock.Event{}
		}
	}
}

// Outcomes tells four stories on a Mutex of c at path, each seen by the
// Observer before the next begins: a TryLock that finds the lock busy, a
// Lock that times out after 100ms, a hold released (whileHeld runs while
// it stands), and a hold lost to its node's deletion. It returns the
// released hold's EventAcquired.
func Outcomes(t testing.TB, cluster *zktest.Cluster, c *zklock.Client, events <-chan zklock.Event, path string, whileHeld func()) zklock.Event {
	t.Helper()
	bg := context.Background()
	other, err := zklock.Connect(cluster.Servers())
	must(t, err)
	defer other.Close()
	m, err := zklock.NewMutex(c, path)
	must(t, err)
	om, err := zklock.NewMutex(other, path)
	must(t, err)
	held, err := om.Lock(bg)
	must(t, err)
	if _, err := m.TryLock(bg); !errors.Is(err, zklock.ErrLocked) {
		t.Fatalf("obstest: TryLock of a held lock: %v", err)
	}
	Until(t, events, zklock.EventAcquireFailed)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	_, err = m.Lock(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("obstest: Lock of a held lock with a deadline: %v", err)
	}
	Until(t, events, zklock.EventAcquireFailed)
	must(t, held.Release())

	h, err := m.Lock(bg)
	must(t, err)
	granted := Until(t, events, zklock.EventAcquired)
	whileHeld()
	must(t, h.Release())
	Until(t, events, zklock.EventReleased)

	h, err = m.Lock(bg)
	must(t, err)
	Until(t, events, zklock.EventAcquired)
	must(t, other.Delete(bg, h.Path(), -1)) // an operator's delete, from another session
	Until(t, events, zklock.EventLost)
	if err := h.Release(); !errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("obstest: Release of a lost hold: %v", err)
	}
	return granted
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("obstest: %v", err)
	}
}
