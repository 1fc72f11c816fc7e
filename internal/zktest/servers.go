package zktest

import (
	"net"
	"testing"
)

// SharedServers returns the client addresses of the shared cluster (see
// Shared), starting it on first use. It is for code that has no testing.TB,
// such as Example functions; it needs TestMain to call Main.
func SharedServers() ([]string, error) {
	c, err := sharedCluster()
	if err != nil {
		return nil, err
	}
	return c.Servers(), nil
}

// ClosedAddr returns an address of 127.0.0.1 where nothing listens, for a
// test of a refused connection: a port this process listened on and
// closed (which the system may, rarely, give out again).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: a closed port: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("zktest: a closed port: %v", err)
	}
	return addr
}
