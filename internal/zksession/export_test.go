package zksession

import (
	"net"
	"time"
)

// InFlight returns how many requests are written and await their
// replies, for tests that must cut a connection under them.
func (s *Session) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// Queued returns how many requests wait to be written, for tests that
// must queue one during a cut.
func (s *Session) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// WithResolver returns cfg with r as the default Dialer's resolver, for
// tests that must change what a name resolves to.
func WithResolver(cfg Config, r *net.Resolver) Config {
	cfg.resolver = r
	return cfg
}

// Pause is the pause after n > 0 rounds without success.
func Pause(n int) time.Duration { return pause(n) }

// PauseLimit is the longest pause after n > 0 rounds without success.
func PauseLimit(n int) time.Duration { return pauseLimit(n) }

// Reusable and MaxKept expose what a connection keeps of its buffers.
var Reusable = reusable

const MaxKept = maxKept
