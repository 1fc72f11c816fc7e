package zklock

import (
	"io"
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

// The check of a connect response's length: a ZooKeeper length passes,
// read whole or a byte at a time; another is refused with the bytes seen,
// once the length is known, and reported once; an error before the length
// is known is reported and returned.
func TestSocketHandshakeCheck(t *testing.T) {
	var reported []error
	s := &sockets{open: make(map[*socket]struct{}), failed: func(addr string, err error) {
		reported = append(reported, err)
	}}
	ok := &socket{s: s, addr: "zk:2181"}
	for _, b := range []byte{0, 0, 0, 37} {
		n, err := ok.check([]byte{b}, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	assert.True(t, ok.answered.Load())

	bad := &socket{s: s, addr: "web:80"}
	n, err := bad.check([]byte("HT"), nil)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = bad.check([]byte("TP"), nil)
	require.ErrorIs(t, err, errNotZooKeeper)
	assert.Zero(t, n, "go-zookeeper is not handed a length to allocate")
	assert.Equal(t, `web:80 answered, but not as ZooKeeper: its reply began "HTTP"`, err.Error())
	assert.False(t, bad.answered.Load())

	eof := &socket{s: s, addr: "gone:2181"}
	_, err = eof.check(nil, io.EOF)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, reported, 2)
	assert.EqualError(t, reported[1], "gone:2181 accepted the connection, then EOF before any ZooKeeper reply")
	assert.NotErrorIs(t, reported[1], errNotZooKeeper)
}
