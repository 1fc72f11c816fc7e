package zksession_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/leakcheck"
	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
	"github.com/zklock/zklock/zktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// wait bounds every wait of the tests.
const wait = 20 * time.Second

// states records what OnState hears.
type states struct {
	mu   sync.Mutex
	seen []zksession.State
	ch   chan zksession.State
}

func newStates() *states { return &states{ch: make(chan zksession.State, 1000)} }

func (s *states) on(st zksession.State) {
	s.mu.Lock()
	s.seen = append(s.seen, st)
	s.mu.Unlock()
	s.ch <- st
}

// await waits until OnState hears want.
func (s *states) await(t *testing.T, want zksession.State) {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case st := <-s.ch:
			if st == want {
				return
			}
		case <-timeout:
			t.Fatalf("state %v not heard in %v", want, wait)
		}
	}
}

// open dials a session on the shared server, through link if not nil,
// with session timeout timeout, closed when the test ends.
func open(t *testing.T, link *zktest.Link, timeout time.Duration, st *states) *zksession.Session {
	t.Helper()
	cfg := zksession.Config{SessionTimeout: timeout}
	if st != nil {
		cfg.OnState = st.on
	}
	return openWith(t, link, cfg)
}

// openWith dials a session with cfg on the shared server, through link
// if not nil, closed when the test ends.
func openWith(t *testing.T, link *zktest.Link, cfg zksession.Config) *zksession.Session {
	t.Helper()
	if link != nil {
		cfg.Dialer = link.Dial
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := zksession.Dial(ctx, zktest.Shared(t).Servers(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ctx returns a context bounded by wait, cancelled when the test ends.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return c
}

// mustCreate creates a persistent node.
func mustCreate(t *testing.T, s *zksession.Session, path string, data []byte) {
	t.Helper()
	if _, err := s.Create(ctx(t), path, data, zksession.OpenACL, zkwire.ModePersistent); err != nil {
		t.Fatal(err)
	}
}

// event waits for w's event.
func event(t *testing.T, w *zksession.Watch) zksession.Event {
	t.Helper()
	select {
	case ev := <-w.C:
		return ev
	case <-time.After(wait):
		t.Fatalf("watch on %s did not fire in %v", w.Path(), wait)
		return zksession.Event{}
	}
}
