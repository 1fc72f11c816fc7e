package zksession

import (
	"sync"

	"github.com/zklock/zklock/internal/zkwire"
)

// A State is a Session's state, as Config.OnState hears it.
type State int

// The states of a Session. StateConnected and StateDisconnected
// alternate; StateExpired, StateAuthFailed and StateClosed are terminal.
const (
	StateConnecting   State = iota // Dial has not yet connected
	StateConnected                 // a connection is up and the session valid
	StateDisconnected              // the connection broke; the session reconnects
	StateExpired                   // the session expired (terminal)
	StateAuthFailed                // the server refused the credentials (terminal)
	StateClosed                    // Close was called (terminal)
)

var stateNames = [...]string{"Connecting", "Connected", "Disconnected", "Expired", "AuthFailed", "Closed"}

// String returns the state's name ("Connected").
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(?)"
}

// terminal reports whether no state follows s.
func (s State) terminal() bool { return s >= StateExpired }

// keeperState is the Watcher.Event.KeeperState of s.
func (s State) keeperState() zkwire.KeeperState {
	switch s {
	case StateConnected:
		return zkwire.StateSyncConnected
	case StateDisconnected:
		return zkwire.StateDisconnected
	case StateExpired:
		return zkwire.StateExpired
	case StateAuthFailed:
		return zkwire.StateAuthFailed
	case StateClosed:
		return zkwire.StateClosed
	}
	return zkwire.StateUnknown
}

// announce tells OnEvent, now (on the reader goroutine, the only one
// that announces), and OnState, on its own goroutine, that the session
// is in state st. One goroutine announcing keeps the two in one order.
func (s *Session) announce(st State) {
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(Event{Type: zkwire.EventNone, State: st.keeperState()})
	}
	s.notify.post(st)
}

// notifier calls a callback with states in order, on one goroutine,
// so that the reader never waits for the callback. mu guards q.
type notifier struct {
	fn   func(State)
	mu   sync.Mutex
	q    []State
	wake chan struct{}
}

func newNotifier(fn func(State)) *notifier {
	return &notifier{fn: fn, wake: make(chan struct{}, 1)}
}

// post queues st for the callback, without blocking.
func (n *notifier) post(st State) {
	if n.fn == nil {
		return
	}
	n.mu.Lock()
	n.q = append(n.q, st)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run calls the callback until it has heard a terminal state.
func (n *notifier) run() {
	for range n.wake {
		n.mu.Lock()
		q := n.q
		n.q = nil
		n.mu.Unlock()
		for _, st := range q {
			n.fn(st)
			if st.terminal() {
				return
			}
		}
	}
}
