package zklock

import (
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pinned go-zookeeper has the field that sockets.wrap reaches into:
// a version without it would quietly lose the ordering of reconnects, so
// an upgrade that renames it fails here. Dialing then goes through the
// Client's sockets, with the caller's dialer underneath.
func TestSocketsWrapDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var dialed []string
	caller := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dialed = append(dialed, address)
		return net.DialTimeout(network, address, timeout)
	}
	zc := new(zk.Conn)
	zk.WithDialer(caller)(zc)
	s := &sockets{open: make(map[*socket]struct{})}
	require.True(t, s.wrap(zc), "go-zookeeper's dialer field is where wrap looks")
	require.True(t, s.wrapped)

	// The Conn's dialer is now s's: call it as go-zookeeper does.
	conn, err := (*dialerOf(zc))("tcp", ln.Addr().String(), time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.IsType(t, &socket{}, conn)
	assert.Equal(t, []string{ln.Addr().String()}, dialed, "the caller's dialer dialed")
	assert.Len(t, s.open, 1, "the socket is kept, for Close")
}
