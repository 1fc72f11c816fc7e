package zksession

// InFlight returns how many requests are written and await their
// replies, for tests that must cut a connection under them.
func (s *Session) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}
