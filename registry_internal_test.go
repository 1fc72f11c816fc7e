package zklock

import (
	"io"
	"log/slog"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// registeredWith counts the Clients in the process's registry (see
// sessionHere) whose logger is log.
func registeredWith(log *slog.Logger) int {
	clients.mu.Lock()
	defer clients.mu.Unlock()
	n := 0
	for c := range clients.m {
		if c.log == log {
			n++
		}
	}
	return n
}

// A Connect that fails before it has a connection (no server name
// resolves) returns no Client, so nobody can Close it: it must leave
// nothing in the registry of the process's Clients, which would otherwise
// grow with every failed attempt of a retry loop.
func TestConnectFailedLeavesNoClientRegistered(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range 3 {
		c, err := Connect([]string{"zklock-no-such-host.invalid:2181"}, WithLogger(log))
		require.ErrorIs(t, err, zk.ErrNoServer)
		require.Nil(t, c)
	}
	require.Zero(t, registeredWith(log), "Clients a failed Connect never returned stay registered")
}

// A Client that NewClient returns closed (no connection) is registered
// until its Close, as any.
func TestNewClientClosedAtOnceNotRegistered(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := NewClient(nil, nil, WithLogger(log))
	require.Zero(t, registeredWith(log), "a Client closed from the start is registered")
	require.NoError(t, c.Close())
}
