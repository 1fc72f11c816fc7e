package zklock_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// gateHandler is a slog.Handler that takes every record and stops the
// first whose message is msg until gate is closed, after closing entered.
type gateHandler struct {
	msg     string
	entered chan struct{}
	gate    chan struct{}
	once    *sync.Once
}

func (g gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (g gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g gateHandler) WithGroup(string) slog.Handler            { return g }
func (g gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == g.msg {
		g.once.Do(func() {
			close(g.entered)
			<-g.gate
		})
	}
	return nil
}

// A hold that ends while its grant is being reported (here while the
// Client's logger records the grant, as a slow handler may) is still told
// in order: the Observer sees EventAcquired before the hold's EventLost.
func TestIntegration_ObserverGrantBeforeEndWhenLostDuringReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	log := newEventLog()
	g := gateHandler{msg: "zklock: acquired", entered: make(chan struct{}), gate: make(chan struct{}), once: &sync.Once{}}
	c := e.client(zklock.WithObserver(log.observe), zklock.WithLogger(slog.New(g)))
	m := e.mutex(c, "/lock", zklock.WithMaxHold(50*time.Millisecond))
	type result struct {
		h   *zklock.Hold
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := m.Lock(context.Background())
		done <- result{h, err}
	}()
	select {
	case <-g.entered: // the grant is being reported
	case <-time.After(10 * time.Second):
		t.Fatal("the grant was never logged")
	}
	// The maximum hold time ends the hold meanwhile: its node goes (a loss
	// reported at all is queued before the node's delete).
	waitParticipants(t, m, 0)
	close(g.gate)
	r := <-done
	require.NoError(t, r.err)
	require.ErrorIs(t, r.h.Release(), zklock.ErrMaxHold)
	lostEv := log.await(t, 10*time.Second, "lost", func(ev zklock.Event) bool { return ev.Kind == zklock.EventLost })
	log.await(t, 10*time.Second, "acquired", func(ev zklock.Event) bool { return ev.Kind == zklock.EventAcquired })
	var kinds []zklock.EventKind
	log.mu.Lock()
	for _, ev := range log.evs {
		if ev.ID == lostEv.ID {
			kinds = append(kinds, ev.Kind)
		}
	}
	log.mu.Unlock()
	require.Equal(t, []zklock.EventKind{zklock.EventAcquireStarted, zklock.EventAcquired, zklock.EventLost}, kinds, "the story's events, in order")
}
