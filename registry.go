package zklock

import "sync"

// This file is the process's registry of its open Clients, from which
// sessionHere tells a lock holder's session apart as this Client's,
// another Client's of this process, or another process's. registered
// (called by newClient, NewClient and Close) is its only writer.

// clients are the Clients of this process that are not closed, to tell
// whether a lock's holder is one of them.
var clients = struct {
	mu sync.Mutex
	m  map[*Client]struct{}
}{m: make(map[*Client]struct{})}

// registered adds c to clients, or removes it (on Close).
func registered(c *Client, live bool) {
	clients.mu.Lock()
	defer clients.mu.Unlock()
	if live {
		clients.m[c] = struct{}{}
	} else {
		delete(clients.m, c)
	}
}

// sessionHere reports whether session is c's own, or another Client's of
// this process.
func sessionHere(c *Client, session int64) (client, process bool) {
	if session == 0 {
		return false, false
	}
	if c.snapshot().session == session {
		return true, false
	}
	clients.mu.Lock()
	others := make([]*Client, 0, len(clients.m))
	for o := range clients.m {
		others = append(others, o)
	}
	clients.mu.Unlock()
	for _, o := range others {
		if o != c && o.snapshot().session == session {
			return false, true
		}
	}
	return false, false
}
