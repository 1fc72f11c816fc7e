package zksession

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
